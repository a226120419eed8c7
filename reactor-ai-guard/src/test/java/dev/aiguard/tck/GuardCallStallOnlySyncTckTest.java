package dev.aiguard.tck;

/**
 * Verifies the guard's call form, {@code AiGuard.of(policy).call(request, r -> upstream)}, under a
 * stall-only policy, over a synchronous upstream ({@code Flux.range}).
 */
public class GuardCallStallOnlySyncTckTest extends GuardVerification {

	public GuardCallStallOnlySyncTckTest() {
		super(Form.CALL, Shape.STALL_ONLY, Upstream.SYNC);
	}
}
