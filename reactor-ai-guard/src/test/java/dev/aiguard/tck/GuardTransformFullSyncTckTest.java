package dev.aiguard.tck;

/**
 * Verifies the guard's transform form, {@code upstream.transform(AiGuard.of(policy, inspector))},
 * under the full policy (breaker, lanes, retry, retry budget, fallback ladder, deadlines), over a
 * synchronous upstream ({@code Flux.range}).
 */
public class GuardTransformFullSyncTckTest extends GuardVerification {

	public GuardTransformFullSyncTckTest() {
		super(Form.TRANSFORM, Shape.FULL, Upstream.SYNC);
	}
}
