package dev.aiguard.redis;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import dev.aiguard.budget.BucketSpec;
import dev.aiguard.budget.BucketStore.Mode;

/**
 * A thousand stores closed while their budget commands, health pings and connects are in flight, in
 * batches of fifty on one Lettuce client each: every close returns at once, every operation is
 * answered, and once a batch is closed no store thread is left and no thread anywhere sits in
 * Lettuce's endpoint lock ({@code SharedLock}) — spinning or parked; once its client is shut down, no
 * Lettuce thread is left either.
 */
@ExtendWith(RedisServerExtension.class)
class RedisStoreCloseStressTest {

	private static final int BATCHES = 20;
	private static final int STORES = 50;
	/** Closed while connecting, then while commands are in flight, the rest while they fall back and ping. */
	private static final int CONNECTING = 10;
	private static final int COMMANDING = 30;
	/**
	 * The most one {@code close()} may take: it only sets flags and hands the connections to the store's
	 * worker, so a second is room for a loaded machine's scheduling, far from a close that hangs.
	 */
	private static final Duration CLOSE_BOUND = Duration.ofSeconds(1);
	/**
	 * How long a batch's threads may take to end once closed: the operations in flight drain within twice
	 * the command timeout (2 s), then the connections close; the rest is room for a loaded machine.
	 */
	private static final Duration END_BOUND = Duration.ofSeconds(10);
	/** How long forty stores may take to connect (two Lettuce I/O threads, a cold JVM, a busy machine). */
	private static final Duration CONNECT_BOUND = Duration.ofSeconds(30);
	private static final BucketSpec SPEC = BucketSpec.of("tenant.requests", 1_000, Duration.ofMinutes(1));

	private final List<CompletableFuture<?>> answers = new ArrayList<>();
	private final CloseStress stress = new CloseStress(CLOSE_BOUND);

	/** Starts one operation of each kind on {@code store}, without waiting for them. */
	private void traffic(RedisBucketStore store, int i) {
		String id = "tenant-" + (i % 5);
		answers.add(store.tryTake(SPEC, id, 1));
		answers.add(store.reserve(SPEC, id, 1, Duration.ofSeconds(1).toNanos()));
		answers.add(store.available(SPEC, id));
		answers.add(store.takeRegardless(SPEC, id, 1));
	}

	private void close(RedisBucketStore store) throws Exception {
		stress.close(store, store.name());
	}

	@Test
	void aThousandStoresClosedWhileCommandsPingsAndConnectsAreInFlightLeaveNoThreadBehind(RedisServer redis)
			throws Exception {
		for (int batch = 0; batch < BATCHES; batch++) {
			RedisEndpoint endpoint = RedisEndpoint.create(RedisSettings.builder(redis.uri())
					// a second for a command and a connection's handshake: forty stores connect at once, on two
					// Lettuce I/O threads of a busy machine (this test is about closing, not about timeouts)
					.commandTimeout(Duration.ofSeconds(1))
					.connectTimeout(Duration.ofSeconds(2))
					.reconnectDelay(Duration.ofMillis(5))
					.probeInterval(Duration.ofMillis(5))
					.sharedAfterProbes(1000) // a store that fell back keeps pinging until it is closed
					.build());
			List<RedisBucketStore> stores = new ArrayList<>();
			try {
				for (int i = 0; i < STORES; i++) {
					stores.add(RedisBucketStore.builder(endpoint).name("stress-" + batch + "-" + i).build());
				}
				for (int i = 0; i < CONNECTING; i++) {
					traffic(stores.get(i), i);
					close(stores.get(i));
				}
				List<RedisBucketStore> rest = stores.subList(CONNECTING, STORES);
				// a cold JVM on a loaded machine may miss the connect timeout a few times: each store retries
				try {
					Await.until("the batch's other stores are shared", CONNECT_BOUND,
							() -> rest.stream().allMatch(s -> s.mode() == Mode.SHARED));
				}
				catch (AssertionError e) {
					throw new AssertionError(e.getMessage() + " (batch " + batch + ": " + rest.stream()
							.collect(Collectors.groupingBy(RedisBucketStore::mode, Collectors.counting())) + ")", e);
				}
				for (int i = CONNECTING; i < COMMANDING; i++) {
					traffic(stores.get(i), i);
					close(stores.get(i));
				}
				// Redis drops every client: the remaining stores fall back, reconnect and ping every 5 ms
				assertThat(redis.send("CLIENT", "KILL", "TYPE", "normal").get(10, TimeUnit.SECONDS)).matches("\\d+");
				for (int i = COMMANDING; i < STORES; i++) {
					RedisBucketStore s = stores.get(i);
					traffic(s, i);
					if (i % 2 == 0) { // every other one once it has fallen back: its pings are under way
						Await.until(s.name() + " falls back", END_BOUND, () -> s.mode() != Mode.SHARED);
					}
					close(s);
				}

				CompletableFuture.allOf(answers.toArray(CompletableFuture[]::new)).get(END_BOUND.toMillis(),
						TimeUnit.MILLISECONDS);
				List<CompletableFuture<Void>> ends = stores.stream().map(RedisBucketStore::terminated).toList();
				try {
					CompletableFuture.allOf(ends.toArray(CompletableFuture[]::new)).get(END_BOUND.toMillis(),
							TimeUnit.MILLISECONDS);
				}
				catch (java.util.concurrent.TimeoutException e) {
					List<String> open = new ArrayList<>();
					for (int i = 0; i < STORES; i++) {
						if (!ends.get(i).isDone()) {
							open.add(stores.get(i).name() + " " + stores.get(i).mode());
						}
					}
					throw new AssertionError("stores not closed within " + END_BOUND + ": " + open + "; threads: "
							+ CloseStress.threads("aiguard-redis-probe-stress-" + batch + "-") + "; in SharedLock: "
								+ CloseStress.inSharedLock(), e);
				}
				stress.assertNoThreadLeft("aiguard-redis-probe-stress-" + batch + "-", END_BOUND);
			}
			finally {
				stores.forEach(RedisBucketStore::close);
				endpoint.close();
			}
			stress.assertNoLettuceThreadLeft("batch " + batch, END_BOUND);
			answers.clear();
		}
		stress.report("RedisStoreCloseStressTest", BATCHES * STORES);
	}
}
