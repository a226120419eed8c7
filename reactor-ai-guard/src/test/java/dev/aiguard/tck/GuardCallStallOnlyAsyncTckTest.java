package dev.aiguard.tck;

/**
 * Verifies the guard's call form, {@code AiGuard.of(policy).call(request, r -> upstream)}, under a
 * stall-only policy, over an upstream subscribed and requested on {@code Schedulers.parallel()}
 * ({@code subscribeOn}).
 */
public class GuardCallStallOnlyAsyncTckTest extends GuardVerification {

	public GuardCallStallOnlyAsyncTckTest() {
		super(Form.CALL, Shape.STALL_ONLY, Upstream.SUBSCRIBE_ON_PARALLEL);
	}
}
