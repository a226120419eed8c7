package dev.aiguard.tck;

/**
 * Verifies the guard's transform form, {@code upstream.transform(AiGuard.of(policy, inspector))},
 * under a stall-only policy, over an upstream that emits on {@code Schedulers.parallel()} ({@code
 * publishOn}).
 */
public class GuardTransformStallOnlyAsyncTckTest extends GuardVerification {

	public GuardTransformStallOnlyAsyncTckTest() {
		super(Form.TRANSFORM, Shape.STALL_ONLY, Upstream.PUBLISH_ON_PARALLEL);
	}
}
