package dev.aiguard.redis;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import io.lettuce.core.pubsub.RedisPubSubAdapter;
import io.lettuce.core.pubsub.StatefulRedisPubSubConnection;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import reactor.core.publisher.Mono;

import dev.aiguard.breaker.BreakerConfig;
import dev.aiguard.breaker.BreakerState;
import dev.aiguard.breaker.CircuitBreaker;
import dev.aiguard.core.Outcome;

/**
 * A thousand syncs, in batches of fifty on one Lettuce client each, closed right after their breaker
 * tripped (and, for every other one, closed again): every transition published before {@code close()}
 * reaches Redis, in the order it happened, every close returns at once, and once a batch is closed no
 * thread of the syncs is left and none sits in Lettuce's endpoint lock; once the clients are shut down,
 * no Lettuce thread is left either.
 */
@ExtendWith(RedisServerExtension.class)
class RedisBreakerSyncCloseStressTest {

	private static final int BATCHES = 20;
	private static final int SYNCS = 50;
	/** A second per command: fifty syncs connect at once on two Lettuce I/O threads of a busy machine. */
	private static final Duration COMMAND_TIMEOUT = Duration.ofSeconds(1);
	/** {@code close()} only hands the queue to the sync's worker: a second is room for a loaded machine. */
	private static final Duration CLOSE_BOUND = Duration.ofSeconds(1);
	/**
	 * How long the transitions and the threads may take once a batch is closed: each sync drains its
	 * queue within four command timeouts (4 s), then closes its connections; the rest is room for a
	 * loaded machine.
	 */
	private static final Duration END_BOUND = Duration.ofSeconds(10);
	/**
	 * How long fifty syncs may take to connect: a hundred connections and their handshakes on two Lettuce
	 * I/O threads of a cold JVM, on a machine shared with other builds (a batch is seen to take tens of
	 * seconds at a load of 40 on two cores; this test is about closing, not about connecting).
	 */
	private static final Duration CONNECT_BOUND = Duration.ofSeconds(60);

	private static BreakerConfig config() {
		return BreakerConfig.custom()
				.failureRateThreshold(0.5)
				.minimumCalls(2)
				.openWait(Duration.ofMinutes(1))
				.openWaitJitter(0)
				.minimumDwell(Duration.ZERO)
				.build();
	}

	@Test
	@Timeout(value = 10, unit = TimeUnit.MINUTES) // twenty batches of the bounds above, not the module's 90 s
	void aTransitionPublishedJustBeforeCloseReachesRedisAndNoThreadIsLeft(RedisServer redis) throws Exception {
		CloseStress stress = new CloseStress(CLOSE_BOUND);
		RedisSettings settings = RedisSettings.builder(redis.uri())
				.commandTimeout(COMMAND_TIMEOUT)
				.connectTimeout(Duration.ofSeconds(5))
				.reconnectDelay(Duration.ofMillis(200))
				.build();
		// what reached Redis: every message on the breakers' channels, per channel, in order
		Map<String, List<BreakerState>> heard = new ConcurrentHashMap<>();
		RedisEndpoint watch = RedisEndpoint.create(settings);
		try {
			watch(watch, new RedisPubSubAdapter<>() {
				@Override
				public void message(String pattern, String channel, String message) {
					BreakerMessage m = BreakerMessage.decode(message);
					heard.computeIfAbsent(channel, c -> new CopyOnWriteArrayList<>()).add(m == null ? null : m.state());
				}
			});

			for (int batch = 0; batch < BATCHES; batch++) {
				closeABatch(redis, settings, stress, heard, batch);
			}
		}
		finally {
			watch.close();
		}
		stress.assertNoLettuceThreadLeft("the batches and the watcher", END_BOUND);
		stress.report("RedisBreakerSyncCloseStressTest", BATCHES * SYNCS);
	}

	/**
	 * Connects a watcher subscribed to every breaker channel. A cold JVM on a busy machine may miss the
	 * connection's handshake or find the connection still coming up, so it tries again (on this thread:
	 * nothing blocks a Reactor one) until Redis takes the subscription, within the connect bound.
	 */
	private static void watch(RedisEndpoint endpoint, RedisPubSubAdapter<String, String> listener) throws Exception {
		long giveUp = System.nanoTime() + CONNECT_BOUND.toNanos();
		for (;;) {
			StatefulRedisPubSubConnection<String, String> watcher = null;
			try {
				watcher = endpoint.connectPubSub().get(CONNECT_BOUND.toMillis(), TimeUnit.MILLISECONDS);
				watcher.addListener(listener);
				watcher.async().psubscribe("aiguard:breaker:*").get(COMMAND_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
				return;
			}
			catch (ExecutionException | TimeoutException e) {
				if (watcher != null) {
					watcher.closeAsync();
				}
				if (System.nanoTime() > giveUp) {
					throw e;
				}
				Mono.delay(Duration.ofMillis(100)).block();
			}
		}
	}

	private static void closeABatch(RedisServer redis, RedisSettings settings, CloseStress stress,
			Map<String, List<BreakerState>> heard, int batch) throws Exception {
		RedisEndpoint endpoint = RedisEndpoint.create(settings);
		List<RedisBreakerSync> syncs = new ArrayList<>();
		try {
			List<CircuitBreaker> breakers = new ArrayList<>();
			List<CompletableFuture<Void>> attached = new ArrayList<>();
			for (int i = 0; i < SYNCS; i++) {
				String name = "stress-" + batch + "-" + i;
				RedisBreakerSync sync = RedisBreakerSync.builder(endpoint).instanceId(name).build();
				syncs.add(sync);
				CircuitBreaker breaker = CircuitBreaker.of(name, config());
				breakers.add(breaker);
				attached.add(sync.attach(breaker));
			}
			try {
				CompletableFuture.allOf(attached.toArray(CompletableFuture[]::new)).get(CONNECT_BOUND.toMillis(),
						TimeUnit.MILLISECONDS);
			}
			catch (TimeoutException e) {
				throw new AssertionError("batch " + batch + ": " + attached.stream().filter(f -> !f.isDone()).count()
						+ " of " + SYNCS + " syncs not connected within " + CONNECT_BOUND, e);
			}

			Map<String, List<BreakerState>> published = new ConcurrentHashMap<>();
			for (int i = 0; i < SYNCS; i++) {
				CircuitBreaker breaker = breakers.get(i);
				breaker.tryAcquire().record(Outcome.FAILURE, -1);
				breaker.tryAcquire().record(Outcome.FAILURE, -1);
				assertThat(breaker.state()).isEqualTo(BreakerState.OPEN);
				List<BreakerState> expected = new ArrayList<>(List.of(BreakerState.OPEN));
				if (i % 2 == 1) {
					assertThat(breaker.transitionToClosed("closed before the sync")).isTrue();
					expected.add(BreakerState.CLOSED);
				}
				published.put("aiguard:breaker:" + breaker.name(), expected);
				stress.close(syncs.get(i), breaker.name());
			}

			try {
				Await.until("every transition of batch " + batch + " reached Redis", END_BOUND,
						() -> published.keySet().stream().allMatch(c -> heard.getOrDefault(c, List.of()).size()
								>= published.get(c).size()));
			}
			catch (AssertionError e) {
				List<String> missing = published.keySet().stream()
						.filter(c -> heard.getOrDefault(c, List.of()).size() < published.get(c).size())
						.map(c -> c + " heard " + heard.getOrDefault(c, List.of()))
						.sorted()
						.toList();
				throw new AssertionError(e.getMessage() + ": " + missing.size() + " of " + SYNCS + " missing, e.g. "
						+ missing.subList(0, Math.min(5, missing.size())), e);
			}
			published.forEach((channel, states) -> assertThat(heard.get(channel)).as(channel).isEqualTo(states));
			stress.assertNoThreadLeft("aiguard-", END_BOUND);
		}
		finally {
			syncs.forEach(RedisBreakerSync::close);
			endpoint.close();
		}
	}
}
