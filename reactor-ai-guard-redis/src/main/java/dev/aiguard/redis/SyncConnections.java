package dev.aiguard.redis;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;
import java.util.function.Supplier;

import io.lettuce.core.RedisFuture;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.async.RedisAsyncCommands;
import io.lettuce.core.pubsub.RedisPubSubListener;
import io.lettuce.core.pubsub.StatefulRedisPubSubConnection;
import org.jspecify.annotations.Nullable;
import reactor.core.Disposable;

/**
 * The two connections of a {@link RedisBreakerSync} (commands, and pub/sub) and the queue of its
 * publications, on one {@link ConnectionWorker}: every command is written on the worker and the
 * connections are closed there, so no write races a close. Publications are sent one at a time, in
 * the order the breaker's transitions happened (a trip's four commands before the close that follows
 * it).
 *
 * <p>Closing takes no new publication and sends the queued ones, then closes the connections and ends
 * the worker's thread. It is bounded: {@code drainMillis} after {@link #close()} the publications not
 * sent yet are given up (each told so) and the connections close at once.
 */
final class SyncConnections {

	/** A breaker transition to send: its commands, and who hears whether it was sent. */
	interface Publication {

		/** @return the commands' outcome; called on the worker, each command through {@link #command} */
		CompletableFuture<?> send();

		/** @param error {@code null} when the publication reached Redis, else why it did not */
		void settled(@Nullable Throwable error);
	}

	private record Pair(StatefulRedisConnection<String, String> commands,
			StatefulRedisPubSubConnection<String, String> pubSub) {
	}

	private final RedisEndpoint endpoint;
	private final ConnectionWorker worker;
	private final Supplier<String[]> channels;
	private final RedisPubSubListener<String, String> listener;
	private final long timeoutMillis;
	private final long drainMillis;
	private final CompletableFuture<Void> ready = new CompletableFuture<>();

	// the worker's own: read and written on the worker only
	private final ArrayDeque<Publication> queue = new ArrayDeque<>();
	private boolean sending;
	private boolean closing;
	private Disposable drainBound = () -> { };

	private volatile boolean closed;
	/** The connections are closed (or closing): nothing is written any more. */
	private volatile boolean shut;
	private volatile @Nullable StatefulRedisConnection<String, String> commands;
	private volatile @Nullable StatefulRedisPubSubConnection<String, String> pubSub;

	/**
	 * @param channels the channels to subscribe to once connected (the breakers attached so far)
	 * @param listener hears the messages on them
	 */
	SyncConnections(RedisEndpoint endpoint, String instanceId, Supplier<String[]> channels,
			RedisPubSubListener<String, String> listener) {
		this.endpoint = endpoint;
		this.worker = new ConnectionWorker("aiguard-redis-sync-" + instanceId, null);
		this.channels = channels;
		this.listener = listener;
		this.timeoutMillis = Math.max(1, endpoint.settings().commandTimeout().toMillis());
		// a trip is the longest publication: INCR, INCR, PEXPIRE and PUBLISH, each bounded by the command timeout
		this.drainMillis = 4 * timeoutMillis;
	}

	/** Starts connecting; while Redis cannot be reached, tries again every reconnect delay. */
	void connect() {
		worker.run(this::connectNow);
	}

	private void connectNow() {
		if (closed) {
			return;
		}
		CompletableFuture<StatefulRedisConnection<String, String>> c = endpoint.connectStrings();
		CompletableFuture<StatefulRedisPubSubConnection<String, String>> p = endpoint.connectPubSub();
		c.thenCombine(p, Pair::new).whenComplete((pair, error) -> {
			if (error != null) {
				c.thenAccept(StatefulRedisConnection::closeAsync);
				p.thenAccept(StatefulRedisPubSubConnection::closeAsync);
				worker.after(endpoint.settings().reconnectDelay(), this::connectNow);
			}
			// installed on the worker, so that closing (also there) sees them or they see it closed
			else if (!worker.run(() -> install(pair))) {
				closeBoth(pair); // nothing was written on them
			}
		});
	}

	private void install(Pair pair) {
		if (closed) {
			closeBoth(pair);
			return;
		}
		pair.pubSub().addListener(listener);
		commands = pair.commands();
		pubSub = pair.pubSub();
		// breakers attached before now: subscribe() saw no connection and left their channels to this
		String[] all = channels.get();
		CompletableFuture<?> subscribed = all.length == 0 ? CompletableFuture.completedFuture(null)
				: worker.deadline(pair.pubSub().async().subscribe(all).toCompletableFuture(), timeoutMillis);
		subscribed.whenComplete((ok, error) -> {
			if (error == null) {
				ready.complete(null);
			}
			else {
				worker.run(() -> retry(pair));
			}
		});
	}

	/** The subscription failed: drop the pair and connect again. */
	private void retry(Pair pair) {
		if (commands == pair.commands()) {
			commands = null;
			pubSub = null;
		}
		closeBoth(pair);
		worker.after(endpoint.settings().reconnectDelay(), this::connectNow);
	}

	private static void closeBoth(Pair pair) {
		pair.commands().closeAsync();
		pair.pubSub().closeAsync();
	}

	/** @return completed once connected and subscribed to the channels of the breakers attached so far */
	CompletableFuture<Void> ready() {
		return ready.copy();
	}

	/**
	 * Subscribes to {@code channel}, on the worker; before the first connection the subscription is left
	 * to connecting (which subscribes to every channel then attached).
	 *
	 * @return completed once subscribed
	 */
	CompletableFuture<Void> subscribe(String channel) {
		CompletableFuture<Void> done = new CompletableFuture<>();
		boolean handed = worker.run(() -> {
			StatefulRedisPubSubConnection<String, String> sub = pubSub;
			if (sub == null || shut) {
				ready.whenComplete((ok, error) -> done.complete(null));
				return;
			}
			sub.async().subscribe(channel).whenComplete((ok, error) -> {
				if (error == null) {
					done.complete(null);
				}
				else {
					done.completeExceptionally(error);
				}
			});
		});
		if (!handed) {
			done.completeExceptionally(new IllegalStateException("the sync is closed"));
		}
		return done;
	}

	/** Unsubscribes from {@code channel}, on the worker. */
	void unsubscribe(String channel) {
		worker.run(() -> {
			StatefulRedisPubSubConnection<String, String> sub = pubSub;
			if (sub != null && !shut) {
				sub.async().unsubscribe(channel);
			}
		});
	}

	/** @return whether there is a command connection now (else a publication would not be sent) */
	boolean connected() {
		return commands != null && !shut;
	}

	/**
	 * @return the answer to {@code command}, written on the worker; failed when not answered within the
	 *         command timeout, when not connected, or once the connections are closed
	 */
	<T> CompletableFuture<T> command(Function<RedisAsyncCommands<String, String>, RedisFuture<T>> command) {
		CompletableFuture<T> answer = new CompletableFuture<>();
		if (!worker.run(() -> write(command, answer))) {
			answer.completeExceptionally(new IllegalStateException("the sync is closed"));
		}
		return answer;
	}

	private <T> void write(Function<RedisAsyncCommands<String, String>, RedisFuture<T>> command,
			CompletableFuture<T> answer) {
		StatefulRedisConnection<String, String> c = commands;
		if (c == null || shut) {
			answer.completeExceptionally(new IllegalStateException(shut ? "the sync is closed" : "not connected to redis"));
			return;
		}
		try {
			worker.deadline(command.apply(c.async()).toCompletableFuture(), timeoutMillis).whenComplete((v, e) -> {
				if (e == null) {
					answer.complete(v);
				}
				else {
					answer.completeExceptionally(e);
				}
			});
		}
		catch (RuntimeException e) {
			answer.completeExceptionally(e);
		}
	}

	/** Queues {@code publication} behind the ones before it; once closed it is settled as not sent. */
	void publish(Publication publication) {
		if (closed || !worker.run(() -> enqueue(publication))) {
			publication.settled(new IllegalStateException("the sync is closed"));
		}
	}

	private void enqueue(Publication publication) {
		if (shut) {
			publication.settled(new IllegalStateException("the sync is closed"));
			return;
		}
		queue.add(publication);
		next();
	}

	/** Sends the next publication when none is under way; once closing and all are sent, shuts. */
	private void next() {
		if (sending || shut) {
			return;
		}
		Publication p = queue.poll();
		if (p == null) {
			if (closing) {
				shut();
			}
			return;
		}
		sending = true;
		CompletableFuture<?> sent;
		try {
			sent = p.send();
		}
		catch (RuntimeException e) {
			sent = CompletableFuture.failedFuture(e);
		}
		sent.whenComplete((ok, error) -> {
			p.settled(error);
			worker.runOrHere(() -> {
				sending = false;
				next();
			});
		});
	}

	/**
	 * Takes no new publication and returns at once; the worker sends the queued ones, then closes the
	 * connections and ends, within {@code drainMillis} whatever Redis does.
	 */
	void close() {
		if (closed) {
			return;
		}
		closed = true;
		worker.run(() -> {
			closing = true;
			drainBound = worker.after(Duration.ofMillis(drainMillis), this::shut);
			next();
		});
	}

	/** Gives up what is still queued, closes both connections and ends the worker; on the worker. */
	private void shut() {
		if (shut) {
			return;
		}
		shut = true;
		drainBound.dispose();
		for (Publication p = queue.poll(); p != null; p = queue.poll()) {
			p.settled(new IllegalStateException("not sent within " + drainMillis + " ms of closing the sync"));
		}
		StatefulRedisPubSubConnection<String, String> sub = pubSub;
		StatefulRedisConnection<String, String> c = commands;
		CompletableFuture<Void> closedSub = sub == null ? CompletableFuture.completedFuture(null) : sub.closeAsync();
		CompletableFuture<Void> closedCommands = c == null ? CompletableFuture.completedFuture(null) : c.closeAsync();
		CompletableFuture.allOf(closedSub, closedCommands).whenComplete((ok, error) -> worker.end());
	}

	/** @return completed once the connections are closed and the worker has ended (for tests) */
	CompletableFuture<Void> terminated() {
		return worker.terminated();
	}
}
