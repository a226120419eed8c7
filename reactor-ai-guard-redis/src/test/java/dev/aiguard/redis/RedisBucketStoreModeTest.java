package dev.aiguard.redis;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

import dev.aiguard.budget.BucketSpec;
import dev.aiguard.budget.BucketStore.Mode;

/**
 * When a store stops and starts counting on Redis, against a real Redis that stalls ({@code DEBUG
 * SLEEP}), hangs (SIGSTOP) and dies: one slow moment keeps the store shared, a Redis that stays silent
 * moves it to its fallback, and it comes back only after enough answered pings. Every wait here waits
 * for an event (a mode change, answers flowing), bounded by what a loaded machine needs.
 */
@ExtendWith(RedisServerExtension.class)
class RedisBucketStoreModeTest {

	private static final BucketSpec PLENTY = BucketSpec.of("tenant.requests", 1_000_000, Duration.ofMinutes(1));
	/**
	 * The command timeout of the stall test: a stall of {@link #STALL} times out the operations in
	 * flight within {@code STALL - TIMEOUT} = 100 ms of each other, far (300 ms) from the span that would
	 * count as a silent Redis, even when a busy machine runs the timeouts late.
	 */
	private static final Duration TIMEOUT = Duration.ofMillis(400);
	private static final String STALL = "0.5";

	private final Instances slowTimeouts = new Instances(TIMEOUT);
	private final Instances shortTimeouts = new Instances();
	private final List<StoreModeChange> changes = new CopyOnWriteArrayList<>();

	@AfterEach
	void close() {
		slowTimeouts.close();
		shortTimeouts.close();
	}

	/** One answer of the traffic: how long it took, or -1 when it failed. */
	private static Disposable traffic(RedisBucketStore store, ConcurrentLinkedQueue<Long> nanos) {
		return Flux.interval(Duration.ofMillis(5))
				.flatMap(i -> {
					long start = System.nanoTime();
					return Mono.fromFuture(() -> store.tryTake(PLENTY, "acme", 1))
							.map(t -> t.taken() ? System.nanoTime() - start : -1L)
							.onErrorReturn(-1L);
				})
				.subscribe(nanos::add);
	}

	@Test
	void oneStallOfRedisTimesOutTheOperationsInFlightButKeepsTheStoreShared(RedisServer redis) throws Exception {
		RedisBucketStore store = slowTimeouts.store(redis, b -> b.name("steady").listener(changes::add));
		changes.clear(); // the first connection is behind us
		ConcurrentLinkedQueue<Long> answers = new ConcurrentLinkedQueue<>();
		Disposable load = traffic(store, answers);
		try {
			Await.until("traffic flows", Duration.ofSeconds(2), () -> answers.size() > 20);

			// answered once the stall is over
			assertThat(redis.send("DEBUG", "SLEEP", STALL).get(10, TimeUnit.SECONDS)).isEqualTo("OK");
			int after = answers.size();
			Await.until("traffic flows on after the stall", Duration.ofSeconds(3), () -> answers.size() > after + 20);
		}
		finally {
			load.dispose();
		}

		assertThat(answers).as("the operations in flight timed out and were answered by the local share")
				.anyMatch(n -> n >= TIMEOUT.toNanos());
		assertThat(answers).as("every request admitted (fail-open)").allMatch(n -> n >= 0);
		assertThat(changes).as("one stall moves nothing").isEmpty();
		assertThat(store.mode()).isEqualTo(Mode.SHARED);
	}

	@Test
	void aSingleSlowOperationIsAnsweredByTheFallbackAndMovesNothing(RedisServer redis) throws Exception {
		RedisBucketStore store = shortTimeouts.store(redis, b -> b.name("single").listener(changes::add));
		changes.clear();
		redis.freeze();
		try {
			long start = System.nanoTime();
			assertThat(store.tryTake(PLENTY, "acme", 1).get(5, TimeUnit.SECONDS).taken()).isTrue();
			assertThat(Duration.ofNanos(System.nanoTime() - start)).as("answered at the command timeout")
					.isGreaterThanOrEqualTo(Instances.COMMAND_TIMEOUT);
			assertThat(store.mode()).isEqualTo(Mode.SHARED);
		}
		finally {
			redis.thaw();
		}
		assertThat(store.tryTake(PLENTY, "acme", 1).get(5, TimeUnit.SECONDS).taken()).as("shared as before").isTrue();
		assertThat(store.mode()).isEqualTo(Mode.SHARED);
		assertThat(changes).isEmpty();
	}

	@Test
	void aRedisThatStaysSilentMovesTheStoreAndOnlyEnoughAnsweredPingsBringItBack(RedisServer redis) throws Exception {
		RedisBucketStore store = shortTimeouts.store(redis, b -> b.name("silent").listener(changes::add));
		changes.clear();
		ConcurrentLinkedQueue<Long> answers = new ConcurrentLinkedQueue<>();
		Disposable load = traffic(store, answers);
		Instant frozenAt;
		Instant thawedAt;
		try {
			Await.until("traffic flows", Duration.ofSeconds(2), () -> answers.size() > 20);
			frozenAt = Instant.now();
			redis.freeze();
			try {
				Await.until("the fall-back", Duration.ofSeconds(5), () -> !changes.isEmpty());
			}
			finally {
				thawedAt = Instant.now();
				redis.thaw();
			}
			Await.until("the return", Duration.ofSeconds(5), () -> changes.size() >= 2);
		}
		finally {
			load.dispose();
		}

		StoreModeChange fell = changes.get(0);
		assertThat(fell.from() + "->" + fell.to()).isEqualTo("SHARED->FALLBACK_OPEN");
		assertThat(fell.reason()).matches("\\d+ operations in a row without an answer within the command timeout of PT0.25S");
		// the first timeout comes one command timeout after the freeze; the rule waits for timeouts spread
		// over one more (a command sent up to half a timeout before the freeze may still be unanswered)
		assertThat(Duration.between(frozenAt, fell.at())).as("not on the first timeout")
				.isGreaterThanOrEqualTo(Instances.COMMAND_TIMEOUT.multipliedBy(3).dividedBy(2));

		StoreModeChange back = changes.get(1);
		assertThat(back.from() + "->" + back.to()).isEqualTo("FALLBACK_OPEN->SHARED");
		assertThat(back.reason()).isEqualTo("redis answered 3 pings in a row");
		// three answers in a row, each probe an interval after the previous one ended: two intervals at
		// least (the clocks of the event and of the test differ by a millisecond at most)
		Duration interval = Instances.settings(redis).probeInterval();
		assertThat(Duration.between(thawedAt, back.at())).as("the return waits for the hysteresis")
				.isGreaterThanOrEqualTo(interval.multipliedBy(2).minusMillis(2));
		// listeners hear of a change before the store shows it
		Await.until("the store shows the mode its listeners heard of", Duration.ofSeconds(1),
				() -> store.mode() == Mode.SHARED);
		assertThat(changes).hasSize(2);
		// each answered by its own deadline, none hung: the command timeout and a second for a busy machine's
		// late timers (0.67 s seen with both cores kept busy by another process)
		assertThat(answers).as("every request admitted (fail-open), none waited past the bound")
				.allSatisfy(n -> assertThat(n).isBetween(0L, Instances.COMMAND_TIMEOUT.plusSeconds(1).toNanos()));
	}

	@Test
	void listenersHearOfAChangeBeforeTheStoreShowsIt(RedisServer redis) throws Exception {
		AtomicReference<RedisBucketStore> self = new AtomicReference<>();
		List<String> heard = new CopyOnWriteArrayList<>();
		RedisBucketStore store = shortTimeouts.store(redis, b -> b.name("ordered").listener(change -> {
			RedisBucketStore s = self.get();
			if (s != null) {
				heard.add(change.from() + "->" + change.to() + " while " + s.mode());
			}
		}));
		self.set(store);

		redis.kill();
		Await.until("fallen back", Duration.ofSeconds(3), () -> store.mode() == Mode.FALLBACK_OPEN);
		assertThat(heard).as("told before the mode changed").containsExactly("SHARED->FALLBACK_OPEN while SHARED");
		redis.restart();
		// bounded by the hysteresis: a reconnection, then sharedAfterProbes pings in a row (Instances.returnBound)
		Await.until("shared again", Instances.returnBound(Instances.settings(redis)), () -> store.mode() == Mode.SHARED);
		// no wait here: a store that shows SHARED has told its listeners
		assertThat(heard).containsExactly("SHARED->FALLBACK_OPEN while SHARED", "FALLBACK_OPEN->SHARED while FALLBACK_OPEN");
	}
}
