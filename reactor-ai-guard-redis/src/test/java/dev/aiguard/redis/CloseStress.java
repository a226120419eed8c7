package dev.aiguard.redis;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/**
 * What the close stress tests of the store and of the breaker sync share: {@code close()} timed against
 * a bound, and the threads left behind once a batch is closed — the component's own, any sitting in
 * Lettuce's endpoint lock ({@code SharedLock}, spinning or parked), and Lettuce's after its client is
 * shut down.
 */
final class CloseStress {

	/** The threads alive before the test: only threads started after are judged. */
	private final Set<Thread> before = Set.copyOf(Thread.getAllStackTraces().keySet());
	private final Duration closeBound;
	private final long start = System.nanoTime();
	private long slowestCloseNanos;

	/** @param closeBound the most one {@code close()} may take */
	CloseStress(Duration closeBound) {
		this.closeBound = closeBound;
	}

	/** Closes {@code closeable}, failing when the call took longer than the bound. */
	void close(AutoCloseable closeable, String name) throws Exception {
		long t0 = System.nanoTime();
		closeable.close();
		long took = System.nanoTime() - t0;
		slowestCloseNanos = Math.max(slowestCloseNanos, took);
		assertThat(Duration.ofNanos(took)).as("close() of %s returns within %s", name, closeBound).isLessThan(closeBound);
	}

	/** @return the threads started during the test, still alive and named {@code prefix}... */
	List<Thread> alive(String prefix) {
		return Thread.getAllStackTraces().keySet().stream()
				.filter(t -> !before.contains(t) && t.isAlive() && t.getName().startsWith(prefix))
				.toList();
	}

	/** @return the live threads named {@code prefix}..., with their state and stack */
	static List<String> threads(String prefix) {
		List<String> found = new ArrayList<>();
		Thread.getAllStackTraces().forEach((t, stack) -> {
			if (t.getName().startsWith(prefix)) {
				found.add(t.getName() + " " + t.getState() + " " + Arrays.toString(stack));
			}
		});
		return found;
	}

	/** @return the threads with Lettuce's endpoint lock on their stack, with their state and stack */
	static List<String> inSharedLock() {
		List<String> found = new ArrayList<>();
		for (Map.Entry<Thread, StackTraceElement[]> e : Thread.getAllStackTraces().entrySet()) {
			if (Arrays.stream(e.getValue()).anyMatch(f -> f.getClassName().equals("io.lettuce.core.protocol.SharedLock"))) {
				found.add(e.getKey().getName() + " " + e.getKey().getState() + " " + Arrays.toString(e.getValue()));
			}
		}
		return found;
	}

	/**
	 * Waits until no thread named {@code prefix}... started during the test is alive, then checks that no
	 * thread sits in Lettuce's endpoint lock.
	 */
	void assertNoThreadLeft(String prefix, Duration bound) {
		try {
			Await.until("no thread " + prefix + "... is left", bound, () -> alive(prefix).isEmpty());
		}
		catch (AssertionError e) {
			throw new AssertionError(e.getMessage() + ": " + threads(prefix), e);
		}
		assertThat(inSharedLock()).as("no thread spinning or parked in Lettuce's endpoint lock").isEmpty();
	}

	/** Waits until no Lettuce thread started during the test is alive (after its client was shut down). */
	void assertNoLettuceThreadLeft(String what, Duration bound) {
		Await.until("no Lettuce thread of " + what + " is left", bound, () -> alive("lettuce-").isEmpty());
	}

	/** Prints how many were closed, how long it took and the slowest close. */
	void report(String test, int closed) {
		System.out.printf("[%s] %d closed in %d ms; slowest close() %.2f ms%n", test, closed,
				TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start), slowestCloseNanos / 1e6);
	}
}
