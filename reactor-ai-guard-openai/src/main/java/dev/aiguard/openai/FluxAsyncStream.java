package dev.aiguard.openai;

import java.util.Objects;
import java.util.Optional;
import java.util.Queue;
import java.util.concurrent.CancellationException;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;
import java.util.concurrent.atomic.AtomicLongFieldUpdater;
import java.util.function.Supplier;
import java.util.function.UnaryOperator;

import com.openai.core.http.AsyncStreamResponse;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;
import reactor.core.Exceptions;
import reactor.core.Scannable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Operators;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;
import reactor.util.concurrent.Queues;

/**
 * The SDK's push-style {@link AsyncStreamResponse} as a {@link Flux}: one SDK stream per
 * subscription, started when subscribed.
 *
 * <p>The SDK calls its handler from its own stream-reading thread and knows nothing of demand.
 * Chunks wait in a queue of {@code capacity}; when it is full, the handler parks the SDK's thread
 * (which is blocked on socket reads most of the time anyway) until the subscriber asks for more,
 * so a slow subscriber slows the reading of the socket instead of growing memory. A handler that
 * runs on a Reactor non-blocking thread (an SDK configured with such an executor) cannot park:
 * a full queue then fails the stream with an overflow error.
 *
 * <p>Cancelling never closes the SDK stream on the cancelling thread: {@code close()} may wait
 * (for the rest of the HTTP body, or, in SDK 4.49, for a read blocked on a stalled socket), so it
 * runs on {@code closeOn}. The next chunk the SDK hands over after a cancel is refused with a
 * {@link CancellationException}, which ends the SDK's read loop and makes it close the response
 * on its own thread.
 */
final class FluxAsyncStream<T> extends Flux<T> implements Scannable {

	private final Supplier<? extends AsyncStreamResponse<T>> start;
	private final int capacity;
	private final Scheduler closeOn;
	private final UnaryOperator<Throwable> errors;

	/** A stream whose errors are mapped by {@link OpenAiSdkErrors#map(Throwable)}. */
	FluxAsyncStream(Supplier<? extends AsyncStreamResponse<T>> start, int capacity, Scheduler closeOn) {
		this(start, capacity, closeOn, OpenAiSdkErrors::map);
	}

	/** @param errors maps what the SDK fails with to the library's typed errors ({@link OpenAiSdkErrors#map}) */
	FluxAsyncStream(Supplier<? extends AsyncStreamResponse<T>> start, int capacity, Scheduler closeOn,
			UnaryOperator<Throwable> errors) {
		this.start = Objects.requireNonNull(start, "start");
		if (capacity < 1) {
			throw new IllegalArgumentException("bufferSize must be at least 1, was " + capacity);
		}
		this.capacity = capacity;
		this.closeOn = Objects.requireNonNull(closeOn, "closeOn");
		this.errors = Objects.requireNonNull(errors, "errors");
	}

	@Override
	public void subscribe(CoreSubscriber<? super T> actual) {
		StreamSubscription<T> subscription = new StreamSubscription<>(actual, capacity, closeOn, errors);
		actual.onSubscribe(subscription);
		subscription.begin(start);
	}

	@Override
	@Nullable
	public Object scanUnsafe(Scannable.Attr key) {
		if (key == Attr.PREFETCH) {
			return capacity;
		}
		if (key == Attr.RUN_STYLE) {
			return Attr.RunStyle.ASYNC;
		}
		return null;
	}

	/**
	 * The subscription handed to the subscriber and the handler handed to the SDK. One producer
	 * (the SDK's reading thread) and one drain loop at a time.
	 */
	static final class StreamSubscription<T> implements Subscription, AsyncStreamResponse.Handler<T>, Scannable {

		private final CoreSubscriber<? super T> actual;
		private final Queue<T> queue;
		private final Semaphore slots;
		private final int capacity;
		private final Scheduler closeOn;
		private final UnaryOperator<Throwable> errors;

		@Nullable
		private volatile AsyncStreamResponse<T> response;
		private volatile boolean done;
		@Nullable
		private Throwable error;
		private volatile boolean cancelled;

		private volatile long requested;
		@SuppressWarnings("rawtypes")
		private static final AtomicLongFieldUpdater<StreamSubscription> REQUESTED =
				AtomicLongFieldUpdater.newUpdater(StreamSubscription.class, "requested");

		private volatile int wip;
		@SuppressWarnings("rawtypes")
		private static final AtomicIntegerFieldUpdater<StreamSubscription> WIP =
				AtomicIntegerFieldUpdater.newUpdater(StreamSubscription.class, "wip");

		private volatile int closed;
		@SuppressWarnings("rawtypes")
		private static final AtomicIntegerFieldUpdater<StreamSubscription> CLOSED =
				AtomicIntegerFieldUpdater.newUpdater(StreamSubscription.class, "closed");

		StreamSubscription(CoreSubscriber<? super T> actual, int capacity, Scheduler closeOn,
				UnaryOperator<Throwable> errors) {
			this.actual = actual;
			this.capacity = capacity;
			this.closeOn = closeOn;
			this.errors = errors;
			// the semaphore bounds the queue, so the queue itself need not be
			this.queue = Queues.<T>unbounded().get();
			this.slots = new Semaphore(capacity);
		}

		void begin(Supplier<? extends AsyncStreamResponse<T>> start) {
			if (cancelled) {
				return;
			}
			AsyncStreamResponse<T> started;
			try {
				started = Objects.requireNonNull(start.get(), "the SDK returned no stream");
			}
			catch (Throwable e) {
				Exceptions.throwIfJvmFatal(e);
				onComplete(Optional.of(e));
				return;
			}
			response = started;
			try {
				started.subscribe(this);
			}
			catch (Throwable e) {
				Exceptions.throwIfJvmFatal(e);
				onComplete(Optional.of(e));
				close();
				return;
			}
			if (cancelled) {
				// cancelled while the SDK stream was being started: the cancel saw no response
				close();
			}
		}

		// ---- the SDK's side, on its stream-reading thread

		@Override
		public void onNext(T value) {
			if (cancelled || done) {
				// stops the SDK's read loop: it then closes the response itself, on its own thread
				throw new CancellationException("the stream was cancelled or has ended");
			}
			if (!slots.tryAcquire()) {
				if (Schedulers.isInNonBlockingThread()) {
					throw stop(Exceptions.failWithOverflow("the subscriber is " + capacity + " chunks behind and the"
							+ " SDK's handler runs on a non-blocking thread, so it cannot wait"));
				}
				try {
					slots.acquire();
				}
				catch (InterruptedException interrupted) {
					Thread.currentThread().interrupt();
					throw stop(new IllegalStateException(
							"the SDK's stream thread was interrupted while waiting for demand", interrupted));
				}
				if (cancelled) {
					throw new CancellationException("the stream was cancelled");
				}
			}
			queue.offer(value);
			drain();
		}

		@Override
		public void onComplete(Optional<Throwable> failure) {
			if (done) {
				return;
			}
			if (failure.isPresent()) {
				error = errors.apply(failure.get());
			}
			done = true;
			drain();
		}

		/**
		 * Fails the stream from the SDK's thread; the caller throws the result, which ends the SDK's
		 * read loop (the SDK then reports it to {@link #onComplete}, ignored, and closes the response).
		 */
		private RuntimeException stop(RuntimeException e) {
			onComplete(Optional.of(e));
			return e;
		}

		// ---- the subscriber's side

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
			// a producer waiting for a slot wakes up, sees the cancel and drops its chunk
			slots.release(capacity);
			close();
			if (WIP.getAndIncrement(this) == 0) {
				queue.clear();
			}
		}

		/** Closes the SDK stream once, on {@code closeOn}: closing may read the HTTP body's rest. */
		private void close() {
			AsyncStreamResponse<T> r = response;
			if (r != null && CLOSED.compareAndSet(this, 0, 1)) {
				try {
					closeOn.schedule(() -> closeQuietly(r));
				}
				catch (RuntimeException rejected) {
					// a disposed scheduler: closing here is better than leaking the connection
					closeQuietly(r);
				}
			}
		}

		private void closeQuietly(AsyncStreamResponse<?> r) {
			try {
				r.close();
			}
			catch (RuntimeException e) {
				Operators.onErrorDropped(e, actual.currentContext());
			}
		}

		private void drain() {
			if (WIP.getAndIncrement(this) != 0) {
				return;
			}
			int missed = 1;
			for (;;) {
				long r = requested;
				long e = 0L;
				while (e != r) {
					if (cancelled) {
						queue.clear();
						return;
					}
					boolean d = done;
					T v = queue.poll();
					if (v == null) {
						if (d) {
							terminate();
							return;
						}
						break;
					}
					slots.release();
					actual.onNext(v);
					e++;
				}
				if (e == r) {
					if (cancelled) {
						queue.clear();
						return;
					}
					if (done && queue.isEmpty()) {
						terminate();
						return;
					}
				}
				if (e != 0L && r != Long.MAX_VALUE) {
					REQUESTED.addAndGet(this, -e);
				}
				missed = WIP.addAndGet(this, -missed);
				if (missed == 0) {
					return;
				}
			}
		}

		private void terminate() {
			// once: the subscriber sees one terminal signal, later drains find it cancelled
			cancelled = true;
			Throwable e = error;
			if (e != null) {
				actual.onError(e);
			}
			else {
				actual.onComplete();
			}
		}

		@Override
		@Nullable
		public Object scanUnsafe(Scannable.Attr key) {
			if (key == Attr.ACTUAL) {
				return actual;
			}
			if (key == Attr.REQUESTED_FROM_DOWNSTREAM) {
				return requested;
			}
			if (key == Attr.BUFFERED) {
				return queue.size();
			}
			if (key == Attr.CAPACITY || key == Attr.PREFETCH) {
				return capacity;
			}
			if (key == Attr.CANCELLED) {
				return cancelled;
			}
			if (key == Attr.TERMINATED) {
				return done;
			}
			if (key == Attr.ERROR) {
				return error;
			}
			if (key == Attr.RUN_STYLE) {
				return Attr.RunStyle.ASYNC;
			}
			return null;
		}
	}
}
