package dev.aiguard.tck;

/**
 * Verifies the guard's call form, {@code AiGuard.of(policy).call(request, r -> upstream)}, under
 * the full policy (breaker, lanes, retry, retry budget, fallback ladder, deadlines), over an
 * upstream subscribed and requested on {@code Schedulers.parallel()} ({@code subscribeOn}).
 */
public class GuardCallFullAsyncTckTest extends GuardVerification {

	public GuardCallFullAsyncTckTest() {
		super(Form.CALL, Shape.FULL, Upstream.SUBSCRIBE_ON_PARALLEL);
	}
}
