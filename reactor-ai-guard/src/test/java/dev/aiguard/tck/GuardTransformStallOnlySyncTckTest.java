package dev.aiguard.tck;

/**
 * Verifies the guard's transform form, {@code upstream.transform(AiGuard.of(policy, inspector))},
 * under a stall-only policy, over a synchronous upstream ({@code Flux.range}).
 */
public class GuardTransformStallOnlySyncTckTest extends GuardVerification {

	public GuardTransformStallOnlySyncTckTest() {
		super(Form.TRANSFORM, Shape.STALL_ONLY, Upstream.SYNC);
	}
}
