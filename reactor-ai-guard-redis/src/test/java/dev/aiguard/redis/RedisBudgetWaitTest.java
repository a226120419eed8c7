package dev.aiguard.redis;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import reactor.core.publisher.Flux;
import reactor.test.StepVerifier;

import dev.aiguard.AiGuard;
import dev.aiguard.GuardPolicy;
import dev.aiguard.admission.AdmissionRejectedException;
import dev.aiguard.budget.BudgetSpec;
import dev.aiguard.budget.ProviderLimits;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;

/**
 * How long a guarded request waits for the shared store, through a proxy that makes every Redis round
 * trip slow: a provider budget with no room is asked "now, or a place in the line" once, and the
 * request waits at most one command timeout for the answer, however many round trips the store needs.
 */
@ExtendWith(RedisServerExtension.class)
class RedisBudgetWaitTest {

	/** Each Redis answer this late: one round trip fits the command timeout, two do not. */
	private static final Duration ROUND_TRIP = Duration.ofMillis(400);
	private static final Duration COMMAND_TIMEOUT = Duration.ofMillis(600);
	/**
	 * Room for a loaded machine above the command timeout. A take followed by a reservation, each with
	 * a deadline of its own, waits the take's two round trips (a compare-and-swap reads, then writes)
	 * before the reservation's deadline even starts: 800 ms more (1.3 s measured), twice this room.
	 */
	private static final Duration SLACK = Duration.ofMillis(400);

	private DelayingProxy proxy;
	private RedisEndpoint endpoint;
	private RedisBucketStore store;

	@AfterEach
	void close() {
		if (store != null) {
			store.close();
		}
		if (endpoint != null) {
			endpoint.close();
		}
		if (proxy != null) {
			proxy.close();
		}
	}

	private static Flux<ChatChunk> model(ChatRequest request) {
		return Flux.just(ChatChunk.token("Budgets "), ChatChunk.token("wait."), ChatChunk.finish("stop"), ChatChunk.done());
	}

	@Test
	void aRefusedProviderRequestWaitsOneCommandTimeoutForTheStoreNotOnePerOperation(RedisServer redis)
			throws Exception {
		proxy = DelayingProxy.start(redis);
		endpoint = RedisEndpoint.create(RedisSettings.builder(proxy.uri())
				.commandTimeout(COMMAND_TIMEOUT)
				.connectTimeout(Duration.ofSeconds(2))
				.probeInterval(Duration.ofMillis(100))
				.build());
		store = RedisBucketStore.builder(endpoint).name("slow").build();
		store.shared().get(5, TimeUnit.SECONDS);
		AiGuard<ChatChunk> guard = AiGuard.of(GuardPolicy.builder("one-deadline")
				.budget(BudgetSpec.defaults()
						.provider("openai-main", ProviderLimits.unlimited().requestsPerMinute(1))
						.maxWait(Duration.ofSeconds(1)))
				.bucketStore(store)
				.build());
		ChatRequest request = ChatRequest.of("gpt-4o-mini", List.of(ChatMessage.user("What does a budget cost?")));
		StepVerifier.create(guard.call(request, RedisBudgetWaitTest::model).then())
				.as("the minute's one request")
				.verifyComplete();

		proxy.delay(ROUND_TRIP);
		long start = System.nanoTime();
		StepVerifier.create(guard.call(request, RedisBudgetWaitTest::model))
				.expectError(AdmissionRejectedException.class)
				.verify(Duration.ofSeconds(10));
		Duration waited = Duration.ofNanos(System.nanoTime() - start);

		// the next request of the minute is a minute away, more than the second it may wait: refused, by
		// the store's local share once the one operation (take, else reserve: three round trips here) ran
		// out of its command timeout
		assertThat(waited).as("one deadline for the take and the reservation together")
				.isBetween(COMMAND_TIMEOUT.minusMillis(5), COMMAND_TIMEOUT.plus(SLACK));
		assertThat(store.mode()).as("one slow operation moves nothing").isEqualTo(dev.aiguard.budget.BucketStore.Mode.SHARED);
	}
}
