package dev.aiguard.test.mock;

import java.util.ArrayDeque;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import io.netty.util.concurrent.EventExecutor;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Subscriber;
import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Operators;

/**
 * Paces the token chunks of every streamed answer with one shared tick per event loop instead of
 * one timer per token per stream: ten thousand answers at 50 tokens a second would otherwise
 * schedule half a million timers a second, and hop threads for each.
 *
 * <p>Each event loop that serves answers gets a timing wheel of {@value #SLOTS} one-millisecond
 * slots, driven by a periodic task on that loop while the wheel holds any answer (none when the
 * server is idle). An answer waits in the slot of its next due time; the tick takes the slot's
 * answers and emits their next token on the loop itself, so the write that follows needs no thread
 * hop. A token is emitted at the first tick at or after its due time (at most about one
 * millisecond late on an idle loop), and the next one is due one interval after that due time, so
 * late ticks do not stretch the answer. A subscriber without demand at the due time gets the token
 * as soon as it requests.
 */
final class TokenPacer {

	/** Slots of the wheel: a power of two; an answer due further out waits for the slot to come round. */
	static final int SLOTS = 512;

	private static final long TICK_NANOS = TimeUnit.MILLISECONDS.toNanos(1);

	private final ConcurrentHashMap<EventExecutor, Wheel> wheels = new ConcurrentHashMap<>();
	private final AtomicLong ticksStarted = new AtomicLong();

	/**
	 * @param loop the event loop that writes the answer (its connection's)
	 * @param count tokens to emit
	 * @param firstMs delay before index 0, from subscription
	 * @param intervalMs delay between indexes
	 * @return the indexes {@code 0 .. count-1} at the pace, emitted on {@code loop}, then completion
	 */
	Flux<Integer> pace(EventExecutor loop, int count, long firstMs, long intervalMs) {
		Objects.requireNonNull(loop, "loop");
		if (count < 0 || firstMs < 0 || intervalMs < 0) {
			throw new IllegalArgumentException("count, firstMs and intervalMs must be >= 0, were " + count + ", "
					+ firstMs + " and " + intervalMs);
		}
		return new PacedFlux(this, loop, count, TimeUnit.MILLISECONDS.toNanos(firstMs),
				TimeUnit.MILLISECONDS.toNanos(intervalMs));
	}

	/** @return how often a wheel started its periodic tick: once per busy period per event loop */
	long ticksStarted() {
		return ticksStarted.get();
	}

	private Wheel wheel(EventExecutor loop) {
		return wheels.computeIfAbsent(loop, l -> new Wheel(l, ticksStarted));
	}

	private static final class PacedFlux extends Flux<Integer> {

		private final TokenPacer pacer;
		private final EventExecutor loop;
		private final int count;
		private final long firstNanos;
		private final long intervalNanos;

		PacedFlux(TokenPacer pacer, EventExecutor loop, int count, long firstNanos, long intervalNanos) {
			this.pacer = pacer;
			this.loop = loop;
			this.count = count;
			this.firstNanos = firstNanos;
			this.intervalNanos = intervalNanos;
		}

		@Override
		public void subscribe(CoreSubscriber<? super Integer> actual) {
			Answer answer = new Answer(actual, pacer.wheel(loop), count, intervalNanos);
			actual.onSubscribe(answer);
			answer.onLoop(() -> answer.start(System.nanoTime() + firstNanos));
		}
	}

	/**
	 * One paced answer. Its state is touched only on the wheel's event loop; {@code request} and
	 * {@code cancel} from elsewhere are handed to the loop.
	 */
	static final class Answer implements Subscription {

		private final Subscriber<? super Integer> actual;
		private final Wheel wheel;
		private final int count;
		private final long intervalNanos;

		private long requested;
		private int next;
		private long due;
		/** In a slot of the wheel (an answer with nothing requested waits outside it). */
		private boolean scheduled;
		private boolean started;
		private boolean done;

		Answer(Subscriber<? super Integer> actual, Wheel wheel, int count, long intervalNanos) {
			this.actual = actual;
			this.wheel = wheel;
			this.count = count;
			this.intervalNanos = intervalNanos;
		}

		void onLoop(Runnable task) {
			if (wheel.loop.inEventLoop()) {
				task.run();
			}
			else {
				wheel.loop.execute(task);
			}
		}

		void start(long firstDue) {
			if (done || started) {
				return;
			}
			started = true;
			if (count == 0) {
				done = true;
				actual.onComplete();
				return;
			}
			due = firstDue;
			advance(System.nanoTime());
		}

		@Override
		public void request(long n) {
			if (Operators.validate(n)) {
				onLoop(() -> {
					requested = Operators.addCap(requested, n);
					if (started && !scheduled && !done) {
						advance(System.nanoTime());
					}
				});
			}
		}

		@Override
		public void cancel() {
			// the wheel drops a cancelled answer when its slot comes up
			onLoop(() -> done = true);
		}

		/** Emits what is due and has demand, then parks in the wheel (or waits for demand). */
		void advance(long now) {
			scheduled = false;
			while (!done && requested > 0 && due - now <= 0) {
				requested--;
				int index = next++;
				actual.onNext(index);
				if (next == count) {
					if (!done) {
						done = true;
						actual.onComplete();
					}
					return;
				}
				due += intervalNanos;
			}
			if (!done && requested > 0) {
				scheduled = true;
				wheel.add(this);
			}
		}
	}

	/** The timing wheel of one event loop; touched only on that loop. */
	static final class Wheel implements Runnable {

		final EventExecutor loop;
		private final AtomicLong ticksStarted;
		@SuppressWarnings("unchecked")
		private final ArrayDeque<Answer>[] slots = new ArrayDeque[SLOTS];
		private final long origin = System.nanoTime();
		/** The last tick whose slot was processed. */
		private long processed;
		private int size;
		@Nullable
		private ScheduledFuture<?> tick;

		Wheel(EventExecutor loop, AtomicLong ticksStarted) {
			this.loop = loop;
			this.ticksStarted = ticksStarted;
			for (int i = 0; i < SLOTS; i++) {
				slots[i] = new ArrayDeque<>();
			}
			processed = (System.nanoTime() - origin) / TICK_NANOS;
		}

		void add(Answer answer) {
			if (tick == null) {
				// idle until now: nothing to catch up on
				ticksStarted.incrementAndGet();
				processed = Math.max(processed, (System.nanoTime() - origin) / TICK_NANOS);
				tick = loop.scheduleAtFixedRate(this, 1, 1, TimeUnit.MILLISECONDS);
			}
			long at = Math.max(Math.floorDiv(answer.due - origin + TICK_NANOS - 1, TICK_NANOS), processed + 1);
			slots[(int) (at & (SLOTS - 1))].addLast(answer);
			size++;
		}

		@Override
		public void run() {
			long now = System.nanoTime();
			long current = (now - origin) / TICK_NANOS;
			// a late tick catches up slot by slot, never more than one turn of the wheel
			for (long t = Math.max(processed + 1, current - SLOTS + 1); t <= current; t++) {
				processed = t;
				ArrayDeque<Answer> slot = slots[(int) (t & (SLOTS - 1))];
				// an answer put back into this slot while it is drained waits for the next turn
				for (int n = slot.size(); n > 0; n--) {
					Answer answer = slot.pollFirst();
					size--;
					if (answer.done) {
						continue;
					}
					if (answer.due - now > 0) {
						// due in a later turn of the wheel
						add(answer);
					}
					else {
						answer.advance(now);
					}
				}
			}
			if (size == 0 && tick != null) {
				tick.cancel(false);
				tick = null;
			}
		}
	}
}
