package dev.aiguard.redis;

import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import io.github.bucket4j.redis.lettuce.RedisApi;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.async.RedisAsyncCommands;
import org.jspecify.annotations.Nullable;

/**
 * The command connection as Bucket4j sees it, with every answer handed to the store's worker before
 * Bucket4j hears of it. Bucket4j starts a bucket's next round trip (the compare-and-swap after a read, a
 * retry after a lost swap, the next batch of a hot key) from the previous one's answer; Lettuce completes
 * an answer on its event loop, so without the hand-over that event loop would write the next command
 * itself, contending with the worker for the connection's endpoint lock — a wait on a thread that must
 * never wait. With it, the worker is the only thread that writes on the command connection.
 *
 * <p>Once the worker has ended (the connection is closed by then), an answer fails where it arrives
 * instead: whatever Bucket4j writes after that meets a closed connection, which refuses a command
 * before it takes any lock.
 */
final class WorkerAnswers<K> implements RedisApi<K> {

	private final RedisAsyncCommands<K, byte[]> commands;
	private final ConnectionWorker worker;

	/**
	 * @param commands the command connection's commands; generic in the key type, as Bucket4j hands its
	 *        keys over in an array of its own making (an {@code Object[]}, not a {@code String[]})
	 */
	WorkerAnswers(RedisAsyncCommands<K, byte[]> commands, ConnectionWorker worker) {
		this.commands = commands;
		this.worker = worker;
	}

	@Override
	public <V> RedisFuture<V> eval(String script, ScriptOutputType type, K[] keys, byte[][] args) {
		return onWorker(commands.eval(script, type, keys, args));
	}

	@Override
	public RedisFuture<byte[]> get(K key) {
		return onWorker(commands.get(key));
	}

	@Override
	@SuppressWarnings("unchecked") // one key: the array Lettuce's varargs take, holding nothing but a K
	public RedisFuture<?> delete(K key) {
		return onWorker(commands.del(key));
	}

	private <V> RedisFuture<V> onWorker(RedisFuture<V> sent) {
		Answer<V> answer = new Answer<>();
		sent.whenComplete((value, error) -> {
			if (!worker.run(() -> answer.settle(value, error))) {
				answer.completeExceptionally(new IllegalStateException("the store's worker has ended"));
			}
		});
		return answer;
	}

	/** A command's answer, completed on the worker. */
	private static final class Answer<V> extends CompletableFuture<V> implements RedisFuture<V> {

		void settle(@Nullable V value, @Nullable Throwable error) {
			if (error != null) {
				completeExceptionally(error);
			}
			else {
				complete(value);
			}
		}

		@Override
		public @Nullable String getError() {
			if (!isCompletedExceptionally()) {
				return null;
			}
			try {
				join();
				return null;
			}
			catch (RuntimeException e) {
				Throwable cause = e.getCause() == null ? e : e.getCause();
				return String.valueOf(cause.getMessage());
			}
		}

		@Override
		public boolean await(long timeout, TimeUnit unit) throws InterruptedException {
			try {
				get(timeout, unit);
			}
			catch (ExecutionException | CancellationException e) {
				// done, with an error
			}
			catch (TimeoutException e) {
				return false;
			}
			return true;
		}
	}
}
