package dev.aiguard.metrics;

import dev.aiguard.core.Priority;
import reactor.util.context.ContextView;

/** {@link GuardObserver#noop()}: ignores every request; the guard skips it without a call. */
final class NoopGuardObserver implements GuardObserver {

	static final NoopGuardObserver INSTANCE = new NoopGuardObserver();

	private NoopGuardObserver() {
	}

	@Override
	public RequestObserver requestStarted(String policy, Priority priority, ContextView context) {
		return RequestObserver.NOOP;
	}
}
