package dev.aiguard.tck;

/**
 * Verifies the guard's transform form, {@code upstream.transform(AiGuard.of(policy, inspector))},
 * under the full policy (breaker, lanes, retry, retry budget, fallback ladder, deadlines), over an
 * upstream that emits on {@code Schedulers.parallel()} ({@code publishOn}).
 */
public class GuardTransformFullAsyncTckTest extends GuardVerification {

	public GuardTransformFullAsyncTckTest() {
		super(Form.TRANSFORM, Shape.FULL, Upstream.PUBLISH_ON_PARALLEL);
	}
}
