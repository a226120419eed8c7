package dev.aiguard.benchmarks;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

import dev.aiguard.core.ChunkInspector;
import dev.aiguard.core.Outcome;
import dev.aiguard.core.Priority;
import dev.aiguard.metrics.GuardMetrics;
import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;

/**
 * The least a token-stream watcher can do and still keep the library's per-token rules: per chunk,
 * read what the chunk is, count content, and make "a chunk is being delivered" visible to a
 * deadline thread (an ordered store before and after delivery, an ordered read of a gate) so that
 * a deadline never signals while a chunk is on its way, without an atomic instruction per chunk;
 * per stream, three clock reads (start, first token, end) and the four per-stream meters the guard records.
 * The cheapest way we found to count is used: content tokens are derived (chunks delivered minus
 * the other kinds), so a content chunk updates no counter of its own.
 * It has no deadline task, no cancellation, no report: it is a floor for
 * {@link GuardOverheadBenchmark}, not a usable operator.
 */
final class MinimalWatch<T> implements CoreSubscriber<T>, Subscription {

	private static final VarHandle SEQ;
	private static final VarHandle GATE;

	static {
		try {
			MethodHandles.Lookup lookup = MethodHandles.lookup();
			SEQ = lookup.findVarHandle(MinimalWatch.class, "seq", long.class);
			GATE = lookup.findVarHandle(MinimalWatch.class, "gate", int.class);
		}
		catch (ReflectiveOperationException e) {
			throw new ExceptionInInitializerError(e);
		}
	}

	private final CoreSubscriber<? super T> actual;
	private final ChunkInspector<T> inspector;
	private final GuardMetrics metrics;
	private Subscription upstream;
	private long start;
	private long firstTokenAt = -1L;
	/** Chunks that were not content; tokens = chunks delivered - this, so content costs no counter update. */
	private long other;
	volatile long seq;
	volatile int gate;

	MinimalWatch(CoreSubscriber<? super T> actual, ChunkInspector<T> inspector, GuardMetrics metrics) {
		this.actual = actual;
		this.inspector = inspector;
		this.metrics = metrics;
	}

	@Override
	public void onSubscribe(Subscription s) {
		upstream = s;
		start = System.nanoTime();
		actual.onSubscribe(this);
	}

	@Override
	public void onNext(T t) {
		long s = (long) SEQ.get(this);
		SEQ.setOpaque(this, s + 1L);
		if ((int) GATE.getOpaque(this) != 0) {
			return;
		}
		if ((inspector.flags(t) & ChunkInspector.CONTENT) == 0) {
			other++;
		}
		else if (firstTokenAt < 0L) {
			firstTokenAt = System.nanoTime();
		}
		actual.onNext(t);
		SEQ.setRelease(this, s + 2L);
	}

	@Override
	public void onError(Throwable t) {
		actual.onError(t);
	}

	@Override
	public void onComplete() {
		long end = System.nanoTime();
		long tokens = ((long) SEQ.getVolatile(this) >>> 1) - other;
		metrics.streamEnded("floor", Priority.P1, Outcome.SUCCESS, end - start,
				firstTokenAt < 0L ? -1L : firstTokenAt - start, tokens);
		actual.onComplete();
	}

	@Override
	public void request(long n) {
		upstream.request(n);
	}

	@Override
	public void cancel() {
		upstream.cancel();
	}
}
