package dev.aiguard.sse;

import java.util.Queue;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;
import java.util.concurrent.atomic.AtomicLongFieldUpdater;
import java.util.function.Consumer;

import org.jspecify.annotations.Nullable;
import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;
import reactor.core.Scannable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.FluxOperator;
import reactor.core.publisher.Operators;
import reactor.util.concurrent.Queues;
import reactor.util.context.Context;

import org.jspecify.annotations.Nullable;

/**
 * Byte chunks in, server-sent events out. One upstream chunk can hold many events and a chunk
 * can hold none, so the subscriber parses a whole chunk into a small queue and drains it against
 * downstream demand, asking upstream for the next chunk only when the queue is empty and demand
 * is outstanding (one chunk requested at a time).
 *
 * @param <T> the chunk type
 */
final class FluxSseDecode<T> extends FluxOperator<T, SseEvent> {

	private final ChunkReader<T> reader;
	private final int maxLineBytes;
	private final int maxEventBytes;

	FluxSseDecode(Flux<? extends T> source, ChunkReader<T> reader, int maxLineBytes, int maxEventBytes) {
		super(source);
		this.reader = reader;
		this.maxLineBytes = maxLineBytes;
		this.maxEventBytes = maxEventBytes;
	}

	@Override
	public void subscribe(CoreSubscriber<? super SseEvent> actual) {
		source.subscribe(new DecodeSubscriber<>(actual, reader, maxLineBytes, maxEventBytes));
	}

	@Override
	public @Nullable Object scanUnsafe(Attr key) {
		if (key == Attr.RUN_STYLE) {
			return Attr.RunStyle.SYNC;
		}
		return super.scanUnsafe(key);
	}

	static final class DecodeSubscriber<T> implements CoreSubscriber<T>, Subscription, Scannable, Consumer<SseEvent> {

		final CoreSubscriber<? super SseEvent> actual;
		final ChunkReader<T> reader;
		final SseParser parser;
		final Queue<SseEvent> queue;

		@SuppressWarnings("NullAway.Init") // set in onSubscribe, before any other signal
		Subscription s;

		volatile boolean done;
		@Nullable Throwable error;

		volatile boolean cancelled;

		// a chunk was requested upstream and has not arrived yet
		volatile boolean chunkPending;

		volatile int wip;
		static final AtomicIntegerFieldUpdater<DecodeSubscriber> WIP =
				AtomicIntegerFieldUpdater.newUpdater(DecodeSubscriber.class, "wip");

		volatile long requested;
		static final AtomicLongFieldUpdater<DecodeSubscriber> REQUESTED =
				AtomicLongFieldUpdater.newUpdater(DecodeSubscriber.class, "requested");

		// touched only inside the drain loop
		long produced;

		DecodeSubscriber(CoreSubscriber<? super SseEvent> actual, ChunkReader<T> reader, int maxLineBytes,
				int maxEventBytes) {
			this.actual = actual;
			this.reader = reader;
			this.parser = new SseParser(maxLineBytes, maxEventBytes, this);
			this.queue = Queues.<SseEvent>unbounded(32).get();
		}

		@Override
		public Context currentContext() {
			return actual.currentContext();
		}

		@Override
		public void onSubscribe(Subscription s) {
			if (Operators.validate(this.s, s)) {
				this.s = s;
				actual.onSubscribe(this);
			}
		}

		@Override
		public void onNext(T chunk) {
			if (done || cancelled) {
				reader.release(chunk);
				Operators.onNextDropped(chunk, actual.currentContext());
				return;
			}
			chunkPending = false;
			try {
				reader.read(chunk, parser);
			}
			catch (SseFormatException e) {
				s.cancel();
				error = e;
				done = true;
			}
			catch (Throwable e) {
				error = Operators.onOperatorError(s, e, actual.currentContext());
				done = true;
			}
			finally {
				reader.release(chunk);
			}
			drain();
		}

		/** Parser output: queued, then delivered by the drain loop. */
		@Override
		public void accept(SseEvent event) {
			queue.offer(event);
		}

		@Override
		public void onError(Throwable t) {
			if (done) {
				Operators.onErrorDropped(t, actual.currentContext());
				return;
			}
			error = t;
			done = true;
			drain();
		}

		@Override
		public void onComplete() {
			if (done) {
				return;
			}
			parser.finish();
			done = true;
			drain();
		}

		@Override
		public void request(long n) {
			if (Operators.validate(n)) {
				Operators.addCap(REQUESTED, this, n);
				drain();
			}
		}

		@Override
		public void cancel() {
			if (cancelled) {
				return;
			}
			cancelled = true;
			s.cancel();
			if (WIP.getAndIncrement(this) == 0) {
				discardQueue();
			}
		}

		private void discardQueue() {
			Operators.onDiscardQueueWithClear(queue, actual.currentContext(), null);
		}

		private void drain() {
			if (WIP.getAndIncrement(this) != 0) {
				return;
			}
			int missed = 1;
			final Queue<SseEvent> q = queue;
			final CoreSubscriber<? super SseEvent> a = actual;
			for (;;) {
				long r = requested;
				long e = produced;
				while (e != r) {
					if (cancelled) {
						discardQueue();
						return;
					}
					boolean d = done;
					SseEvent v = q.poll();
					if (v == null) {
						if (d) {
							terminate(a);
							return;
						}
						break;
					}
					a.onNext(v);
					e++;
				}
				if (cancelled) {
					discardQueue();
					return;
				}
				if (done && q.isEmpty()) {
					terminate(a);
					return;
				}
				produced = e;
				if (e != r && !chunkPending && !done && q.isEmpty()) {
					chunkPending = true;
					s.request(1);
				}
				missed = WIP.addAndGet(this, -missed);
				if (missed == 0) {
					return;
				}
			}
		}

		private void terminate(CoreSubscriber<? super SseEvent> a) {
			Throwable ex = error;
			if (ex != null) {
				a.onError(ex);
			}
			else {
				a.onComplete();
			}
		}

		@Override
		@Nullable
		public Object scanUnsafe(Attr key) {
			if (key == Attr.PARENT) {
				return s;
			}
			if (key == Attr.ACTUAL) {
				return actual;
			}
			if (key == Attr.TERMINATED) {
				return done && queue.isEmpty();
			}
			if (key == Attr.CANCELLED) {
				return cancelled;
			}
			if (key == Attr.ERROR) {
				return error;
			}
			if (key == Attr.BUFFERED) {
				return queue.size();
			}
			if (key == Attr.PREFETCH) {
				return 1;
			}
			if (key == Attr.REQUESTED_FROM_DOWNSTREAM) {
				return requested;
			}
			if (key == Attr.RUN_STYLE) {
				return Attr.RunStyle.SYNC;
			}
			return null;
		}
	}
}
