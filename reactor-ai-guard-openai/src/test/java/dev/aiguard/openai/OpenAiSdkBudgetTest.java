package dev.aiguard.openai;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import dev.aiguard.AiGuard;
import dev.aiguard.GuardPolicy;
import dev.aiguard.GuardReport;
import dev.aiguard.admission.AdmissionRejectedException;
import dev.aiguard.budget.BucketSpec;
import dev.aiguard.budget.BudgetSpec;
import dev.aiguard.budget.LocalBucketStore;
import dev.aiguard.budget.ProviderLimits;
import dev.aiguard.budget.TenantLimits;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.core.Outcome;
import dev.aiguard.core.Tenant;
import dev.aiguard.provider.RateLimitedException;
import dev.aiguard.retry.RetryRules;
import dev.aiguard.test.mock.MockAnswers;
import dev.aiguard.test.mock.ProviderRateLimit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The guard's budgets with the real SDK client over loopback: a tenant over its budget is refused
 * before the SDK is called, and the provider's 429 (the mock's provider rate limit, with
 * {@code Retry-After}) pauses the key's budget for every request of the policy, so a request that
 * comes after the 429 waits for the key instead of meeting a second one.
 */
class OpenAiSdkBudgetTest {

	@RegisterExtension
	static final SdkMock sdk = SdkMock.shared();

	private final List<GuardReport> reports = new CopyOnWriteArrayList<>();

	private static String text(List<ChatChunk> chunks) {
		StringBuilder s = new StringBuilder();
		chunks.stream().filter(ChatChunk::hasContent).forEach(c -> s.append(c.text()));
		return s.toString();
	}

	@Test
	void aTenantOverItsBudgetIsRefusedBeforeTheSdkIsCalled() {
		AiGuard<ChatChunk> guard = AiGuard.of(GuardPolicy.builder("sdk-tenant")
			.budget(BudgetSpec.defaults().tenants(TenantLimits.unlimited().requestsPerMinute(1)))
			.onReport(reports::add)
			.build());
		long before = sdk.mock.stats().requests();

		List<ChatChunk> first = guard.call(SdkMock.request("Hello"), OpenAiStreams.of(sdk.client, SdkMock.params("Hello")))
			.contextWrite(Tenant.of("acme").asContext())
			.collectList()
			.block(SdkMock.WAIT);
		assertThat(text(first)).isEqualTo(MockAnswers.text("Hello"));
		// a report comes after the stream's terminal signal: wait for it so the next one is the refusal's
		SdkMock.await(reports::size, 1);

		StepVerifier.create(guard.call(SdkMock.request("Again"), OpenAiStreams.of(sdk.client, SdkMock.params("Again")))
				.contextWrite(Tenant.of("acme").asContext()))
			.expectErrorSatisfies(e -> assertThat(e).isInstanceOfSatisfying(AdmissionRejectedException.class, r -> {
				assertThat(r.reason()).isEqualTo(AdmissionRejectedException.Reason.BUDGET);
				assertThat(r.getMessage()).contains("tenant 'acme' is over its budget of 1 requests per minute");
				assertThat(r.retryAfter()).isPresent();
			}))
			.verify(SdkMock.WAIT);
		assertThat(sdk.mock.stats().requests()).as("the refused request never reached the SDK").isEqualTo(before + 1);
		SdkMock.await(reports::size, 2);

		List<ChatChunk> other = guard.call(SdkMock.request("Hello"), OpenAiStreams.of(sdk.client, SdkMock.params("Hello")))
			.contextWrite(Tenant.of("globex").asContext())
			.collectList()
			.block(SdkMock.WAIT);
		assertThat(text(other)).isEqualTo(MockAnswers.text("Hello"));
		SdkMock.await(reports::size, 3);
		assertThat(reports.get(1).outcome()).isEqualTo(Outcome.REJECTED);
		assertThat(reports.get(1).attempts()).isEmpty();
	}

	@Test
	void aProviderRateLimitPausesTheKeyForTheNextRequestToo() {
		// the provider serves two requests per 3 s window; the guard's own view of the key is generous,
		// so the first it hears of the limit is the SDK's 429
		sdk.mock.faults(SdkMock.FAST.withProviderRateLimit(new ProviderRateLimit(2, 1_000_000, Duration.ofSeconds(3))));
		LocalBucketStore store = LocalBucketStore.create();
		BucketSpec keyRequests = BucketSpec.of("provider.requests", 600, Duration.ofMinutes(1));
		AiGuard<ChatChunk> guard = AiGuard.of(GuardPolicy.builder("sdk-key")
			.budget(BudgetSpec.defaults().provider("mock", ProviderLimits.unlimited().requestsPerMinute(600)))
			.bucketStore(store)
			.retry(RetryRules.backoff(2, Duration.ofMillis(50)).jitter(0))
			.onReport(reports::add)
			.build());
		long refusalsBefore = sdk.mock.stats().rateLimitRefusals();

		for (String q : List.of("one", "two")) {
			List<ChatChunk> answer = guard.call(SdkMock.request(q), OpenAiStreams.of(sdk.client, SdkMock.params(q)))
				.collectList()
				.block(SdkMock.WAIT);
			assertThat(text(answer)).isEqualTo(MockAnswers.text(q));
		}

		// the window is spent: the third request meets the provider's 429, the guard pauses the key
		Mono<List<ChatChunk>> third = guard.call(SdkMock.request("three"),
				OpenAiStreams.of(sdk.client, SdkMock.params("three")))
			.collectList()
			.cache();
		third.subscribe();
		SdkMock.await(() -> sdk.mock.stats().rateLimitRefusals() - refusalsBefore, 1);
		// the mock counts its 429 before the client reads it: wait until the guard has paused the key
		SdkMock.await(() -> store.immediate().available(keyRequests, "mock") < 0 ? 1 : 0, 1);

		// a request that comes after the 429 waits for the key instead of being sent into the limit
		long started = System.nanoTime();
		List<ChatChunk> fourth = guard.call(SdkMock.request("four"), OpenAiStreams.of(sdk.client, SdkMock.params("four")))
			.collectList()
			.block(Duration.ofSeconds(10));
		Duration waited = Duration.ofNanos(System.nanoTime() - started);
		assertThat(text(fourth)).isEqualTo(MockAnswers.text("four"));
		assertThat(text(third.block(Duration.ofSeconds(10)))).isEqualTo(MockAnswers.text("three"));

		assertThat(sdk.mock.stats().rateLimitRefusals() - refusalsBefore).as("429s the provider sent").isEqualTo(1);
		assertThat(waited).as("the fourth waited for the key's pause").isGreaterThan(Duration.ofMillis(500));
		SdkMock.await(reports::size, 4);
		GuardReport paused = reports.stream().filter(r -> !r.attempts().isEmpty()
				&& r.attempts().get(0).error() instanceof RateLimitedException).findFirst().orElseThrow();
		assertThat(paused.outcome()).isEqualTo(Outcome.SUCCESS);
		assertThat(paused.attempts()).hasSize(2);
		assertThat(Flux.fromIterable(reports).all(r -> r.outcome() == Outcome.SUCCESS).block()).isTrue();
	}
}
