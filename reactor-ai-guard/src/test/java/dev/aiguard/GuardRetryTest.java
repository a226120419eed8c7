package dev.aiguard;

import java.io.IOException;
import java.net.ConnectException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import java.util.stream.Stream;

import dev.aiguard.admission.LanePermit;
import dev.aiguard.admission.LaneSpec;
import dev.aiguard.admission.PriorityLanes;
import dev.aiguard.breaker.BreakerConfig;
import dev.aiguard.breaker.BreakerPermit;
import dev.aiguard.breaker.BreakerState;
import dev.aiguard.breaker.CircuitBreaker;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.core.Source;
import dev.aiguard.provider.ProviderConnectionException;
import dev.aiguard.provider.ProviderErrors;
import dev.aiguard.provider.ProviderException;
import dev.aiguard.provider.RateLimitedException;
import dev.aiguard.retry.PartialStreamException;
import dev.aiguard.retry.RetryBudget;
import dev.aiguard.retry.RetryRules;
import dev.aiguard.core.StallPhase;
import dev.aiguard.stall.StallSpec;
import dev.aiguard.stall.watch.StallWatch;
import dev.aiguard.testing.Policies;
import dev.aiguard.testing.RecordingMetrics;
import dev.aiguard.testing.Reports;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import reactor.core.publisher.Flux;
import reactor.test.StepVerifier;
import reactor.test.scheduler.VirtualTimeScheduler;
import reactor.test.subscriber.TestSubscriber;
import reactor.test.util.RaceTestUtils;

import static org.assertj.core.api.Assertions.assertThat;
import dev.aiguard.core.Priority;
import dev.aiguard.core.Outcome;

/**
 * Retries through the composed guard: when they happen (only retryable failures, only before the
 * first token), when they are sent (the backoff of {@link RetryRules#delayBefore}, a server's
 * {@code Retry-After}), how a shared {@link RetryBudget} bounds a retry storm, and that a cancel
 * during the backoff leaves nothing behind. All time is virtual.
 */
class GuardRetryTest {

	static final Duration CONFIRM = Duration.ofNanos(StallWatch.CONFIRM_DELAY_NANOS);

	final Reports reports = new Reports();
	final RecordingMetrics metrics = new RecordingMetrics();
	final List<PriorityLanes> lanesBuilt = new ArrayList<>();

	@AfterEach
	void disposeLanes() {
		lanesBuilt.forEach(PriorityLanes::dispose);
	}

	GuardPolicy.Builder policy(VirtualTimeScheduler vts) {
		return Policies.onVirtualTime("it-retry", vts, reports, metrics);
	}

	static Flux<ChatChunk> answer(String... tokens) {
		return Flux.fromArray(tokens).map(ChatChunk::token)
				.concatWith(Flux.just(ChatChunk.finish("stop"), ChatChunk.done()));
	}

	static ProviderException http(int status) {
		return ProviderErrors.fromHttp("openai", status, header -> null, "");
	}

	static ProviderException http(int status, Map<String, String> headers, String body) {
		return ProviderErrors.fromHttp("openai", status, headers::get, body);
	}

	/** An upstream whose n-th subscription (0-based) gets {@code attempts[n]}; records when each came. */
	static final class ScriptedUpstream {

		final VirtualTimeScheduler vts;
		final List<Supplier<Flux<ChatChunk>>> attempts;
		final List<Long> subscribedAtMillis = new CopyOnWriteArrayList<>();

		@SafeVarargs
		ScriptedUpstream(VirtualTimeScheduler vts, Supplier<Flux<ChatChunk>>... attempts) {
			this.vts = vts;
			this.attempts = List.of(attempts);
		}

		Flux<ChatChunk> flux() {
			return Flux.defer(() -> {
				int n = subscribedAtMillis.size();
				subscribedAtMillis.add(vts.now(TimeUnit.MILLISECONDS));
				return attempts.get(Math.min(n, attempts.size() - 1)).get();
			});
		}

		int subscriptions() {
			return subscribedAtMillis.size();
		}
	}

	// ---- backoff ----

	@Test
	void retriesWaitExactlyTheJitteredBackoffOfDelayBefore() {
		RetryRules spec = RetryRules.backoff(4, Duration.ofMillis(500)).random(() -> 0.5);
		ProviderException unavailable = http(503);
		Duration d1 = spec.delayBefore(1, unavailable);
		Duration d2 = spec.delayBefore(2, unavailable);
		Duration d3 = spec.delayBefore(3, unavailable);
		// full jitter around 0.5 s, 1 s, 2 s, drawn at the middle of each window, floored at 0.5 s
		assertThat(List.of(d1, d2, d3)).containsExactly(Duration.ofMillis(750), Duration.ofMillis(1250),
				Duration.ofMillis(2250));
		ScriptedUpstream[] upstream = new ScriptedUpstream[1];

		StepVerifier.withVirtualTime(() -> {
					VirtualTimeScheduler vts = VirtualTimeScheduler.get();
					upstream[0] = new ScriptedUpstream(vts, () -> Flux.error(unavailable), () -> Flux.error(unavailable),
							() -> Flux.error(unavailable), () -> answer("ok"));
					return upstream[0].flux().transform(AiGuard.of(policy(vts).retry(spec).build()));
				})
				.expectSubscription()
				.then(() -> assertThat(upstream[0].subscriptions()).isEqualTo(1))
				.thenAwait(d1.minusNanos(1))
				.then(() -> assertThat(upstream[0].subscriptions()).as("not a nanosecond early").isEqualTo(1))
				.thenAwait(Duration.ofNanos(1))
				.then(() -> assertThat(upstream[0].subscriptions()).isEqualTo(2))
				.thenAwait(d2.minusNanos(1))
				.then(() -> assertThat(upstream[0].subscriptions()).isEqualTo(2))
				.thenAwait(Duration.ofNanos(1))
				.then(() -> assertThat(upstream[0].subscriptions()).isEqualTo(3))
				.thenAwait(d3)
				.expectNext(ChatChunk.token("ok"), ChatChunk.finish("stop"), ChatChunk.done())
				.verifyComplete();

		assertThat(upstream[0].subscribedAtMillis).containsExactly(0L, d1.toMillis(), d1.plus(d2).toMillis(),
				d1.plus(d2).plus(d3).toMillis());
		GuardReport report = reports.get(0);
		assertThat(report.outcome()).isEqualTo(Outcome.SUCCESS);
		assertThat(report.attempts()).extracting(GuardReport.Attempt::outcome)
				.containsExactly(Outcome.FAILURE, Outcome.FAILURE, Outcome.FAILURE, Outcome.SUCCESS);
		assertThat(report.timeToFirstToken()).isEqualTo(d1.plus(d2).plus(d3));
		assertThat(metrics.retried()).containsExactly("ProviderServerException", "ProviderServerException",
				"ProviderServerException");
	}

	@Test
	void withoutJitterTheBackoffIsExactlyExponential() {
		RetryRules spec = RetryRules.backoff(4, Duration.ofMillis(500)).jitter(0);
		ScriptedUpstream[] upstream = new ScriptedUpstream[1];

		StepVerifier.withVirtualTime(() -> {
					VirtualTimeScheduler vts = VirtualTimeScheduler.get();
					upstream[0] = new ScriptedUpstream(vts, () -> Flux.error(new ConnectException("refused")),
							() -> Flux.error(new ConnectException("refused")),
							() -> Flux.error(new ConnectException("refused")), () -> answer("ok"));
					return upstream[0].flux().transform(AiGuard.of(policy(vts).retry(spec).build()));
				})
				.thenAwait(Duration.ofSeconds(10))
				.expectNextCount(3)
				.verifyComplete();

		// 0.5 s, 1 s, 2 s after the failures, which are immediate
		assertThat(upstream[0].subscribedAtMillis).containsExactly(0L, 500L, 1500L, 3500L);
	}

	// ---- Retry-After ----

	static final String RATE_LIMIT_BODY = "{\"error\":{\"message\":\"Rate limit reached for requests\","
			+ "\"type\":\"requests\",\"param\":null,\"code\":\"rate_limit_exceeded\"}}";

	static Stream<Arguments> serverWaits() {
		return Stream.of(
				Arguments.of("retry-after in seconds, longer than maxBackoff", Map.of("retry-after", "7"),
						Duration.ofSeconds(60), Duration.ofSeconds(7)),
				Arguments.of("retry-after-ms wins over retry-after", Map.of("retry-after-ms", "1500",
						"retry-after", "9"), Duration.ofSeconds(60), Duration.ofMillis(1500)),
				Arguments.of("an hour is capped at maxRetryAfter", Map.of("retry-after", "3600"),
						Duration.ofSeconds(5), Duration.ofSeconds(5)),
				Arguments.of("a wait shorter than the backoff does not shorten it", Map.of("retry-after-ms", "10"),
						Duration.ofSeconds(60), Duration.ofMillis(500)));
	}

	@ParameterizedTest(name = "{0}")
	@MethodSource("serverWaits")
	void aRateLimitIsRetriedAfterTheServersWaitCappedByMaxRetryAfter(String name, Map<String, String> headers,
			Duration maxRetryAfter, Duration expectedWait) {
		ProviderException limited = http(429, headers, RATE_LIMIT_BODY);
		assertThat(limited).isInstanceOf(RateLimitedException.class);
		RetryRules spec = RetryRules.backoff(2, Duration.ofMillis(500)).jitter(0).maxBackoff(Duration.ofSeconds(2))
				.maxRetryAfter(maxRetryAfter);
		assertThat(spec.delayBefore(1, limited)).isEqualTo(expectedWait);
		ScriptedUpstream[] upstream = new ScriptedUpstream[1];

		StepVerifier.withVirtualTime(() -> {
					VirtualTimeScheduler vts = VirtualTimeScheduler.get();
					upstream[0] = new ScriptedUpstream(vts, () -> Flux.error(limited), () -> answer("ok"));
					return upstream[0].flux().transform(AiGuard.of(policy(vts).retry(spec).build()));
				})
				.expectSubscription()
				.thenAwait(expectedWait.minusMillis(1))
				.then(() -> assertThat(upstream[0].subscriptions()).isEqualTo(1))
				.thenAwait(Duration.ofMillis(1))
				.expectNext(ChatChunk.token("ok"), ChatChunk.finish("stop"), ChatChunk.done())
				.verifyComplete();

		assertThat(upstream[0].subscribedAtMillis).containsExactly(0L, expectedWait.toMillis());
		assertThat(metrics.retried()).containsExactly("RateLimitedException");
	}

	// ---- what is retried ----

	static Stream<Arguments> retryable() {
		Map<String, String> none = Map.of();
		return Stream.of(
				Arguments.of("500", (Supplier<Flux<ChatChunk>>) () -> Flux.error(http(500)), Outcome.FAILURE),
				Arguments.of("502", (Supplier<Flux<ChatChunk>>) () -> Flux.error(http(502)), Outcome.FAILURE),
				Arguments.of("503", (Supplier<Flux<ChatChunk>>) () -> Flux.error(http(503)), Outcome.FAILURE),
				Arguments.of("504", (Supplier<Flux<ChatChunk>>) () -> Flux.error(http(504)), Outcome.FAILURE),
				Arguments.of("429", (Supplier<Flux<ChatChunk>>) () -> Flux.error(http(429, none, RATE_LIMIT_BODY)),
						Outcome.FAILURE),
				Arguments.of("529 overloaded", (Supplier<Flux<ChatChunk>>) () -> Flux.error(http(529)),
						Outcome.FAILURE),
				Arguments.of("in-band overloaded_error", (Supplier<Flux<ChatChunk>>) () -> Flux.error(
						ProviderErrors.inBand("anthropic", "overloaded_error", null, "Overloaded")), Outcome.FAILURE),
				Arguments.of("in-band server_error", (Supplier<Flux<ChatChunk>>) () -> Flux.error(
						ProviderErrors.inBand("openai", "server_error", null, "oops")), Outcome.FAILURE),
				Arguments.of("connection reset", (Supplier<Flux<ChatChunk>>) () -> Flux.error(
						new ProviderConnectionException("openai", "connection reset", new IOException("reset"))),
						Outcome.FAILURE),
				Arguments.of("ConnectException", (Supplier<Flux<ChatChunk>>) () -> Flux.error(
						new ConnectException("refused")), Outcome.FAILURE),
				Arguments.of("wrapped IOException", (Supplier<Flux<ChatChunk>>) () -> Flux.error(
						new IllegalStateException("client failed", new IOException("premature close"))),
						Outcome.FAILURE),
				Arguments.of("first-token stall", (Supplier<Flux<ChatChunk>>) Flux::never, Outcome.STALLED),
				Arguments.of("completed without tokens or terminal marker",
						(Supplier<Flux<ChatChunk>>) Flux::empty, Outcome.INCOMPLETE));
	}

	@ParameterizedTest(name = "{0}")
	@MethodSource("retryable")
	void aRetryableFailureBeforeTheFirstTokenIsRetried(String name, Supplier<Flux<ChatChunk>> firstAttempt,
			Outcome firstOutcome) {
		ScriptedUpstream[] upstream = new ScriptedUpstream[1];
		StepVerifier.withVirtualTime(() -> {
					VirtualTimeScheduler vts = VirtualTimeScheduler.get();
					upstream[0] = new ScriptedUpstream(vts, firstAttempt, () -> answer("ok"));
					return upstream[0].flux().transform(AiGuard.of(policy(vts)
							.stall(StallSpec.defaults().firstTokenTimeout(Duration.ofSeconds(2)))
							.retry(RetryRules.backoff(3, Duration.ofMillis(100)).jitter(0))
							.build()));
				})
				.thenAwait(Duration.ofSeconds(10))
				.expectNext(ChatChunk.token("ok"), ChatChunk.finish("stop"), ChatChunk.done())
				.verifyComplete();

		assertThat(upstream[0].subscriptions()).isEqualTo(2);
		GuardReport report = reports.get(0);
		assertThat(report.outcome()).isEqualTo(Outcome.SUCCESS);
		assertThat(report.source()).isEqualTo(Source.REALTIME);
		assertThat(report.tokens()).isEqualTo(1);
		assertThat(report.attempts()).extracting(GuardReport.Attempt::outcome)
				.containsExactly(firstOutcome, Outcome.SUCCESS);
		assertThat(report.attempts().get(0).tokens()).isZero();
		assertThat(metrics.retried()).hasSize(1);
		assertThat(metrics.tokensWasted()).isEmpty();
	}

	@Test
	void aFirstTokenStallIsRetriedOneMillisecondAfterItsDeadlinePlusTheBackoff() {
		ScriptedUpstream[] upstream = new ScriptedUpstream[1];
		StepVerifier.withVirtualTime(() -> {
					VirtualTimeScheduler vts = VirtualTimeScheduler.get();
					upstream[0] = new ScriptedUpstream(vts, Flux::never, () -> answer("ok"));
					return upstream[0].flux().transform(AiGuard.of(policy(vts)
							.stall(StallSpec.defaults().firstTokenTimeout(Duration.ofSeconds(2)))
							.retry(RetryRules.backoff(2, Duration.ofMillis(300)).jitter(0))
							.build()));
				})
				.thenAwait(Duration.ofSeconds(10))
				.expectNextCount(3)
				.verifyComplete();

		// deadline 2 s, confirmed 1 ms later, then 300 ms of backoff
		assertThat(upstream[0].subscribedAtMillis).containsExactly(0L, 2_000L + CONFIRM.toMillis() + 300L);
		assertThat(metrics.retried()).containsExactly("StreamStalledException");
		assertThat(metrics.stalled()).containsExactly(StallPhase.FIRST_TOKEN);
	}

	static Stream<Arguments> notRetryable() {
		String quota = "{\"error\":{\"message\":\"You exceeded your current quota\",\"type\":\"insufficient_quota\","
				+ "\"param\":null,\"code\":\"insufficient_quota\"}}";
		String contextLength = "{\"error\":{\"message\":\"This model's maximum context length is 8192 tokens. "
				+ "However, your messages resulted in 9013 tokens.\",\"type\":\"invalid_request_error\","
				+ "\"param\":\"messages\",\"code\":\"context_length_exceeded\"}}";
		return Stream.of(
				Arguments.of("400", http(400), Outcome.CLIENT_ERROR),
				Arguments.of("401", http(401), Outcome.CLIENT_ERROR),
				Arguments.of("403", http(403), Outcome.CLIENT_ERROR),
				Arguments.of("404", http(404), Outcome.CLIENT_ERROR),
				Arguments.of("429 insufficient_quota", http(429, Map.of("retry-after", "1"), quota),
						Outcome.CLIENT_ERROR),
				Arguments.of("context length in the transform form", http(400, Map.of(), contextLength),
						Outcome.CLIENT_ERROR),
				Arguments.of("IllegalArgumentException", new IllegalArgumentException("bad request"), Outcome.FAILURE),
				Arguments.of("an unknown exception", new IllegalStateException("bug"), Outcome.FAILURE));
	}

	@ParameterizedTest(name = "{0}")
	@MethodSource("notRetryable")
	void aFailureThatCannotBeFixedByResendingIsNeverRetried(String name, Throwable error, Outcome outcome) {
		ScriptedUpstream[] upstream = new ScriptedUpstream[1];
		StepVerifier.withVirtualTime(() -> {
					VirtualTimeScheduler vts = VirtualTimeScheduler.get();
					upstream[0] = new ScriptedUpstream(vts, () -> Flux.error(error), () -> answer("never sent"));
					return upstream[0].flux().transform(AiGuard.of(policy(vts)
							.retry(RetryRules.backoff(5, Duration.ofMillis(100)).jitter(0))
							.build()));
				})
				.expectErrorSatisfies(e -> assertThat(e).isSameAs(error))
				.verifyThenAssertThat()
				.hasNotDroppedErrors();

		assertThat(upstream[0].subscriptions()).isEqualTo(1);
		assertThat(reports).singleElement().satisfies(r -> {
			assertThat(r.outcome()).isEqualTo(outcome);
			assertThat(r.attempts()).hasSize(1);
			assertThat(r.error()).isSameAs(error);
		});
		assertThat(metrics.retried()).isEmpty();
	}

	@Test
	void retriesStopAtMaxAttemptsAndTheSubscriberGetsTheLastError() {
		ProviderException first = http(502);
		ProviderException last = http(503);
		ScriptedUpstream[] upstream = new ScriptedUpstream[1];
		StepVerifier.withVirtualTime(() -> {
					VirtualTimeScheduler vts = VirtualTimeScheduler.get();
					upstream[0] = new ScriptedUpstream(vts, () -> Flux.error(first), () -> Flux.error(first),
							() -> Flux.error(last), () -> answer("never sent"));
					return upstream[0].flux().transform(AiGuard.of(policy(vts)
							.retry(RetryRules.backoff(3, Duration.ofMillis(100)).jitter(0))
							.build()));
				})
				.thenAwait(Duration.ofMinutes(1))
				.expectErrorSatisfies(e -> assertThat(e).isSameAs(last))
				.verify(Duration.ofSeconds(5));

		assertThat(upstream[0].subscriptions()).isEqualTo(3);
		assertThat(reports).singleElement().satisfies(r -> {
			assertThat(r.outcome()).isEqualTo(Outcome.FAILURE);
			assertThat(r.attempts()).hasSize(3);
		});
		assertThat(metrics.retried()).hasSize(2);
	}

	// ---- nothing duplicated, nothing lost ----

	@Test
	void aRetryOnlyHappensBeforeTheFirstTokenSoTheSubscriberSeesEachTokenOnce() {
		IOException dropped = new IOException("connection reset");
		ScriptedUpstream[] upstream = new ScriptedUpstream[1];
		List<String> seen = new CopyOnWriteArrayList<>();
		StepVerifier.withVirtualTime(() -> {
					VirtualTimeScheduler vts = VirtualTimeScheduler.get();
					upstream[0] = new ScriptedUpstream(vts, () -> Flux.error(http(503)),
							() -> Flux.just(ChatChunk.token("The"), ChatChunk.token(" answer"))
									.concatWith(Flux.error(dropped)),
							() -> answer("The", " answer", " again"));
					return upstream[0].flux().transform(AiGuard.of(policy(vts)
									.retry(RetryRules.backoff(5, Duration.ofMillis(100)).jitter(0))
									.build()))
							.doOnNext(c -> seen.add(c.text()));
				})
				.thenAwait(Duration.ofMinutes(1))
				.expectNext(ChatChunk.token("The"), ChatChunk.token(" answer"))
				.expectErrorSatisfies(e -> {
					assertThat(e).isInstanceOf(PartialStreamException.class);
					assertThat(e.getCause()).isSameAs(dropped);
					assertThat(((PartialStreamException) e).tokensDelivered()).isEqualTo(2);
				})
				.verify(Duration.ofSeconds(5));

		assertThat(String.join("", seen)).isEqualTo("The answer");
		assertThat(upstream[0].subscriptions()).as("retries left, but tokens were delivered").isEqualTo(2);
		assertThat(reports.get(0).attempts()).extracting(GuardReport.Attempt::tokens).containsExactly(0L, 2L);
	}

	/** Cuts {@code text} into 1 to 4 character deltas. */
	static List<ChatChunk> randomChunks(String text, Random random) {
		List<ChatChunk> chunks = new ArrayList<>();
		for (int i = 0; i < text.length();) {
			int end = Math.min(text.length(), i + 1 + random.nextInt(4));
			chunks.add(ChatChunk.token(text.substring(i, end)));
			i = end;
		}
		return chunks;
	}

	@Test
	void acrossRandomFailureScriptsTheSubscriberSeesTheAnswerOnceOrAPrefixOfItOnce() {
		String answer = "The quick brown fox jumps over the lazy dog.";
		for (int seed = 0; seed < 200; seed++) {
			Random random = new Random(seed);
			// up to 4 failures before any token, then one attempt that streams and may break midway
			int failuresBefore = random.nextInt(5);
			boolean breaksMidway = random.nextBoolean();
			List<ChatChunk> chunks = randomChunks(answer, random);
			int cut = 1 + random.nextInt(chunks.size() - 1);
			List<Supplier<Flux<ChatChunk>>> script = new ArrayList<>();
			for (int i = 0; i < failuresBefore; i++) {
				switch (random.nextInt(3)) {
					case 0:
						script.add(() -> Flux.error(http(503)));
						break;
					case 1:
						script.add(() -> Flux.error(new IOException("reset")));
						break;
					default:
						script.add(Flux::empty);
				}
			}
			script.add(breaksMidway
					? () -> Flux.fromIterable(chunks.subList(0, cut)).concatWith(Flux.error(new IOException("cut")))
					: () -> Flux.fromIterable(chunks).concatWith(Flux.just(ChatChunk.finish("stop"), ChatChunk.done())));
			script.add(() -> Flux.just(ChatChunk.token("a stray resubscribe")));
			reports.clear();
			List<ChatChunk> seen = new CopyOnWriteArrayList<>();
			VirtualTimeScheduler vts = VirtualTimeScheduler.create();
			try {
				@SuppressWarnings("unchecked")
				ScriptedUpstream upstream = new ScriptedUpstream(vts, script.toArray(new Supplier[0]));
				TestSubscriber<ChatChunk> ts = TestSubscriber.create();
				upstream.flux().transform(AiGuard.of(policy(vts).retry(RetryRules.backoff(5, Duration.ofMillis(100))
						.random(random::nextDouble)).build())).doOnNext(seen::add).subscribe(ts);
				vts.advanceTimeBy(Duration.ofMinutes(1));

				StringBuilder text = new StringBuilder();
				seen.forEach(c -> text.append(c.text()));
				assertThat(upstream.subscriptions()).as("seed " + seed).isEqualTo(failuresBefore + 1);
				if (breaksMidway) {
					assertThat(ts.expectTerminalError()).as("seed " + seed).isInstanceOf(PartialStreamException.class);
					StringBuilder prefix = new StringBuilder();
					chunks.subList(0, cut).forEach(c -> prefix.append(c.text()));
					assertThat(text.toString()).as("seed " + seed).isEqualTo(prefix.toString());
				}
				else {
					assertThat(ts.isTerminatedComplete()).as("seed " + seed).isTrue();
					assertThat(text.toString()).as("seed " + seed).isEqualTo(answer);
				}
				assertThat(reports).singleElement().satisfies(r -> assertThat(r.attempts()).hasSize(failuresBefore + 1));
			}
			finally {
				vts.dispose();
			}
		}
	}

	@Test
	void demandCarriesOverToTheRetryMinusWhatTheFailedAttemptEmitted() {
		ScriptedUpstream[] upstream = new ScriptedUpstream[1];
		StepVerifier.withVirtualTime(() -> {
					VirtualTimeScheduler vts = VirtualTimeScheduler.get();
					upstream[0] = new ScriptedUpstream(vts,
							() -> Flux.just(ChatChunk.keepAlive()).concatWith(Flux.error(http(503))),
							() -> answer("a", "b", "c"));
					return upstream[0].flux().transform(AiGuard.of(policy(vts)
							.retry(RetryRules.backoff(2, Duration.ofMillis(100)).jitter(0))
							.build()));
				}, 0)
				.thenRequest(2)
				.expectNext(ChatChunk.keepAlive())
				.thenAwait(Duration.ofMillis(100))
				.expectNext(ChatChunk.token("a"))
				.expectNoEvent(Duration.ofSeconds(1))
				.thenRequest(2)
				.expectNext(ChatChunk.token("b"), ChatChunk.token("c"))
				.expectNoEvent(Duration.ofSeconds(1))
				.thenRequest(Long.MAX_VALUE)
				.expectNext(ChatChunk.finish("stop"), ChatChunk.done())
				.verifyComplete();

		assertThat(upstream[0].subscriptions()).isEqualTo(2);
	}

	// ---- the retry budget ----

	@Test
	void aSharedBudgetBoundsARetryStormToTenPercentPlusTheFloor() {
		int requests = 1000;
		VirtualTimeScheduler vts = VirtualTimeScheduler.create();
		try {
			RetryBudget budget = RetryBudget.of(0.1, 10, Duration.ofSeconds(10), vts);
			AtomicInteger attempts = new AtomicInteger();
			Flux<ChatChunk> failing = Flux.defer(() -> {
				attempts.incrementAndGet();
				return Flux.error(http(503));
			});
			AiGuard<ChatChunk> guard = AiGuard.of(policy(vts).retry(RetryRules.defaults()).retryBudget(budget).build());

			List<TestSubscriber<ChatChunk>> subscribers = subscribeMany(failing.transform(guard), requests);
			vts.advanceTimeBy(Duration.ofMinutes(2));

			assertThat(subscribers).allSatisfy(ts -> assertThat(ts.isTerminatedError()).isTrue());
			long floor = 10L * 10L;
			assertThat(attempts.get()).as("upstream attempts").isGreaterThan(requests)
					.isLessThanOrEqualTo((int) (1.1 * requests) + (int) floor);
			assertThat(reports).hasSize(requests);
			long retries = attempts.get() - requests;
			assertThat(metrics.retried()).hasSize((int) retries);
			// each request that stopped short of its 3 tries was stopped by the budget, and said so once
			long stoppedByBudget = reports.stream().filter(r -> r.attempts().size() < 3).count();
			assertThat(metrics.retryBudgetExhausted()).isEqualTo(stoppedByBudget).isPositive();
			assertThat(metrics.ended(Outcome.FAILURE)).as("one outcome per attempt")
					.isEqualTo(attempts.get());
		}
		finally {
			vts.dispose();
		}
	}

	@Test
	void withoutABudgetTheSameStormTriplesTheLoad() {
		int requests = 1000;
		VirtualTimeScheduler vts = VirtualTimeScheduler.create();
		try {
			AtomicInteger attempts = new AtomicInteger();
			Flux<ChatChunk> failing = Flux.defer(() -> {
				attempts.incrementAndGet();
				return Flux.error(http(503));
			});
			AiGuard<ChatChunk> guard = AiGuard.of(policy(vts).retry(RetryRules.defaults()).build());

			subscribeMany(failing.transform(guard), requests);
			vts.advanceTimeBy(Duration.ofMinutes(2));

			assertThat(attempts.get()).isEqualTo(3 * requests);
			assertThat(metrics.retryBudgetExhausted()).isZero();
		}
		finally {
			vts.dispose();
		}
	}

	@Test
	void steadyTrafficIntoAFailingUpstreamGetsAtMostTenPercentRetries() {
		int requests = 1000;
		VirtualTimeScheduler vts = VirtualTimeScheduler.create();
		try {
			RetryBudget budget = RetryBudget.of(0.1, 0, Duration.ofSeconds(10), vts);
			AtomicInteger attempts = new AtomicInteger();
			Flux<ChatChunk> failing = Flux.defer(() -> {
				attempts.incrementAndGet();
				return Flux.error(http(503));
			});
			// the default spec, with its jitter drawn from a seeded source so the run is repeatable
			Random jitter = new Random(42);
			Flux<ChatChunk> guarded = failing.transform(AiGuard.of(policy(vts)
					.retry(RetryRules.defaults().random(jitter::nextDouble))
					.retryBudget(budget).build()));
			List<TestSubscriber<ChatChunk>> subscribers = new CopyOnWriteArrayList<>();
			// 20 requests per second for 50 seconds
			for (int i = 0; i < requests; i++) {
				vts.schedule(() -> {
					TestSubscriber<ChatChunk> ts = TestSubscriber.create();
					subscribers.add(ts);
					guarded.subscribe(ts);
				}, i * 50L, TimeUnit.MILLISECONDS);
			}
			vts.advanceTimeBy(Duration.ofMinutes(2));

			assertThat(subscribers).hasSize(requests)
					.allSatisfy(ts -> assertThat(ts.isTerminatedError()).isTrue());
			assertThat(attempts.get()).isGreaterThan(requests).isLessThanOrEqualTo((int) (1.1 * requests));
		}
		finally {
			vts.dispose();
		}
	}

	@Test
	void aSpentBudgetEndsTheRequestWithItsErrorAndSaysSo() {
		ProviderException unavailable = http(503);
		ScriptedUpstream[] upstream = new ScriptedUpstream[1];
		StepVerifier.withVirtualTime(() -> {
					VirtualTimeScheduler vts = VirtualTimeScheduler.get();
					upstream[0] = new ScriptedUpstream(vts, () -> Flux.error(unavailable), () -> answer("never sent"));
					return upstream[0].flux().transform(AiGuard.of(policy(vts)
							.retry(RetryRules.backoff(3, Duration.ofMillis(100)))
							.retryBudget(RetryBudget.of(0, 0, Duration.ofSeconds(10), vts))
							.build()));
				})
				.expectErrorSatisfies(e -> assertThat(e).isSameAs(unavailable))
				.verify(Duration.ofSeconds(5));

		assertThat(upstream[0].subscriptions()).isEqualTo(1);
		assertThat(metrics.retryBudgetExhausted()).isEqualTo(1);
		assertThat(metrics.retried()).isEmpty();
		assertThat(reports.get(0).outcome()).isEqualTo(Outcome.FAILURE);
	}

	static List<TestSubscriber<ChatChunk>> subscribeMany(Flux<ChatChunk> flux, int n) {
		List<TestSubscriber<ChatChunk>> subscribers = new ArrayList<>(n);
		for (int i = 0; i < n; i++) {
			TestSubscriber<ChatChunk> ts = TestSubscriber.create();
			flux.subscribe(ts);
			subscribers.add(ts);
		}
		return subscribers;
	}

	// ---- cancel during the backoff ----

	PriorityLanes lanes(VirtualTimeScheduler vts) {
		PriorityLanes lanes = PriorityLanes.builder()
				.name("it-retry-lanes")
				.lane(Priority.P0, LaneSpec.of(1))
				.lane(Priority.P1, LaneSpec.of(1))
				.lane(Priority.P2, LaneSpec.of(1))
				.timer(vts)
				.build();
		lanesBuilt.add(lanes);
		return lanes;
	}

	/**
	 * A breaker in HALF_OPEN with three probe slots, where a failed probe decides nothing yet: the
	 * slots still free tell exactly how many permits are outstanding.
	 */
	static CircuitBreaker halfOpenAfter(VirtualTimeScheduler vts) {
		CircuitBreaker breaker = CircuitBreaker.builder("it-retry-breaker")
				.config(BreakerConfig.custom()
						.countWindow(10)
						.minimumCalls(1)
						.openWait(Duration.ofSeconds(1))
						.openWaitJitter(0)
						.minimumDwell(Duration.ofSeconds(1))
						.halfOpenProbes(3)
						.successesToClose(2)
						.build())
				.clock(() -> vts.now(TimeUnit.NANOSECONDS))
				.build();
		breaker.tryAcquire().record(Outcome.FAILURE, -1L);
		assertThat(breaker.state()).isEqualTo(BreakerState.OPEN);
		vts.advanceTimeBy(Duration.ofSeconds(1));
		return breaker;
	}

	/** Exactly {@code free} probe permits can still be taken (and are handed back). */
	static void assertFreeProbes(CircuitBreaker breaker, int free) {
		List<BreakerPermit> taken = new ArrayList<>();
		for (int i = 0; i < free; i++) {
			BreakerPermit p = breaker.tryAcquire();
			assertThat(p).as("probe " + (i + 1) + " of " + free + " free").isNotNull();
			taken.add(p);
		}
		assertThat(breaker.tryAcquire()).as("no probe beyond " + free).isNull();
		taken.forEach(p -> p.record(Outcome.CANCELLED, -1L));
	}

	/** Nothing in flight or queued, and the single P1 permit is free. */
	static void assertLaneFree(PriorityLanes lanes) {
		assertThat(lanes.inFlight(Priority.P1)).isZero();
		assertThat(lanes.borrowedInFlight(Priority.P1)).isZero();
		assertThat(lanes.queued(Priority.P1)).isZero();
		TestSubscriber<LanePermit> next = TestSubscriber.create();
		lanes.acquire(Priority.P1).subscribe(next);
		assertThat(next.getReceivedOnNext()).as("the lane's permit is free").hasSize(1);
		next.getReceivedOnNext().forEach(LanePermit::release);
	}

	@Test
	void cancelDuringTheBackoffReleasesTheLaneAndStartsNoFurtherAttempt() {
		VirtualTimeScheduler vts = VirtualTimeScheduler.create();
		try {
			PriorityLanes lanes = lanes(vts);
			CircuitBreaker breaker = halfOpenAfter(vts);
			AtomicInteger subscriptions = new AtomicInteger();
			Flux<ChatChunk> upstream = Flux.defer(() -> {
				subscriptions.incrementAndGet();
				return Flux.error(http(503));
			});
			Flux<ChatChunk> guarded = upstream.transform(AiGuard.of(policy(vts).lanes(lanes).breaker(breaker)
					.retry(RetryRules.backoff(3, Duration.ofMillis(500)).jitter(0)).build()));

			TestSubscriber<ChatChunk> ts = TestSubscriber.create();
			guarded.subscribe(ts);
			assertThat(subscriptions).hasValue(1);
			assertThat(lanes.inFlight(Priority.P1)).as("the permit is held across the backoff").isEqualTo(1);
			assertThat(breaker.state()).isEqualTo(BreakerState.HALF_OPEN);

			vts.advanceTimeBy(Duration.ofMillis(200));
			ts.cancel();
			vts.advanceTimeBy(Duration.ofMinutes(1));

			assertThat(subscriptions).as("no attempt after the cancel").hasValue(1);
			assertThat(ts.isTerminated()).isFalse();
			assertLaneFree(lanes);
			// the failed probe holds its slot; the cancelled retry took none
			assertFreeProbes(breaker, 2);
			assertThat(reports).singleElement().satisfies(r -> {
				assertThat(r.outcome()).isEqualTo(Outcome.CANCELLED);
				assertThat(r.attempts()).extracting(GuardReport.Attempt::outcome).containsExactly(Outcome.FAILURE);
			});
			assertThat(metrics.retried()).as("a retry that never started is not counted").isEmpty();
		}
		finally {
			vts.dispose();
		}
	}

	@Test
	void cancelRacingTheBackoffTimerLeaksNoPermitAndLeavesNoAttemptRunning() {
		VirtualTimeScheduler vts = VirtualTimeScheduler.create();
		try {
			PriorityLanes lanes = lanes(vts);
			AtomicInteger running = new AtomicInteger();
			AtomicInteger subscriptions = new AtomicInteger();
			Flux<ChatChunk> upstream = Flux.defer(() -> subscriptions.getAndIncrement() == 0
							? Flux.<ChatChunk>error(http(503)) : Flux.<ChatChunk>never())
					.doOnSubscribe(s -> running.incrementAndGet())
					.doFinally(signal -> running.decrementAndGet());
			for (int round = 0; round < 500; round++) {
				reports.clear();
				subscriptions.set(0);
				CircuitBreaker breaker = halfOpenAfter(vts);
				Flux<ChatChunk> guarded = upstream.transform(AiGuard.of(policy(vts).lanes(lanes).breaker(breaker)
						.retry(RetryRules.backoff(3, Duration.ofMillis(500)).jitter(0)).build()));
				TestSubscriber<ChatChunk> ts = TestSubscriber.create();
				guarded.subscribe(ts);

				RaceTestUtils.race(ts::cancel, () -> vts.advanceTimeBy(Duration.ofMillis(500)));

				assertThat(running).as("round " + round + ": upstreams still subscribed").hasValue(0);
				assertThat(subscriptions.get()).isBetween(1, 2);
				assertThat(ts.getReceivedOnNext()).isEmpty();
				assertLaneFree(lanes);
				assertFreeProbes(breaker, 2);
				assertThat(reports).singleElement().extracting(GuardReport::outcome).isEqualTo(Outcome.CANCELLED);
			}
		}
		finally {
			vts.dispose();
		}
	}

	@Test
	void aCancelArrivingWhileTheRetryIsBeingSubscribedStillCancelsItsUpstream() {
		VirtualTimeScheduler vts = VirtualTimeScheduler.create();
		try {
			PriorityLanes lanes = lanes(vts);
			AtomicInteger running = new AtomicInteger();
			AtomicInteger subscriptions = new AtomicInteger();
			TestSubscriber<ChatChunk> ts = TestSubscriber.create();
			Flux<ChatChunk> upstream = Flux.defer(() -> {
				if (subscriptions.getAndIncrement() == 0) {
					return Flux.error(http(503));
				}
				// the user leaves while the retry is connecting: before the attempt's onSubscribe
				ts.cancel();
				return Flux.<ChatChunk>never()
						.doOnSubscribe(s -> running.incrementAndGet())
						.doOnCancel(running::decrementAndGet);
			});
			upstream.transform(AiGuard.of(policy(vts).lanes(lanes)
					.retry(RetryRules.backoff(3, Duration.ofMillis(500)).jitter(0)).build())).subscribe(ts);

			vts.advanceTimeBy(Duration.ofSeconds(1));

			assertThat(subscriptions).hasValue(2);
			assertThat(running).as("the retry's upstream was cancelled").hasValue(0);
			assertLaneFree(lanes);
			assertThat(reports).singleElement().extracting(GuardReport::outcome).isEqualTo(Outcome.CANCELLED);
		}
		finally {
			vts.dispose();
		}
	}

	@Test
	void aRetryThatFindsTheBreakerOpenEndsWithTheUpstreamErrorAndIsNotCounted() {
		VirtualTimeScheduler vts = VirtualTimeScheduler.create();
		try {
			CircuitBreaker breaker = CircuitBreaker.builder("it-retry-open")
					.clock(() -> vts.now(TimeUnit.NANOSECONDS)).build();
			ProviderException unavailable = http(503);
			AtomicInteger subscriptions = new AtomicInteger();
			Flux<ChatChunk> upstream = Flux.defer(() -> {
				subscriptions.incrementAndGet();
				return Flux.error(unavailable);
			});
			TestSubscriber<ChatChunk> ts = TestSubscriber.create();
			upstream.transform(AiGuard.of(policy(vts).breaker(breaker)
					.retry(RetryRules.backoff(3, Duration.ofMillis(500)).jitter(0)).build())).subscribe(ts);

			breaker.transitionToForcedOpen();
			vts.advanceTimeBy(Duration.ofSeconds(1));

			assertThat(ts.expectTerminalError()).isSameAs(unavailable);
			assertThat(subscriptions).hasValue(1);
			assertThat(metrics.retried()).isEmpty();
			assertThat(reports).singleElement().satisfies(r -> {
				assertThat(r.outcome()).isEqualTo(Outcome.FAILURE);
				assertThat(r.attempts()).hasSize(1);
			});
		}
		finally {
			vts.dispose();
		}
	}

	// ---- metrics ----
}
