package dev.aiguard;

import java.math.BigDecimal;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import dev.aiguard.admission.AdmissionRejectedException;
import dev.aiguard.budget.BucketSpec;
import dev.aiguard.budget.BucketStore;
import dev.aiguard.budget.BudgetSpec;
import dev.aiguard.budget.LocalBucketStore;
import dev.aiguard.budget.PriceTable;
import dev.aiguard.budget.PromptCapAction;
import dev.aiguard.budget.ProviderLimits;
import dev.aiguard.budget.Take;
import dev.aiguard.budget.TenantLimits;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.chat.Usage;
import dev.aiguard.core.Outcome;
import dev.aiguard.core.Priority;
import dev.aiguard.core.Tenant;
import dev.aiguard.metrics.MicrometerGuardMetrics;
import dev.aiguard.provider.ProviderServerException;
import dev.aiguard.provider.RateLimitListener;
import dev.aiguard.provider.RateLimitedException;
import dev.aiguard.provider.RateLimits;
import dev.aiguard.retry.RetryRules;
import dev.aiguard.testing.Reports;
import dev.aiguard.truncation.PromptTooLargeException;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.test.StepVerifier;
import reactor.test.scheduler.VirtualTimeScheduler;
import reactor.test.util.RaceTestUtils;
import reactor.util.context.Context;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Budgets through the guard: the prompt cap before any call, the output cap ending an answer
 * cleanly, tokens and cost from the provider's usage or from counting, tenant budgets refusing with
 * {@code BUDGET} and the time until they refill, reserves for urgent priorities, provider limits
 * throttling on the policy's timer, a 429 and rate-limit headers pausing the key, concurrent
 * admissions never over-admitting, live changes of budgets and an asynchronous store.
 */
class GuardBudgetTest {

	final VirtualTimeScheduler vts = VirtualTimeScheduler.create();
	final Reports reports = new Reports();
	final SimpleMeterRegistry registry = new SimpleMeterRegistry();
	final AtomicInteger calls = new AtomicInteger();

	static final PriceTable PRICES = PriceTable.in("USD").model("gpt-4o-mini", new BigDecimal("0.15"),
			new BigDecimal("0.60"));

	@AfterEach
	void dispose() {
		vts.dispose();
	}

	GuardPolicy.Builder policy(BudgetSpec budget) {
		return GuardPolicy.builder("budgeted").timer(vts).onReport(reports).metrics(new MicrometerGuardMetrics(registry, 100))
				.budget(budget);
	}

	static ChatRequest ask(String text) {
		return ChatRequest.of("gpt-4o-mini", List.of(ChatMessage.user(text)));
	}

	Flux<ChatChunk> answer(ChatRequest request) {
		calls.incrementAndGet();
		return Flux.just(ChatChunk.token("Hello"), ChatChunk.token(" there"), ChatChunk.finish("stop"), ChatChunk.done());
	}

	static Context tenant(String id) {
		return Tenant.of(id).asContext();
	}

	// ---- per request ----

	@Test
	void aPromptOverTheCapIsRefusedBeforeAnyCall() {
		AiGuard<ChatChunk> guard = AiGuard.of(policy(BudgetSpec.defaults().promptCap(50)).build());
		StepVerifier.create(guard.call(ask("x".repeat(400)), this::answer))
				.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(PromptTooLargeException.class)
						.hasMessageContaining("the limit is 50 tokens"))
				.verify(Duration.ofSeconds(1));
		assertThat(calls).hasValue(0);
		assertThat(reports.last().outcome()).isEqualTo(Outcome.CLIENT_ERROR);
		assertThat(reports.last().attempts()).isEmpty();
	}

	@Test
	void aPromptOverTheCapIsShortenedToItWhenTheSpecSaysTruncate() {
		AtomicReference<ChatRequest> sent = new AtomicReference<>();
		AiGuard<ChatChunk> guard = AiGuard.of(policy(BudgetSpec.defaults().promptCap(60)
				.onPromptOverCap(PromptCapAction.TRUNCATE)).build());
		ChatRequest longOne = ChatRequest.of("gpt-4o-mini", List.of(ChatMessage.system("Be brief."),
				ChatMessage.user("old question " + "q".repeat(400)), ChatMessage.assistant("old answer " + "a".repeat(400)),
				ChatMessage.user("What now?")));
		StepVerifier.create(guard.call(longOne, r -> {
			sent.set(r);
			return answer(r);
		})).expectNextCount(4).verifyComplete();
		assertThat(dev.aiguard.truncation.TokenCounter.estimate().count(sent.get().messages())).isLessThanOrEqualTo(60);
		assertThat(sent.get().messages().get(sent.get().messages().size() - 1).content()).isEqualTo("What now?");
	}

	@Test
	void theOutputCapEndsTheAnswerCleanlyAndCancelsTheUpstream() {
		AtomicBoolean upstreamCancelled = new AtomicBoolean();
		AiGuard<ChatChunk> guard = AiGuard.of(policy(BudgetSpec.defaults().outputCap(3)).build());
		Flux<ChatChunk> endless = Flux.range(0, 100).map(i -> ChatChunk.token("t" + i))
				.doOnCancel(() -> upstreamCancelled.set(true));
		StepVerifier.create(guard.call(ask("go"), r -> endless))
				.expectNext(ChatChunk.token("t0"), ChatChunk.token("t1"), ChatChunk.token("t2"))
				.verifyComplete();
		assertThat(upstreamCancelled).isTrue();
		GuardReport report = reports.last();
		assertThat(report.outcome()).isEqualTo(Outcome.SUCCESS);
		assertThat(report.finishReason()).isEqualTo("length");
		assertThat(report.outputCapped()).isTrue();
		assertThat(report.outputTruncated()).isTrue();
		assertThat(report.tokens()).isEqualTo(3);
		assertThat(registry.get("aiguard.output.capped").counter().count()).isEqualTo(1.0);
	}

	@Test
	void theOutputCapWorksInTheTransformFormToo() {
		AiGuard<ChatChunk> guard = AiGuard.of(policy(BudgetSpec.defaults().outputCap(2)).build());
		StepVerifier.create(Flux.range(0, 10).map(i -> ChatChunk.token("t" + i)).transform(guard), 0)
				.thenRequest(1).expectNextCount(1)
				.thenRequest(5).expectNextCount(1)
				.verifyComplete();
		assertThat(reports.last().outputCapped()).isTrue();
	}

	@Test
	void theProvidersUsageIsPricedAndMetered() {
		AiGuard<ChatChunk> guard = AiGuard.of(policy(BudgetSpec.defaults().prices(PRICES)).build());
		StepVerifier.create(guard.call(ask("hi"), r -> Flux.just(ChatChunk.token("Hi"), ChatChunk.finish("stop"),
				ChatChunk.usage(new Usage(1_000, 500)), ChatChunk.done()))
				.contextWrite(tenant("acme")))
				.expectNextCount(4).verifyComplete();
		GuardReport.Spend spend = reports.last().spend();
		assertThat(spend.promptTokens()).isEqualTo(1_000);
		assertThat(spend.completionTokens()).isEqualTo(500);
		// 1000 * 0.15 / 1M + 500 * 0.60 / 1M
		assertThat(spend.cost()).isEqualByComparingTo("0.00045");
		assertThat(spend.currency()).isEqualTo("USD");
		assertThat(spend.retryCost()).isEqualByComparingTo("0");
		assertThat(registry.get("aiguard.tokens").tags("kind", "prompt", "source", "provider", "tenant", "acme",
				"model", "gpt-4o-mini").counter().count()).isEqualTo(1_000.0);
		assertThat(registry.get("aiguard.tokens").tags("kind", "completion").counter().count()).isEqualTo(500.0);
		assertThat(registry.get("aiguard.cost").tags("currency", "USD").counter().count()).isCloseTo(0.00045,
				org.assertj.core.data.Offset.offset(1e-12));
	}

	@Test
	void withoutUsageTheCountedTokensArePriced() {
		AiGuard<ChatChunk> guard = AiGuard.of(policy(BudgetSpec.defaults().prices(PRICES)).build());
		ChatRequest request = ask("x".repeat(40));
		StepVerifier.create(guard.call(request, this::answer)).expectNextCount(4).verifyComplete();
		int prompt = dev.aiguard.truncation.TokenCounter.estimate().count(request.messages());
		GuardReport.Spend spend = reports.last().spend();
		assertThat(spend.promptTokens()).isEqualTo(prompt);
		assertThat(spend.completionTokens()).isEqualTo(2);
		assertThat(registry.get("aiguard.tokens").tags("kind", "prompt", "source", "counted", "tenant", "default")
				.counter().count()).isEqualTo(prompt);
	}

	@Test
	void attemptsWhoseTextTheUserNeverGotAreTheRetryCost() {
		AtomicInteger attempt = new AtomicInteger();
		AiGuard<ChatChunk> guard = AiGuard.of(policy(BudgetSpec.defaults().prices(PRICES))
				.retry(RetryRules.backoff(2, Duration.ofMillis(10))).build());
		StepVerifier.create(guard.call(ask("hi"), r -> attempt.getAndIncrement() == 0
				? Flux.<ChatChunk>error(new ProviderServerException("test", 500, "server_error", null, "boom", null))
						.startWith(ChatChunk.usage(new Usage(100, 0)))
				: Flux.just(ChatChunk.token("ok"), ChatChunk.finish("stop"), ChatChunk.usage(new Usage(100, 1)),
						ChatChunk.done())))
				.then(() -> vts.advanceTimeBy(Duration.ofSeconds(1)))
				.expectNextCount(5).verifyComplete();
		GuardReport.Spend spend = reports.last().spend();
		assertThat(spend.promptTokens()).isEqualTo(200);
		assertThat(spend.retryPromptTokens()).isEqualTo(100);
		assertThat(spend.retryCost()).isEqualByComparingTo("0.000015");
		assertThat(registry.get("aiguard.retry.tokens").tags("kind", "prompt").counter().count()).isEqualTo(100.0);
		assertThat(registry.get("aiguard.retry.cost").counter().count()).isCloseTo(0.000015,
				org.assertj.core.data.Offset.offset(1e-12));
	}

	// ---- tenants ----

	@Test
	void aTenantOverItsRequestBudgetIsRefusedWithTheTimeUntilItRefills() {
		AiGuard<ChatChunk> guard = AiGuard.of(policy(BudgetSpec.defaults()
				.tenants(TenantLimits.unlimited().requestsPerMinute(2))).build());
		for (int i = 0; i < 2; i++) {
			StepVerifier.create(guard.call(ask("hi"), this::answer).contextWrite(tenant("acme")))
					.expectNextCount(4).verifyComplete();
		}
		StepVerifier.create(guard.call(ask("hi"), this::answer).contextWrite(tenant("acme")))
				.expectErrorSatisfies(e -> {
					assertThat(e).isInstanceOf(AdmissionRejectedException.class)
							.hasMessageContaining("tenant 'acme' is over its budget of 2 requests per minute");
					AdmissionRejectedException r = (AdmissionRejectedException) e;
					assertThat(r.reason()).isEqualTo(AdmissionRejectedException.Reason.BUDGET);
					assertThat(r.retryAfter()).contains(Duration.ofSeconds(30));
				})
				.verify(Duration.ofSeconds(1));
		assertThat(calls).hasValue(2);
		assertThat(reports.last().outcome()).isEqualTo(Outcome.REJECTED);
		assertThat(registry.get("aiguard.budget.rejected").tags("scope", "tenant", "limit", "requests").counter().count())
				.isEqualTo(1.0);
		// another tenant has its own budget; acme's refills on the policy's clock
		StepVerifier.create(guard.call(ask("hi"), this::answer).contextWrite(tenant("globex")))
				.expectNextCount(4).verifyComplete();
		vts.advanceTimeBy(Duration.ofSeconds(30));
		StepVerifier.create(guard.call(ask("hi"), this::answer).contextWrite(tenant("acme")))
				.expectNextCount(4).verifyComplete();
		assertThat(registry.get("aiguard.budget.remaining.requests").tags("scope", "tenant", "id", "acme")
				.gauge().value()).isEqualTo(0.0);
	}

	@Test
	void theLastTenPercentIsKeptForP0() {
		AiGuard<ChatChunk> guard = AiGuard.of(policy(BudgetSpec.defaults()
				.tenants(TenantLimits.unlimited().requestsPerMinute(10)).reserve(Priority.P0, 0.10)).build());
		int p1 = 0;
		for (int i = 0; i < 10; i++) {
			List<Object> seen = Flux.from(guard.call(ask("hi"), this::answer))
					.contextWrite(tenant("acme").putAll(Priority.P1.asContext().readOnly()))
					.map(c -> (Object) c).onErrorResume(e -> Flux.just(e)).collectList().block(Duration.ofSeconds(1));
			if (!(seen.get(0) instanceof Throwable)) {
				p1++;
			}
		}
		assertThat(p1).isEqualTo(9);
		StepVerifier.create(guard.call(ask("hi"), this::answer)
				.contextWrite(tenant("acme").putAll(Priority.P0.asContext().readOnly())))
				.expectNextCount(4).verifyComplete();
	}

	@Test
	void aTenantOverItsMoneyPerDayIsRefused() {
		AiGuard<ChatChunk> guard = AiGuard.of(policy(BudgetSpec.defaults().prices(PRICES)
				.tenants(TenantLimits.unlimited().costPerDay(new BigDecimal("0.001")))).build());
		// 0.0015: more than the day's budget, taken as a debt once the answer is in
		StepVerifier.create(guard.call(ask("hi"), r -> Flux.just(ChatChunk.token("x"), ChatChunk.finish("stop"),
				ChatChunk.usage(new Usage(10_000, 0)), ChatChunk.done())).contextWrite(tenant("acme")))
				.expectNextCount(4).verifyComplete();
		StepVerifier.create(guard.call(ask("hi"), this::answer).contextWrite(tenant("acme")))
				.expectErrorSatisfies(e -> {
					assertThat(e).hasMessageContaining("0.001 USD per day");
					assertThat(((AdmissionRejectedException) e).retryAfter()).isPresent();
				})
				.verify(Duration.ofSeconds(1));
		assertThat(registry.get("aiguard.budget.rejected").tags("limit", "cost").counter().count()).isEqualTo(1.0);
	}

	@Test
	void aRefusedTenantTakesTheFallbackLadderWhenItIsEnteredByBudget() {
		java.util.List<dev.aiguard.fallback.FallbackTrigger> seen = new java.util.concurrent.CopyOnWriteArrayList<>();
		AiGuard<ChatChunk> guard = AiGuard.of(policy(BudgetSpec.defaults()
				.tenants(TenantLimits.unlimited().requestsPerMinute(1)))
				.fallback(dev.aiguard.fallback.FallbackChain.<ChatChunk>builder()
						.step(dev.aiguard.fallback.Fallback.<ChatChunk>lightweight(r -> {
							seen.add(r.trigger());
							return Flux.empty();
						}))
						.step(dev.aiguard.fallback.Fallback.staticText("over budget")).build())
				.build());
		StepVerifier.create(guard.call(ask("hi"), this::answer)).expectNextCount(4).verifyComplete();
		StepVerifier.create(guard.call(ask("hi"), this::answer).filter(ChatChunk::hasContent).map(ChatChunk::text)
				.reduce("", String::concat))
				.expectNext("over budget").verifyComplete();
		assertThat(calls).hasValue(1);
		assertThat(seen).containsExactly(dev.aiguard.fallback.FallbackTrigger.BUDGET);
	}

	@Test
	void aLadderEnteredByRejectedButNotByBudgetLeavesTheRefusalToTheCaller() {
		AiGuard<ChatChunk> guard = AiGuard.of(policy(BudgetSpec.defaults()
				.tenants(TenantLimits.unlimited().requestsPerMinute(1)))
				.fallback(dev.aiguard.fallback.FallbackChain.<ChatChunk>builder()
						.step(dev.aiguard.fallback.Fallback.staticText("busy"))
						.triggers(java.util.EnumSet.complementOf(java.util.EnumSet.of(
								dev.aiguard.fallback.FallbackTrigger.BUDGET, dev.aiguard.fallback.FallbackTrigger.CLIENT_ERROR)))
						.build())
				.build());
		StepVerifier.create(guard.call(ask("hi"), this::answer).contextWrite(tenant("acme"))).expectNextCount(4)
				.verifyComplete();
		StepVerifier.create(guard.call(ask("hi"), this::answer).contextWrite(tenant("acme")))
				.expectErrorSatisfies(e -> {
					assertThat(e).isInstanceOf(AdmissionRejectedException.class);
					assertThat(((AdmissionRejectedException) e).reason()).isEqualTo(AdmissionRejectedException.Reason.BUDGET);
					assertThat(((AdmissionRejectedException) e).retryAfter()).isPresent();
				})
				.verify(Duration.ofSeconds(1));
		assertThat(calls).hasValue(1);
	}

	@Test
	void concurrentAdmissionsAgainstOneBucketNeverOverAdmit() {
		for (int round = 0; round < 50; round++) {
			AtomicInteger admitted = new AtomicInteger();
			AiGuard<ChatChunk> guard = AiGuard.of(policy(BudgetSpec.defaults()
					.tenants(TenantLimits.unlimited().requestsPerMinute(3))).build());
			Runnable two = () -> {
				for (int i = 0; i < 2; i++) {
					guard.call(ask("hi"), r -> {
						admitted.incrementAndGet();
						return answer(r);
					}).contextWrite(tenant("acme")).onErrorResume(AdmissionRejectedException.class, e -> Flux.empty())
							.subscribe();
				}
			};
			RaceTestUtils.race(two, two, two, two);
			assertThat(admitted).hasValue(3);
		}
	}

	// ---- provider keys ----

	@Test
	void aProviderKeyThrottlesOnThePolicysTimerInsteadOfMeetingA429() {
		AiGuard<ChatChunk> guard = AiGuard.of(policy(BudgetSpec.defaults().maxWait(Duration.ofMinutes(2))
				.provider("openai-main", ProviderLimits.unlimited().requestsPerMinute(1))).build());
		StepVerifier.create(guard.call(ask("hi"), this::answer)).expectNextCount(4).verifyComplete();
		StepVerifier.create(guard.call(ask("hi"), this::answer))
				.expectSubscription()
				.then(() -> vts.advanceTimeBy(Duration.ofSeconds(59)))
				.then(() -> assertThat(calls).hasValue(1))
				.then(() -> vts.advanceTimeBy(Duration.ofSeconds(1)))
				.expectNextCount(4)
				.verifyComplete();
		assertThat(calls).hasValue(2);
		assertThat(registry.get("aiguard.budget.throttled").tags("provider", "openai-main").timer().count()).isEqualTo(1);
		assertThat(reports.last().outcome()).isEqualTo(Outcome.SUCCESS);
	}

	@Test
	void throttledRequestsAreSentInTheOrderTheyReservedTheirTurn() {
		AiGuard<ChatChunk> guard = AiGuard.of(policy(BudgetSpec.defaults().maxWait(Duration.ofMinutes(5))
				.provider("openai-main", ProviderLimits.unlimited().requestsPerMinute(1))).build());
		StepVerifier.create(guard.call(ask("hi"), this::answer)).expectNextCount(4).verifyComplete();
		List<String> sent = new java.util.concurrent.CopyOnWriteArrayList<>();
		List<reactor.core.Disposable> waiting = new java.util.ArrayList<>();
		for (String who : List.of("a", "b", "c")) {
			waiting.add(guard.call(ask(who), r -> {
				sent.add(r.messages().get(0).content());
				return answer(r);
			}).subscribe());
		}
		vts.advanceTimeBy(Duration.ofSeconds(59));
		assertThat(sent).isEmpty();
		vts.advanceTimeBy(Duration.ofSeconds(1));
		assertThat(sent).containsExactly("a");
		vts.advanceTimeBy(Duration.ofSeconds(60));
		assertThat(sent).containsExactly("a", "b");
		vts.advanceTimeBy(Duration.ofSeconds(60));
		assertThat(sent).containsExactly("a", "b", "c");
		assertThat(registry.get("aiguard.budget.throttled").tags("provider", "openai-main").timer().count()).isEqualTo(3);
		waiting.forEach(reactor.core.Disposable::dispose);
	}

	@Test
	void aRequestThatEndsWhileItWaitsForItsTurnGivesItBack() {
		AiGuard<ChatChunk> guard = AiGuard.of(policy(BudgetSpec.defaults().maxWait(Duration.ofMinutes(5))
				.provider("openai-main", ProviderLimits.unlimited().requestsPerMinute(1).tokensPerMinute(1_000))).build());
		StepVerifier.create(guard.call(ask("hi"), this::answer)).expectNextCount(4).verifyComplete();
		BucketStore store = guard.policy().bucketStore();
		BucketSpec requests = BucketSpec.of("provider.requests", 1, Duration.ofMinutes(1));
		BucketSpec tokens = BucketSpec.of("provider.tokens", 1_000, Duration.ofMinutes(1));
		long tokensBefore = store.available(tokens, "openai-main").join();
		reactor.core.Disposable cancelled = guard.call(ask("first in line"), this::answer).subscribe();
		assertThat(store.available(requests, "openai-main").join()).isEqualTo(-1L);
		assertThat(store.available(tokens, "openai-main").join()).isLessThan(tokensBefore);
		cancelled.dispose();
		assertThat(reports.last().outcome()).isEqualTo(Outcome.CANCELLED);
		assertThat(store.available(requests, "openai-main").join()).isZero();
		assertThat(store.available(tokens, "openai-main").join()).isEqualTo(tokensBefore);
		// the next request is sent when the cancelled one would have been
		StepVerifier.create(guard.call(ask("hi"), this::answer))
				.expectSubscription()
				.then(() -> vts.advanceTimeBy(Duration.ofSeconds(59)))
				.then(() -> assertThat(calls).hasValue(1))
				.then(() -> vts.advanceTimeBy(Duration.ofSeconds(1)))
				.expectNextCount(4)
				.verifyComplete();
		assertThat(calls).hasValue(2);
	}

	@Test
	void aWaitLongerThanAllowedIsRefusedAtOnceWithTheWait() {
		AiGuard<ChatChunk> guard = AiGuard.of(policy(BudgetSpec.defaults().maxWait(Duration.ofSeconds(10))
				.provider("openai-main", ProviderLimits.unlimited().requestsPerMinute(1))).build());
		StepVerifier.create(guard.call(ask("hi"), this::answer)).expectNextCount(4).verifyComplete();
		StepVerifier.create(guard.call(ask("hi"), this::answer))
				.expectErrorSatisfies(e -> {
					assertThat(e).isInstanceOf(AdmissionRejectedException.class)
							.hasMessageContaining("provider key 'openai-main' has no room");
					assertThat(((AdmissionRejectedException) e).retryAfter()).contains(Duration.ofSeconds(60));
				})
				.verify(Duration.ofSeconds(1));
		assertThat(calls).hasValue(1);
	}

	@Test
	void a429sRetryAfterPausesTheKeyForEveryRequest() {
		AiGuard<ChatChunk> guard = AiGuard.of(policy(BudgetSpec.defaults()
				.provider("openai-main", ProviderLimits.unlimited().requestsPerMinute(600))).build());
		StepVerifier.create(guard.call(ask("hi"), r -> {
			calls.incrementAndGet();
			return Flux.error(new RateLimitedException("test", 429, "rate_limit", null, "slow down",
					Duration.ofSeconds(20), RateLimits.UNKNOWN));
		})).expectError(RateLimitedException.class).verify(Duration.ofSeconds(1));
		StepVerifier.create(guard.call(ask("hi"), this::answer))
				.expectSubscription()
				.then(() -> vts.advanceTimeBy(Duration.ofSeconds(19)))
				.then(() -> assertThat(calls).hasValue(1))
				.then(() -> vts.advanceTimeBy(Duration.ofSeconds(2)))
				.expectNextCount(4)
				.verifyComplete();
	}

	@Test
	void theProvidersRemainingHeadersCorrectTheLocalView() {
		AiGuard<ChatChunk> guard = AiGuard.of(policy(BudgetSpec.defaults()
				.provider("openai-main", ProviderLimits.unlimited().requestsPerMinute(600).tokensPerMinute(100_000)))
				.build());
		// the client hears the headers through the context: 0 requests left, the window resets in 6 s
		Flux<ChatChunk> client = Flux.deferContextual(ctx -> {
			calls.incrementAndGet();
			RateLimitListener listener = ctx.get(RateLimitListener.CONTEXT_KEY);
			listener.onRateLimits(new RateLimits(600, 0, Duration.ofSeconds(6), 100_000, 90_000, Duration.ofSeconds(6)));
			return answer(null);
		});
		StepVerifier.create(guard.call(ask("hi"), r -> client)).expectNextCount(4).verifyComplete();
		BucketStore store = guard.policy().bucketStore();
		BucketSpec tokens = BucketSpec.of("provider.tokens", 100_000, Duration.ofMinutes(1));
		assertThat(store.immediate().available(tokens, "openai-main")).isLessThanOrEqualTo(90_000);
		StepVerifier.create(guard.call(ask("hi"), this::answer))
				.expectSubscription()
				.then(() -> vts.advanceTimeBy(Duration.ofSeconds(5)))
				.then(() -> assertThat(calls).hasValue(2))
				.then(() -> vts.advanceTimeBy(Duration.ofSeconds(2)))
				.expectNextCount(4)
				.verifyComplete();
	}

	// ---- live policies, configuration, stores ----

	@Test
	void aLiveChangeOfBudgetsKeepsWhatTenantsSpent() {
		GuardControl<ChatChunk> control = AiGuard.live(policy(BudgetSpec.defaults()
				.tenants(TenantLimits.unlimited().requestsPerMinute(1))).build());
		AiGuard<ChatChunk> guard = control.guard();
		StepVerifier.create(guard.call(ask("hi"), this::answer)).expectNextCount(4).verifyComplete();
		StepVerifier.create(guard.call(ask("hi"), this::answer)).expectError(AdmissionRejectedException.class)
				.verify(Duration.ofSeconds(1));
		PolicyChange change = control.update("ops", b -> b.adjustBudget(s -> s.tenants(
				TenantLimits.unlimited().requestsPerMinute(3))));
		assertThat(change.settings()).anySatisfy(s -> assertThat(s.toString())
				.isEqualTo("budget.tenants: 1 requests/min -> 3 requests/min"));
		// the bucket kept its fill in proportion: 0 of 1 is 0 of 3, so nothing until it refills
		StepVerifier.create(guard.call(ask("hi"), this::answer)).expectError(AdmissionRejectedException.class)
				.verify(Duration.ofSeconds(1));
		vts.advanceTimeBy(Duration.ofSeconds(40));
		StepVerifier.create(guard.call(ask("hi"), this::answer)).expectNextCount(4).verifyComplete();
		StepVerifier.create(guard.call(ask("hi"), this::answer)).expectNextCount(4).verifyComplete();
	}

	@Test
	void badBudgetsFailAtBuildNamingTheField() {
		assertThatThrownBy(() -> GuardPolicy.builder("p").budget(BudgetSpec.defaults()
				.provider("k", ProviderLimits.unlimited()).reserve(Priority.P0, 0.1)).build())
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("budget.reserve needs tenant limits");
		assertThatThrownBy(() -> BudgetSpec.defaults().promptCap(0)).hasMessage("budget.promptCap must be > 0, was 0");
		assertThatThrownBy(() -> BudgetSpec.defaults().reserve(Priority.P2, 0.1))
				.hasMessageContaining("budget.reserve.P2 reserves for no one");
		assertThatThrownBy(() -> BudgetSpec.defaults().reserve(Priority.P0, 1.5))
				.hasMessage("budget.reserve.P0 must be in (0, 1), was 1.5");
		assertThatThrownBy(() -> TenantLimits.unlimited().costPerDay(new BigDecimal("0.0000000001")))
				.hasMessage("costPerDay must have at most 9 decimals, was 0.0000000001");
		assertThatThrownBy(() -> BudgetSpec.defaults().provider("has space", ProviderLimits.unlimited()))
				.hasMessageContaining("budget.provider.key must be");
	}

	@Test
	void aStoreThatAnswersLaterAdmitsAndRefusesTheSame() {
		LocalBucketStore local = LocalBucketStore.create(() -> vts.now(java.util.concurrent.TimeUnit.NANOSECONDS));
		BucketStore later = new LaterStore(local);
		AiGuard<ChatChunk> guard = AiGuard.of(policy(BudgetSpec.defaults()
				.tenants(TenantLimits.unlimited().requestsPerMinute(1))
				.provider("k", ProviderLimits.unlimited().requestsPerMinute(100))).bucketStore(later).build());
		StepVerifier.create(guard.call(ask("hi"), this::answer)).expectNextCount(4).verifyComplete();
		StepVerifier.create(guard.call(ask("hi"), this::answer))
				.expectError(AdmissionRejectedException.class).verify(Duration.ofSeconds(2));
		assertThat(calls).hasValue(1);
		assertThat(guard.policy().bucketStore().mode()).isEqualTo(BucketStore.Mode.SHARED);
	}

	/** A store whose futures complete on another thread, like a network store's. */
	static final class LaterStore implements BucketStore {
		final LocalBucketStore local;

		LaterStore(LocalBucketStore local) {
			this.local = local;
		}

		<V> CompletableFuture<V> later(CompletableFuture<V> now) {
			return now.thenApplyAsync(v -> v, ForkJoinPool.commonPool());
		}

		@Override
		public Mode mode() {
			return Mode.SHARED;
		}

		@Override
		public CompletableFuture<Take> tryTake(BucketSpec spec, String id, long units) {
			return later(local.tryTake(spec, id, units));
		}

		@Override
		public CompletableFuture<Void> takeRegardless(BucketSpec spec, String id, long units) {
			return later(local.takeRegardless(spec, id, units));
		}

		@Override
		public CompletableFuture<Void> giveBack(BucketSpec spec, String id, long units) {
			return later(local.giveBack(spec, id, units));
		}

		@Override
		public CompletableFuture<Void> pause(BucketSpec spec, String id, Duration duration) {
			return later(local.pause(spec, id, duration));
		}

		@Override
		public CompletableFuture<Long> available(BucketSpec spec, String id) {
			return later(local.available(spec, id));
		}
	}
}
