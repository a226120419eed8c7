package dev.aiguard.test;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

import dev.aiguard.GuardReport;
import dev.aiguard.core.Outcome;
import reactor.core.publisher.Sinks;

/**
 * The {@link GuardReport}s a guard delivered, for assertions: give it to the policy as a report
 * listener. Thread-safe, since a report arrives on whichever thread ended the stream (or on the
 * policy's report scheduler), which may be after the subscriber saw the terminal signal: wait for
 * it with {@link #awaitReport()}.
 *
 * <pre>{@code
 * ReportRecorder reports = new ReportRecorder();
 * GuardPolicy policy = GuardPolicy.builder("chat").onReport(reports).build();
 *
 * StepVerifier.create(AiGuard.of(policy).call(request, client::stream)).expectNextCount(12).verifyComplete();
 * GuardReport report = reports.expectOutcome(Outcome.SUCCESS);   // waits for it, fails otherwise
 * assertThat(report.attempts()).hasSize(1);
 * }</pre>
 */
public final class ReportRecorder implements Consumer<GuardReport> {

	/** How long {@link #awaitReport()} waits. */
	public static final Duration DEFAULT_WAIT = Duration.ofSeconds(5);

	private final CopyOnWriteArrayList<GuardReport> reports = new CopyOnWriteArrayList<>();
	private final AtomicInteger taken = new AtomicInteger();
	private volatile Sinks.Many<GuardReport> arrivals = Sinks.many().replay().all();

	/** Records a report; what the guard calls. */
	@Override
	public void accept(GuardReport report) {
		reports.add(report);
		synchronized (this) {
			// reports of concurrent requests arrive concurrently; the sink wants one at a time
			arrivals.tryEmitNext(report);
		}
	}

	/** @return every report so far, in the order they arrived */
	public List<GuardReport> reports() {
		return List.copyOf(reports);
	}

	/**
	 * @return the report that arrived last
	 * @throws AssertionError when none has arrived
	 */
	public GuardReport last() {
		List<GuardReport> all = reports();
		if (all.isEmpty()) {
			throw new AssertionError("no GuardReport was delivered");
		}
		return all.get(all.size() - 1);
	}

	/** Waits up to {@link #DEFAULT_WAIT}: see {@link #awaitReport(Duration)}. */
	public GuardReport awaitReport() {
		return awaitReport(DEFAULT_WAIT);
	}

	/**
	 * The next report this method has not returned yet, in arrival order: the first call returns
	 * the first report, the second call the second, waiting for it when it has not arrived. Blocks
	 * the calling thread: call it from the test, never from a Reactor thread.
	 *
	 * @throws AssertionError when no such report arrives within {@code timeout}
	 */
	public GuardReport awaitReport(Duration timeout) {
		int index = taken.getAndIncrement();
		// a future waits in real time, whatever virtual clock the test installed
		CompletableFuture<GuardReport> next = arrivals.asFlux().skip(index).next().toFuture();
		try {
			return next.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
		}
		catch (TimeoutException late) {
			next.cancel(true);
			taken.decrementAndGet();
			throw new AssertionError("GuardReport #" + (index + 1) + " did not arrive within " + timeout.toMillis()
					+ " ms; reports so far: " + reports);
		}
		catch (InterruptedException e) {
			Thread.currentThread().interrupt();
			throw new AssertionError("interrupted while waiting for GuardReport #" + (index + 1), e);
		}
		catch (ExecutionException e) {
			throw new AssertionError("waiting for GuardReport #" + (index + 1) + " failed", e.getCause());
		}
	}

	/**
	 * Awaits the next report ({@link #awaitReport()}) and checks its outcome.
	 *
	 * @return that report
	 * @throws AssertionError naming both outcomes and the report's error when the outcome differs
	 */
	public GuardReport expectOutcome(Outcome expected) {
		GuardReport report = awaitReport();
		if (report.outcome() != expected) {
			AssertionError failure = new AssertionError("expected outcome " + expected + " but the report says "
					+ report.outcome() + ": " + report);
			if (report.error() != null) {
				failure.initCause(report.error());
			}
			throw failure;
		}
		return report;
	}

	/** Forgets every report; {@link #awaitReport()} starts again from the next one to arrive. */
	public synchronized void clear() {
		reports.clear();
		taken.set(0);
		arrivals = Sinks.many().replay().all();
	}
}
