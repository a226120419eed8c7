package dev.aiguard.metrics;

import java.time.Duration;
import java.util.Objects;

import dev.aiguard.core.Outcome;
import dev.aiguard.core.Priority;
import dev.aiguard.core.Source;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import org.jspecify.annotations.Nullable;
import reactor.util.context.ContextView;

/**
 * One Micrometer {@link Observation} named {@value #NAME} per guarded request: started when the
 * request is subscribed (as a child of the observation in the subscriber's Reactor Context, so the
 * span nests under the HTTP request's), stopped when it ends. Its low-cardinality keys are
 * {@code policy}, {@code priority}, {@code outcome} and {@code source}; there is no high-cardinality
 * key, and no prompt or answer text goes into a key or an event. What happened in between is
 * recorded as events: {@code aiguard.admission.queued}, {@code aiguard.admitted},
 * {@code aiguard.admission.refused}, {@code aiguard.breaker.permitted},
 * {@code aiguard.breaker.rejected}, {@code aiguard.attempt.started}, {@code aiguard.attempt.ended},
 * {@code aiguard.backoff}, {@code aiguard.retry}, {@code aiguard.truncated},
 * {@code aiguard.continued} and {@code aiguard.source} (a fallback step answers); the event's
 * contextual name carries the detail: the attempt number and outcome, the delay, the step.
 *
 * <pre>{@code
 * GuardPolicy policy = GuardPolicy.builder("chat")
 *     .observer(new ObservationGuardObserver(observationRegistry))
 *     .build();
 * }</pre>
 */
public final class ObservationGuardObserver implements GuardObserver {

	/** The observation's name; with tracing on, the span's name is {@code aiguard <policy>}. */
	public static final String NAME = "aiguard.request";

	static final Observation.Event QUEUED = Observation.Event.of("aiguard.admission.queued");
	static final Observation.Event ADMITTED = Observation.Event.of("aiguard.admitted");
	static final Observation.Event PERMITTED = Observation.Event.of("aiguard.breaker.permitted");
	static final Observation.Event REJECTED = Observation.Event.of("aiguard.breaker.rejected");
	static final Observation.Event CONTINUED = Observation.Event.of("aiguard.continued");

	/**
	 * Where Reactor code keeps the current observation in its Context: Micrometer's
	 * {@code ObservationThreadLocalAccessor.KEY}, spelled out so that context-propagation need not be
	 * on the class path.
	 */
	static final String CONTEXT_KEY = "micrometer.observation";

	private final ObservationRegistry registry;

	/** @param registry where the observations go */
	public ObservationGuardObserver(ObservationRegistry registry) {
		this.registry = Objects.requireNonNull(registry, "registry");
	}

	@Override
	public RequestObserver requestStarted(String policy, Priority priority, ContextView context) {
		if (registry.isNoop()) {
			return RequestObserver.NOOP;
		}
		Observation parent = context.getOrDefault(CONTEXT_KEY, null);
		Observation observation = Observation.createNotStarted(NAME, registry)
			.contextualName("aiguard " + policy)
			.lowCardinalityKeyValue("policy", policy)
			.lowCardinalityKeyValue("priority", priority.name())
			.parentObservation(parent)
			.start();
		return new Request(observation);
	}

	private static final class Request implements RequestObserver {

		private final Observation observation;

		Request(Observation observation) {
			this.observation = observation;
		}

		@Override
		public void admissionQueued() {
			observation.event(QUEUED);
		}

		@Override
		public void admitted() {
			observation.event(ADMITTED);
		}

		@Override
		public void admissionRefused(Throwable reason) {
			observation.event(Observation.Event.of("aiguard.admission.refused", reason.getClass().getSimpleName()));
		}

		@Override
		public void breakerDecided(boolean permitted) {
			observation.event(permitted ? PERMITTED : REJECTED);
		}

		@Override
		public void attemptStarted(int number) {
			observation.event(Observation.Event.of("aiguard.attempt.started", "attempt " + number));
		}

		@Override
		public void attemptEnded(int number, Outcome outcome, @Nullable Throwable error) {
			observation.event(Observation.Event.of("aiguard.attempt.ended", "attempt " + number + " " + outcome));
		}

		@Override
		public void backoff(Duration delay) {
			observation.event(Observation.Event.of("aiguard.backoff", "backoff " + delay.toMillis() + " ms"));
		}

		@Override
		public void retried(String reason) {
			observation.event(Observation.Event.of("aiguard.retry", "retry after " + reason));
		}

		@Override
		public void truncated(int tokensDropped) {
			observation.event(Observation.Event.of("aiguard.truncated", "prompt truncated by " + tokensDropped + " tokens"));
		}

		@Override
		public void continued() {
			observation.event(CONTINUED);
		}

		@Override
		public void sourceChosen(Source source) {
			observation.event(Observation.Event.of("aiguard.source", "source " + source));
		}

		@Override
		public void ended(Outcome outcome, Source source, @Nullable Throwable error) {
			observation.lowCardinalityKeyValue("outcome", outcome.name());
			observation.lowCardinalityKeyValue("source", source.name());
			if (error != null) {
				observation.error(error);
			}
			observation.stop();
		}
	}
}
