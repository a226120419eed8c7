package dev.aiguard.redis;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

import dev.aiguard.budget.BucketSpec;
import dev.aiguard.budget.BucketStore.Mode;
import dev.aiguard.budget.Take;

/** A real Redis killed, frozen and restarted under a running store: the fallback takes over, and shared mode comes back. */
@ExtendWith(RedisServerExtension.class)
class RedisBucketStoreFaultTest {

	/**
	 * The command timeout of the kill tests. A kill is noticed by the lost connection, not by a timeout;
	 * a timeout this long keeps a cold JVM on a busy machine from falling back before the kill.
	 */
	private static final Duration KILL_TIMEOUT = Duration.ofSeconds(1);
	/** The most any answer may take: the longer command timeout plus room for a loaded machine. */
	private static final Duration ANSWER_BOUND = KILL_TIMEOUT.plusMillis(500);
	/**
	 * The most an operation on a hung Redis may take: the command timeout's deadline (one, for one
	 * operation) and a second for a busy machine, whose timers run late (0.62 s seen for a 0.25 s
	 * deadline with both cores kept busy by another process). A hang is a future that never completes.
	 */
	private static final Duration HUNG_BOUND = Instances.COMMAND_TIMEOUT.plusSeconds(1);
	private static final BucketSpec TEN_PER_HOUR = BucketSpec.of("provider.requests", 10, Duration.ofHours(1));
	private static final BucketSpec PLENTY_OF_ROOM = BucketSpec.of("tenant.tokens", 1_000, Duration.ofHours(1));
	private static final BucketSpec PLENTY = BucketSpec.of("tenant.requests", 1_000_000, Duration.ofMinutes(1));

	private final Instances instances = new Instances(KILL_TIMEOUT);
	private final Instances shortTimeouts = new Instances();
	private final List<StoreModeChange> changes = new CopyOnWriteArrayList<>();
	private final SimpleMeterRegistry registry = new SimpleMeterRegistry();

	@AfterEach
	void close() {
		instances.close();
		shortTimeouts.close();
	}

	/** @return how long the store may take to share again after a restart: the hysteresis' bound */
	private static Duration returnBound(RedisServer redis) {
		return Instances.returnBound(Instances.settings(redis, KILL_TIMEOUT));
	}

	private static <T> T await(CompletableFuture<T> future) throws Exception {
		return future.get(ANSWER_BOUND.toMillis(), TimeUnit.MILLISECONDS);
	}

	/** @return the mode changes at or after {@code instant} */
	private List<StoreModeChange> after(Instant instant) {
		return changes.stream().filter(c -> !c.at().isBefore(instant)).toList();
	}

	private double fallbacks(Mode mode) {
		var counter = registry.find("aiguard.redis.store.fallbacks").tag("mode", mode.name()).counter();
		return counter == null ? 0 : counter.count();
	}

	private double gauge(String store, Mode mode) {
		return registry.get("aiguard.redis.store.mode").tag("store", store).tag("mode", mode.name()).gauge().value();
	}

	/** Requests every 5 ms on a budget that never runs out; each answer or failure, and how long it took. */
	private record Answer(boolean taken, Throwable error, long nanos) {
	}

	private Disposable traffic(RedisBucketStore store, ConcurrentLinkedQueue<Answer> answers) {
		return Flux.interval(Duration.ofMillis(5))
				.flatMap(i -> {
					long start = System.nanoTime();
					return Mono.fromFuture(() -> store.tryTake(PLENTY, "acme", 1))
							.map(t -> new Answer(t.taken(), null, System.nanoTime() - start))
							.onErrorResume(e -> Mono.just(new Answer(false, e, System.nanoTime() - start)))
							.timeout(Duration.ofSeconds(2), Mono.just(new Answer(false, new AssertionError("hung"), -1)));
				})
				.subscribe(answers::add);
	}

	@Test
	void failOpenServesOneNthLocallyWhileRedisIsDownAndSharesAgainWhenItIsBack(RedisServer redis) throws Exception {
		RedisBucketStore store = instances.store(redis, b -> b.name("budgets").instances(2).listener(changes::add)
				.metrics(new MicrometerRedisMetrics(registry)));
		changes.clear(); // from here on: the connection (and a cold start's hiccup) is behind us
		double fallbacksBefore = fallbacks(Mode.FALLBACK_OPEN);
		assertThat(gauge("budgets", Mode.SHARED)).isEqualTo(1);
		assertThat(await(store.tryTake(TEN_PER_HOUR, "openai", 2))).isEqualTo(Take.ofTaken(8));
		ConcurrentLinkedQueue<Answer> answers = new ConcurrentLinkedQueue<>();
		Disposable load = traffic(store, answers);
		Await.until("traffic flows", Duration.ofSeconds(2), () -> answers.size() > 20);

		Instant killedAt = Instant.now();
		redis.kill();
		Await.until("fallback after the kill", Duration.ofSeconds(1), () -> store.mode() == Mode.FALLBACK_OPEN
				&& !after(killedAt).isEmpty());

		// on a busy machine a slow answer may have caused a short fallback before the kill: judge from the kill on
		StoreModeChange fellBack = after(killedAt).get(0);
		assertThat(Duration.between(killedAt, fellBack.at())).isLessThan(Duration.ofSeconds(1));
		assertThat(fellBack.from()).isEqualTo(Mode.SHARED);
		assertThat(fellBack.to()).isEqualTo(Mode.FALLBACK_OPEN);
		assertThat(fellBack.store()).isEqualTo("budgets");
		assertThat(fellBack.reason()).isNotBlank(); // Lettuce's disconnect notice or the first failed command
		assertThat(gauge("budgets", Mode.FALLBACK_OPEN)).isEqualTo(1);
		assertThat(gauge("budgets", Mode.SHARED)).isZero();
		assertThat(fallbacks(Mode.FALLBACK_OPEN)).isGreaterThanOrEqualTo(fallbacksBefore + 1);
		// the local share of 10 per hour over 2 instances holds at most 5, and starts from this
		// instance's part of what the shared bucket had left: 8 / 2
		int admitted = 0;
		for (int i = 0; i < 8; i++) {
			admitted += await(store.tryTake(TEN_PER_HOUR, "openai", 1)).taken() ? 1 : 0;
		}
		assertThat(admitted).isEqualTo(4);
		// the empty share queues a reservation on its own refill: 5 per hour over 2 instances, one every 12 min
		Take queued = await(store.reserve(TEN_PER_HOUR, "openai", 1, Duration.ofHours(1).toNanos()));
		assertThat(queued.taken()).isTrue();
		assertThat(Duration.ofNanos(queued.nanosToWait())).isBetween(Duration.ofMinutes(11), Duration.ofMinutes(12));
		assertThat(await(store.tryTake(PLENTY_OF_ROOM, "fresh", 1))).as("a bucket never used while shared starts full")
				.isEqualTo(Take.ofTaken(PLENTY_OF_ROOM.capacity() / 2 - 1));

		int answeredBeforeRestart = answers.size();
		redis.restart();
		// the event, then the mode: listeners hear of a change before the store shows it, and the test reads
		// the events below (three answered pings, 100 ms apart, after the restart)
		Await.until("the FALLBACK_OPEN->SHARED event after the restart", returnBound(redis),
				() -> after(killedAt).size() >= 2);
		Await.until("the store shows the mode its listeners heard of", Duration.ofSeconds(1),
				() -> store.mode() == Mode.SHARED);
		Await.until("traffic flows on", Duration.ofSeconds(2), () -> answers.size() > answeredBeforeRestart + 20);
		load.dispose();

		assertThat(after(killedAt)).extracting(c -> c.from() + "->" + c.to()).containsExactly("SHARED->FALLBACK_OPEN",
				"FALLBACK_OPEN->SHARED");
		assertThat(after(killedAt).get(1).reason()).isEqualTo("redis answered 3 pings in a row");
		assertThat(gauge("budgets", Mode.SHARED)).isEqualTo(1);
		assertThat(await(store.tryTake(TEN_PER_HOUR, "openai", 10))).as("the restarted Redis kept nothing")
				.isEqualTo(Take.ofTaken(0));
		assertThat(answers).as("every request answered, none hung, none failed in fail-open")
				.allSatisfy(a -> {
					assertThat(a.error()).isNull();
					assertThat(a.taken()).isTrue();
					assertThat(Duration.ofNanos(a.nanos())).isLessThan(ANSWER_BOUND);
				});
	}

	@Test
	void failClosedRefusesQuicklyWhileRedisIsDownAndSharesAgainWhenItIsBack(RedisServer redis) throws Exception {
		RedisBucketStore store = instances.store(redis, b -> b.name("strict").instances(2)
				.fallback(RedisBucketStore.Fallback.CLOSED).listener(changes::add)
				.metrics(new MicrometerRedisMetrics(registry)));
		changes.clear();
		double fallbacksBefore = fallbacks(Mode.FALLBACK_CLOSED);
		ConcurrentLinkedQueue<Answer> answers = new ConcurrentLinkedQueue<>();
		Disposable load = traffic(store, answers);
		Await.until("traffic flows", Duration.ofSeconds(2), () -> answers.size() > 20);

		Instant killedAt = Instant.now();
		redis.kill();
		Await.until("fallback after the kill", Duration.ofSeconds(1), () -> store.mode() == Mode.FALLBACK_CLOSED
				&& !after(killedAt).isEmpty());
		int refusedFrom = answers.size();
		Await.until("refusals flow", Duration.ofSeconds(2), () -> answers.size() > refusedFrom + 20);

		assertThat(gauge("strict", Mode.FALLBACK_CLOSED)).isEqualTo(1);
		assertThat(fallbacks(Mode.FALLBACK_CLOSED)).isGreaterThanOrEqualTo(fallbacksBefore + 1);
		long start = System.nanoTime();
		CompletableFuture<Take> refused = store.tryTake(TEN_PER_HOUR, "openai", 1);
		assertThat(refused).failsWithin(ANSWER_BOUND).withThrowableThat()
				.withCauseInstanceOf(SharedStoreUnavailableException.class)
				.withMessageContaining("'strict' cannot reach Redis and fails closed");
		assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(ANSWER_BOUND);
		assertThat(store.reserve(TEN_PER_HOUR, "openai", 1, Duration.ofHours(1).toNanos())).as("a reservation too")
				.failsWithin(ANSWER_BOUND).withThrowableThat()
				.withCauseInstanceOf(SharedStoreUnavailableException.class);
		assertThat(await(store.available(TEN_PER_HOUR, "openai"))).isZero();

		redis.restart();
		Await.until("the FALLBACK_CLOSED->SHARED event after the restart", returnBound(redis),
				() -> after(killedAt).size() >= 2);
		Await.until("the store shows the mode its listeners heard of", Duration.ofSeconds(1),
				() -> store.mode() == Mode.SHARED);
		int sharedFrom = answers.size();
		Await.until("admissions flow again", Duration.ofSeconds(2), () -> answers.size() > sharedFrom + 20);
		load.dispose();

		assertThat(after(killedAt)).extracting(c -> c.from() + "->" + c.to()).containsExactly(
				"SHARED->FALLBACK_CLOSED", "FALLBACK_CLOSED->SHARED");
		assertThat(answers).as("every request answered within the bound, none hung").allSatisfy(
				a -> assertThat(Duration.ofNanos(a.nanos())).isBetween(Duration.ZERO, ANSWER_BOUND));
		assertThat(answers).as("no request admitted while Redis was down: each refusal is the typed one")
				.filteredOn(a -> !a.taken())
				.isNotEmpty()
				.allSatisfy(a -> assertThat(a.error()).isInstanceOf(SharedStoreUnavailableException.class));
		assertThat(answers.stream().skip(sharedFrom)).as("after the restart, admitted again").anyMatch(Answer::taken);
	}

	@Test
	void anOperationAHungRedisDoesNotAnswerIsAnsweredByTheLocalShareAtTheCommandTimeout(RedisServer redis)
			throws Exception {
		RedisBucketStore store = shortTimeouts.store(redis, b -> b.name("budgets").instances(4).listener(changes::add));
		BucketSpec eight = BucketSpec.of("provider.requests", 8, Duration.ofHours(1));

		changes.clear(); // from here on: the connection is behind us
		redis.freeze();
		try {
			long start = System.nanoTime();
			// the event: the answer, whenever the store's worker gets to run its deadline on a busy machine
			Take take = store.tryTake(eight, "openai", 1).get(HUNG_BOUND.toMillis(), TimeUnit.MILLISECONDS);
			Duration took = Duration.ofNanos(System.nanoTime() - start);

			assertThat(take).as("answered by the local share of 8 / 4").isEqualTo(Take.ofTaken(1));
			assertThat(took).as("by the command timeout's deadline, not before it (mode changes: %s)", changes)
					.isBetween(Duration.ofMillis(200), HUNG_BOUND);
			// one operation without an answer is one slow moment: the rule needs fallbackAfterTimeouts of them
			// in a row, a command timeout apart, so no change was even decided (RedisBucketStoreModeTest)
			assertThat(changes).as("no mode change decided").isEmpty();
			assertThat(store.mode()).isEqualTo(Mode.SHARED);
		}
		finally {
			redis.thaw();
		}
		// the timed-out command ran when Redis woke up: the shared budget paid for a request the local share
		// admitted, so the request was admitted once and charged at most twice, never admitted twice
		assertThat(await(store.available(eight, "openai"))).isBetween(7L, 8L);
	}
}
