package dev.aiguard.tck;

/**
 * Verifies the guard's call form, {@code AiGuard.of(policy).call(request, r -> upstream)}, under
 * the full policy (breaker, lanes, retry, retry budget, fallback ladder, deadlines), over a
 * synchronous upstream ({@code Flux.range}).
 */
public class GuardCallFullSyncTckTest extends GuardVerification {

	public GuardCallFullSyncTckTest() {
		super(Form.CALL, Shape.FULL, Upstream.SYNC);
	}
}
