package dev.aiguard.redis;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import io.netty.util.concurrent.FastThreadLocalThread;
import org.junit.jupiter.api.Test;

/**
 * A connection worker ended while Netty threads — which BlockHound, like Lettuce's event loops, treats
 * as threads that must not wait — keep handing it tasks and timers: no hand-over ever meets the
 * executor's shutdown (whose locks such a thread would wait for, and under BlockHound fail inside,
 * leaving the lock stuck for the next thread; a rejection by a shut-down executor takes its lock too),
 * every hand-over returns, and the worker's thread ends. Without the gate a hander failed within the
 * first few dozen cycles.
 */
class ConnectionWorkerTest {

	private static final int CYCLES = 100;
	private static final int HANDERS = 2;
	private static final int HANDED_AFTER_END = 20_000;
	private static final int MAX_PENDING = 64;
	private static final Duration END_BOUND = Duration.ofSeconds(10);

	@Test
	void endingWhileEventLoopThreadsHandOverTasksNeitherWaitsNorLeavesAThread() throws Exception {
		CloseStress stress = new CloseStress(Duration.ofSeconds(1));
		Queue<Throwable> failures = new ConcurrentLinkedQueue<>();
		for (int cycle = 0; cycle < CYCLES; cycle++) {
			ConnectionWorker worker = new ConnectionWorker("aiguard-worker-test-" + cycle, null);
			CompletableFuture<Void> ended = worker.terminated();
			AtomicInteger pending = new AtomicInteger();
			List<Thread> handers = new java.util.ArrayList<>();
			for (int h = 0; h < HANDERS; h++) {
				Thread t = new FastThreadLocalThread(() -> {
					try {
						// on at full speed until well after the end: a shut-down executor's rejection is a path
						// through its lock too
						for (int afterEnd = 0; afterEnd < HANDED_AFTER_END; afterEnd += ended.isDone() ? 1 : 0) {
							worker.after(Duration.ofMillis(1), () -> { }).dispose();
							// a bounded backlog of tasks, so the end is never queued behind many
							if (pending.get() < MAX_PENDING && worker.run(pending::decrementAndGet)) {
								pending.incrementAndGet();
							}
						}
					}
					catch (Throwable e) {
						failures.add(e);
					}
				}, "hander-" + h);
				t.start();
				handers.add(t);
			}
			worker.run(() -> { }); // the worker's thread is up and busy when the end comes
			worker.end();
			ended.get(END_BOUND.toMillis(), TimeUnit.MILLISECONDS);
			for (Thread t : handers) {
				t.join(END_BOUND.toMillis());
				assertThat(t.isAlive()).as("hander %s returned (stack: %s)", t.getName(),
						java.util.Arrays.toString(t.getStackTrace())).isFalse();
			}
			if (!failures.isEmpty()) {
				throw new AssertionError("a hander ran into " + failures.size() + " error(s) in cycle " + cycle
						+ "; the first is the cause", failures.peek());
			}
			assertThat(worker.run(() -> { })).as("an ended worker takes no task").isFalse();
		}
		stress.assertNoThreadLeft("aiguard-worker-test-", END_BOUND);
	}
}
