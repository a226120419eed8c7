package dev.aiguard.redis;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

import dev.aiguard.AiGuard;
import dev.aiguard.GuardPolicy;
import dev.aiguard.budget.BucketSpec;
import dev.aiguard.budget.BucketStore.Mode;
import dev.aiguard.budget.BudgetSpec;
import dev.aiguard.budget.ProviderLimits;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;

/**
 * Three independent guard stacks — each its own Lettuce client (own Netty threads), store, policy and
 * {@link AiGuard}, in this JVM — call a fast in-process model as fast as one shared provider budget of
 * 600 requests and 100 000 tokens a minute lets them; the guard throttles each request on its timer
 * until the shared buckets have room. The buckets are first drained to five seconds' worth (50
 * requests, 8 333 tokens), so a run of a few seconds measures the per-minute rates rather than the
 * full-minute burst. (The in-process model, not the HTTP mock: on a busy two-core machine the HTTP
 * round trips, not the budget, would set the pace.)
 */
@ExtendWith(RedisServerExtension.class)
class SharedBudgetAcceptanceTest {

	private static final String KEY = "openai-main";
	private static final long RPM = 600;
	private static final long TPM = 100_000;
	private static final BucketSpec REQUESTS = BucketSpec.of("provider.requests", RPM, Duration.ofMinutes(1));
	private static final BucketSpec TOKENS = BucketSpec.of("provider.tokens", TPM, Duration.ofMinutes(1));
	private static final long REQUESTS_LEFT = RPM / 12;
	private static final long TOKENS_LEFT = TPM / 12;
	private static final Duration RUN = Duration.ofSeconds(6);
	private static final int STACKS = 3;
	/** Requests each stack keeps in flight (most of them waiting for the budget). */
	private static final int CONCURRENCY = 16;

	private final List<AutoCloseable> open = new ArrayList<>();
	private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
	/** When each admission happened, all stacks together. */
	private final ConcurrentLinkedQueue<Long> admissions = new ConcurrentLinkedQueue<>();
	/** Every store's mode changes, for the failure message should one fall back. */
	private final ConcurrentLinkedQueue<StoreModeChange> changes = new ConcurrentLinkedQueue<>();

	@AfterEach
	void close() throws Exception {
		for (AutoCloseable c : open) {
			c.close();
		}
	}

	/** One instance: a Lettuce client, a shared store and a guard of its own; counts what its budget let through. */
	private final class Stack {
		final String name;
		final RedisBucketStore store;
		final AiGuard<ChatChunk> guard;
		final AtomicLong admittedUntil = new AtomicLong(Long.MAX_VALUE);
		final AtomicInteger admitted = new AtomicInteger();
		final AtomicInteger answered = new AtomicInteger();

		Stack(RedisServer redis, String name) throws Exception {
			this.name = name;
			// the command timeout is generous here: this test measures sharing, not a slow machine's fallbacks
			RedisEndpoint endpoint = RedisEndpoint.create(RedisSettings.builder(redis.uri())
					.commandTimeout(Duration.ofSeconds(2)).connectTimeout(Duration.ofSeconds(2)).build());
			open.add(endpoint);
			store = RedisBucketStore.builder(endpoint).name(name).instances(STACKS).listener(changes::add)
					.metrics(new MicrometerRedisMetrics(registry)).build();
			open.add(0, store);
			store.shared().get(5, TimeUnit.SECONDS);
			GuardPolicy policy = GuardPolicy.builder("chat-" + name)
					.budget(BudgetSpec.defaults()
							.provider(KEY, ProviderLimits.unlimited().requestsPerMinute(RPM).tokensPerMinute(TPM))
							.maxWait(Duration.ofSeconds(20)))
					.bucketStore(store)
					.build();
			guard = AiGuard.of(policy);
		}

		/** The source the guard calls once the provider budget let the attempt through. */
		Flux<ChatChunk> send(ChatRequest request) {
			long now = System.nanoTime();
			if (now < admittedUntil.get()) {
				admitted.incrementAndGet();
				admissions.add(now);
			}
			return Flux.just(ChatChunk.token("A token bucket"), ChatChunk.token(" refills."), ChatChunk.finish("stop"),
					ChatChunk.done());
		}

		Mono<Void> ask(int i) {
			ChatRequest request = ChatRequest.of("gpt-4o-mini",
					List.of(ChatMessage.user("Question " + i + " from " + name + ": what is a token bucket?")));
			return guard.call(request, this::send).then().doOnSuccess(x -> answered.incrementAndGet())
					.onErrorResume(e -> Mono.empty());
		}

		Disposable hammer() {
			return Flux.range(0, Integer.MAX_VALUE).flatMap(this::ask, CONCURRENCY).subscribe();
		}
	}

	@Test
	void threeInstancesShareOneProviderBudgetWithinFivePercentAndNoneIsStarved(RedisServer redis) throws Exception {
		List<Stack> stacks = new ArrayList<>();
		for (int i = 1; i <= STACKS; i++) {
			stacks.add(new Stack(redis, "api-" + i));
		}
		for (Stack s : stacks) { // warm each path up once: class loading must not eat into the run
			s.ask(-1).block(Duration.ofSeconds(10));
		}
		RedisBucketStore admin = stacks.get(0).store;
		long requestsNow = admin.available(REQUESTS, KEY).get(5, TimeUnit.SECONDS);
		long tokensNow = admin.available(TOKENS, KEY).get(5, TimeUnit.SECONDS);
		admin.takeRegardless(REQUESTS, KEY, requestsNow - REQUESTS_LEFT).get(5, TimeUnit.SECONDS);
		admin.takeRegardless(TOKENS, KEY, tokensNow - TOKENS_LEFT).get(5, TimeUnit.SECONDS);
		long drainedAt = System.nanoTime();
		long end = drainedAt + RUN.toNanos();
		stacks.forEach(s -> s.admittedUntil.set(end));

		List<Disposable> load = stacks.stream().map(Stack::hammer).toList();
		Mono.delay(RUN).block(RUN.plusSeconds(5));
		load.forEach(Disposable::dispose);
		long tokensLeft = admin.available(TOKENS, KEY).get(5, TimeUnit.SECONDS);

		double seconds = (end - drainedAt) / 1e9;
		double budget = REQUESTS_LEFT + RPM / 60.0 * seconds;
		int total = stacks.stream().mapToInt(s -> s.admitted.get()).sum();
		StringBuilder figures = new StringBuilder(String.format("admitted %d of a budget of %.1f requests in %.1f s:",
				total, budget, seconds));
		stacks.forEach(s -> figures.append(String.format(" %s %d (%.1f %%)", s.name, s.admitted.get(),
				100.0 * s.admitted.get() / Math.max(1, total))));
		figures.append(String.format("; tokens used %d of %.0f", TOKENS_LEFT + (long) (TPM / 60.0 * seconds) - tokensLeft,
				TOKENS_LEFT + TPM / 60.0 * seconds));
		System.out.println("[SharedBudgetAcceptanceTest] " + figures);
		int[] perHalfSecond = new int[(int) (RUN.toMillis() / 500)];
		admissions.stream().mapToLong(t -> (t - drainedAt) / 500_000_000L).filter(d -> d >= 0 && d < perHalfSecond.length)
				.forEach(d -> perHalfSecond[(int) d]++);
		System.out.println("[SharedBudgetAcceptanceTest] admitted per 0.5 s: " + Arrays.toString(perHalfSecond));

		assertThat(stacks).as("every store stayed shared: %s; mode changes %s", figures, changes)
				.allSatisfy(s -> assertThat(s.store.mode()).isEqualTo(Mode.SHARED));
		assertThat(registry.find("aiguard.redis.store.fallbacks").counters()).as("no fallback during the run")
				.isEmpty();
		assertThat((double) total).as(figures.toString()).isBetween(budget * 0.95, budget * 1.05);
		// a fair share is a third; the line in Redis is first come, first served, so a stack whose threads a
		// busy machine schedules later asks later and gets less (15 % seen with both cores kept busy by
		// another process): starved means less than a tenth, which no scheduling delay explains
		assertThat(stacks).as("no stack starved: %s", figures)
				.allSatisfy(s -> assertThat(s.admitted.get()).isGreaterThanOrEqualTo((int) Math.ceil(total * 0.10)));
		assertThat(tokensLeft).as("the token budget held too: %s", figures).isGreaterThanOrEqualTo(-50);
		assertThat(stacks).allSatisfy(s -> assertThat(s.answered.get()).isPositive());
	}
}
