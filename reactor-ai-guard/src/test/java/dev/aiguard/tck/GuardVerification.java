package dev.aiguard.tck;

import java.time.Duration;

import dev.aiguard.AiGuard;
import dev.aiguard.core.ChunkInspector;
import dev.aiguard.GuardPolicy;
import dev.aiguard.admission.PriorityLanes;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.fallback.Fallback;
import dev.aiguard.fallback.FallbackChain;
import dev.aiguard.provider.ProviderClientException;
import dev.aiguard.retry.RetryBudget;
import dev.aiguard.retry.RetryRules;
import org.reactivestreams.Publisher;
import org.reactivestreams.tck.PublisherVerification;
import org.testng.annotations.AfterClass;
import org.testng.annotations.Test;
import reactor.core.publisher.Flux;
import reactor.core.scheduler.Schedulers;

/**
 * The guard's publisher, verified against the Reactive Streams rules in one of its forms, under
 * one of two policies, over a synchronous or an asynchronous upstream. Each concrete class picks
 * one combination.
 *
 * <p>Every chunk of the upstream reaches the subscriber: {@link Tck#answer(long)} ends with a
 * finish reason, so even the policy that requires a terminal marker sees a complete answer, and
 * no deadline is short enough to fire. The failing publisher's upstream errors at once with a
 * failure the policy neither retries nor sends down the fallback ladder, so the guard must pass
 * it on after {@code onSubscribe} without any demand.
 */
abstract class GuardVerification extends PublisherVerification<ChatChunk> {

	/** How the guard is applied. */
	enum Form {
		/** {@code upstream.transform(AiGuard.of(policy, inspector))} */
		TRANSFORM,
		/** {@code AiGuard.of(policy).call(request, r -> upstream)} */
		CALL
	}

	/** What the policy holds. */
	enum Shape {
		/** Deadlines only, terminal marker not required: the empty answer is a valid answer. */
		STALL_ONLY,
		/**
		 * Breaker, lanes, retry with a retry budget, fallback ladder and deadlines with the terminal
		 * marker required. The default priority's lane has no permits of its own, so every admission
		 * goes through the acquire Mono and borrows from the batch lane.
		 */
		FULL
	}

	/** Where the upstream emits. */
	enum Upstream {
		SYNC, PUBLISH_ON_PARALLEL, SUBSCRIBE_ON_PARALLEL
	}

	private final Form form;
	private final Shape shape;
	private final Upstream upstream;
	private final PriorityLanes lanes;
	private final AiGuard<ChatChunk> guard;

	GuardVerification(Form form, Shape shape, Upstream upstream) {
		super(Tck.environment(), Tck.GC_MILLIS);
		this.form = form;
		this.shape = shape;
		this.upstream = upstream;
		GuardPolicy.Builder policy = GuardPolicy.builder("tck-" + shape.name().toLowerCase().replace('_', '-'));
		if (shape == Shape.STALL_ONLY) {
			this.lanes = null;
			policy.stall(Tck.GENEROUS_DEADLINES.requireTerminal(false));
		}
		else {
			this.lanes = LanesTck.borrowingP1("tck-guard");
			policy.stall(Tck.GENEROUS_DEADLINES)
					.breaker(Tck.patientBreaker("tck"))
					.lanes(lanes)
					.retry(RetryRules.backoff(3, Duration.ofMillis(1)).jitter(0))
					.retryBudget(RetryBudget.of(0.2, 10, Duration.ofSeconds(10)))
					.fallback(FallbackChain.<ChatChunk>builder()
							.step(Fallback.staticText("The assistant is busy, please try again shortly."))
							.build());
		}
		this.guard = form == Form.TRANSFORM ? AiGuard.of(policy.build(), ChatChunk.inspector())
				: AiGuard.of(policy.build());
	}

	@AfterClass(alwaysRun = true)
	public void disposeLanes() {
		if (lanes != null) {
			lanes.dispose();
		}
	}

	/**
	 * With {@link Shape#FULL} an empty upstream is no empty answer: it has no finish reason, so the
	 * attempt ends INCOMPLETE, is retried, and the fallback ladder answers. The spec 1.9 checks that
	 * ask for zero elements only look at {@code onSubscribe} and run all the same.
	 */
	@Override
	public Publisher<ChatChunk> createPublisher(long elements) {
		return guarded(emitting(Tck.answer(elements)));
	}

	@Override
	@Test
	public void optional_spec105_emptyStreamMustTerminateBySignallingOnComplete() throws Throwable {
		if (shape == Shape.FULL) {
			notVerified("an empty answer carries no finish reason: a policy that requires the terminal marker fails"
					+ " it as INCOMPLETE (then retries and answers from the fallback ladder), by design");
		}
		super.optional_spec105_emptyStreamMustTerminateBySignallingOnComplete();
	}

	@Override
	public Publisher<ChatChunk> createFailedPublisher() {
		// a 400: not retryable, ignored by the breaker, and CLIENT_ERROR is not a default fallback trigger
		return guarded(Flux.error(new ProviderClientException("tck", 400, "invalid_request_error", null,
				"refused by the TCK's failing upstream")));
	}

	private Flux<ChatChunk> emitting(Flux<ChatChunk> answer) {
		switch (upstream) {
			case PUBLISH_ON_PARALLEL:
				return answer.publishOn(Schedulers.parallel());
			case SUBSCRIBE_ON_PARALLEL:
				return answer.subscribeOn(Schedulers.parallel());
			default:
				return answer;
		}
	}

	private Flux<ChatChunk> guarded(Flux<ChatChunk> source) {
		return form == Form.TRANSFORM ? source.transform(guard) : guard.call(Tck.REQUEST, request -> source);
	}
}
