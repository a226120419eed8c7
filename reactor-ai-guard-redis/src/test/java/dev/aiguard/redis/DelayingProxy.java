package dev.aiguard.redis;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;

/**
 * A TCP proxy on a free loopback port in front of a {@link RedisServer} that holds back each of
 * Redis's answers for {@link #delay(Duration)}, in order: every round trip through it takes that much
 * longer, as over a slow network or from a busy Redis. Requests pass at once. Its threads are its own
 * daemons (never Reactor's); {@link #close()} ends them.
 *
 * <pre>{@code
 * try (DelayingProxy proxy = DelayingProxy.start(redis)) {
 *     proxy.delay(Duration.ofMillis(300));     // each answer 300 ms late from here on
 *     RedisSettings.builder(proxy.uri())...
 * }
 * }</pre>
 */
final class DelayingProxy implements AutoCloseable {

	private final ServerSocket server;
	private final int target;
	private final ExecutorService pumps = Executors.newCachedThreadPool(daemons("delaying-proxy-pump"));
	/** One thread writes every delayed answer: the answers of one connection keep their order. */
	private final ScheduledExecutorService answers = Executors.newSingleThreadScheduledExecutor(
			daemons("delaying-proxy-answers"));
	private final List<Socket> sockets = new CopyOnWriteArrayList<>();
	private volatile long delayNanos;

	private DelayingProxy(ServerSocket server, int target) {
		this.server = server;
		this.target = target;
	}

	/** @return a started proxy in front of {@code redis}, without delay yet */
	static DelayingProxy start(RedisServer redis) {
		try {
			ServerSocket server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
			DelayingProxy proxy = new DelayingProxy(server, redis.port());
			proxy.pumps.execute(proxy::accept);
			return proxy;
		}
		catch (IOException e) {
			throw new UncheckedIOException(e);
		}
	}

	private static ThreadFactory daemons(String name) {
		return task -> {
			Thread t = new Thread(task, name);
			t.setDaemon(true);
			return t;
		};
	}

	/** @return {@code redis://127.0.0.1:<proxy port>} */
	String uri() {
		return "redis://127.0.0.1:" + server.getLocalPort();
	}

	/** Holds back every answer sent from now on by {@code delay}. */
	void delay(Duration delay) {
		this.delayNanos = delay.toNanos();
	}

	private void accept() {
		while (!server.isClosed()) {
			try {
				Socket client = server.accept();
				Socket redis = new Socket();
				redis.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), target));
				client.setTcpNoDelay(true);
				redis.setTcpNoDelay(true);
				sockets.add(client);
				sockets.add(redis);
				pumps.execute(() -> forward(client, redis));
				pumps.execute(() -> answer(redis, client));
			}
			catch (IOException closed) {
				return;
			}
		}
	}

	/** Client to Redis: at once. */
	private static void forward(Socket from, Socket to) {
		try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
			in.transferTo(out);
		}
		catch (IOException closed) {
			// either side went away
		}
		closeQuietly(from);
		closeQuietly(to);
	}

	/** Redis to client: each chunk written {@link #delayNanos} after it arrived, never before an earlier one. */
	private void answer(Socket redis, Socket client) {
		byte[] buffer = new byte[16 * 1024];
		long lastDue = 0L;
		try (InputStream in = redis.getInputStream()) {
			OutputStream out = client.getOutputStream();
			for (int n; (n = in.read(buffer)) >= 0;) {
				byte[] chunk = Arrays.copyOf(buffer, n);
				long now = System.nanoTime();
				long due = Math.max(lastDue, now + delayNanos);
				lastDue = due;
				answers.schedule(() -> {
					try {
						out.write(chunk);
						out.flush();
					}
					catch (IOException closed) {
						closeQuietly(client);
					}
				}, due - now, TimeUnit.NANOSECONDS);
			}
		}
		catch (IOException closed) {
			// either side went away
		}
		answers.schedule(() -> closeQuietly(client), Math.max(0L, lastDue - System.nanoTime()), TimeUnit.NANOSECONDS);
	}

	private static void closeQuietly(Socket socket) {
		try {
			socket.close();
		}
		catch (IOException ignored) {
			// closing anyway
		}
	}

	@Override
	public void close() {
		try {
			server.close();
		}
		catch (IOException ignored) {
			// closing anyway
		}
		sockets.forEach(DelayingProxy::closeQuietly);
		pumps.shutdownNow();
		answers.shutdownNow();
	}
}
