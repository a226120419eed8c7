package dev.aiguard.redis;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * A real {@code redis-server} (Debian's, {@code /usr/bin/redis-server}) for one test: a free loopback
 * port, a temporary directory, no persistence. {@link #kill()} stops it the hard way (SIGKILL, as a
 * crash would), {@link #restart()} starts it again on the same port. Started and stopped from the test
 * thread, never from a Reactor thread.
 */
final class RedisServer implements AutoCloseable {

	static final Path BINARY = Path.of(System.getProperty("aiguard.redis.server", "/usr/bin/redis-server"));
	private static final long START_TIMEOUT_SECONDS = 10;

	private final int port;
	private final Path dir;
	private Process process;

	private RedisServer(int port, Path dir) {
		this.port = port;
		this.dir = dir;
	}

	/** @return a started server on a free loopback port */
	static RedisServer start() {
		try {
			RedisServer server = new RedisServer(freePort(), Files.createTempDirectory("aiguard-redis-"));
			server.launch();
			return server;
		}
		catch (IOException e) {
			throw new UncheckedIOException(e);
		}
	}

	private static int freePort() throws IOException {
		try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
			socket.setReuseAddress(true);
			return socket.getLocalPort();
		}
	}

	private void launch() {
		if (!Files.isExecutable(BINARY)) {
			throw new IllegalStateException(BINARY + " is missing: install Debian's redis-server (.ci/run does)");
		}
		List<String> command = List.of(BINARY.toString(), "--port", String.valueOf(port), "--bind", "127.0.0.1",
				"--dir", dir.toString(), "--save", "", "--appendonly", "no", "--daemonize", "no",
				"--loglevel", "notice", "--logfile", "", "--protected-mode", "no",
				// DEBUG SLEEP stalls the server for a set time: a slow moment, told apart from a hang
				"--enable-debug-command", "local");
		try {
			process = new ProcessBuilder(command).redirectErrorStream(true).start();
		}
		catch (IOException e) {
			throw new UncheckedIOException(e);
		}
		BufferedReader out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
		// read the log until the server says it listens; keep draining it afterwards so it never blocks on a full pipe
		CompletableFuture<String> ready = new CompletableFuture<>();
		Thread reader = new Thread(() -> {
			StringBuilder seen = new StringBuilder();
			try {
				for (String line; (line = out.readLine()) != null;) {
					if (!ready.isDone()) {
						seen.append(line).append('\n');
						if (line.contains("Ready to accept connections")) {
							ready.complete(line);
						}
					}
				}
			}
			catch (IOException ignored) {
				// the process ended
			}
			ready.completeExceptionally(new IllegalStateException("redis-server on port " + port
					+ " ended before it was ready:\n" + seen));
		}, "redis-server-" + port + "-log");
		reader.setDaemon(true);
		reader.start();
		try {
			ready.get(START_TIMEOUT_SECONDS, TimeUnit.SECONDS);
		}
		catch (Exception e) {
			process.destroyForcibly();
			throw new IllegalStateException("redis-server did not start on port " + port, e);
		}
	}

	/** @return the port it listens on (the same after a restart) */
	int port() {
		return port;
	}

	/** @return {@code redis://127.0.0.1:<port>} */
	String uri() {
		return "redis://127.0.0.1:" + port;
	}

	/** @return whether the server process is alive */
	boolean running() {
		return process != null && process.isAlive();
	}

	/** Kills the server with SIGKILL, as a crash would, and waits until it is gone. */
	void kill() {
		if (process == null) {
			return;
		}
		process.destroyForcibly(); // SIGKILL ends a stopped process as well
		try {
			if (!process.waitFor(START_TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
				throw new IllegalStateException("redis-server on port " + port + " did not die");
			}
		}
		catch (InterruptedException e) {
			Thread.currentThread().interrupt();
			throw new IllegalStateException(e);
		}
		process = null;
	}

	/** Stops the server process (SIGSTOP): connections stay open but nothing answers, as a hung server. */
	void freeze() {
		signal("-STOP");
	}

	/** Resumes a {@link #freeze() frozen} server (SIGCONT); it answers what it was sent meanwhile. */
	void thaw() {
		signal("-CONT");
	}

	private void signal(String signal) {
		try {
			Process kill = new ProcessBuilder("kill", signal, String.valueOf(process.pid())).inheritIO().start();
			if (!kill.waitFor(START_TIMEOUT_SECONDS, TimeUnit.SECONDS) || kill.exitValue() != 0) {
				throw new IllegalStateException("kill " + signal + " " + process.pid() + " failed");
			}
		}
		catch (IOException e) {
			throw new UncheckedIOException(e);
		}
		catch (InterruptedException e) {
			Thread.currentThread().interrupt();
			throw new IllegalStateException(e);
		}
	}

	/**
	 * Sends one command with {@code redis-cli} (Debian's, beside the server), without waiting for its
	 * answer: {@code DEBUG SLEEP 0.5} answers only after the stall it causes.
	 *
	 * @return completed with the reply once {@code redis-cli} has ended
	 */
	CompletableFuture<String> send(String... command) {
		List<String> line = new java.util.ArrayList<>(List.of(BINARY.resolveSibling("redis-cli").toString(), "-h",
				"127.0.0.1", "-p", String.valueOf(port)));
		line.addAll(List.of(command));
		try {
			Process cli = new ProcessBuilder(line).redirectErrorStream(true).start();
			return cli.onExit().thenApply(p -> {
				try {
					return new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
				}
				catch (IOException e) {
					throw new UncheckedIOException(e);
				}
			});
		}
		catch (IOException e) {
			throw new UncheckedIOException(e);
		}
	}

	/** Starts the server again on the same port; it comes back empty (no persistence). */
	void restart() {
		kill();
		launch();
	}

	@Override
	public void close() {
		kill();
		try (Stream<Path> files = Files.walk(dir)) {
			files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
		}
		catch (IOException ignored) {
			// a temporary directory left behind is harmless
		}
	}

	@Override
	public String toString() {
		return "RedisServer{" + uri() + (running() ? "" : ", stopped") + "}";
	}
}
