package dev.aiguard.admission;

import java.util.EnumMap;
import java.util.Map;
import java.util.Objects;
import java.util.function.Function;

import dev.aiguard.admission.AdmissionRejectedException.Reason;
import dev.aiguard.core.Priority;
import dev.aiguard.metrics.GuardMetrics;
import org.jspecify.annotations.Nullable;
import reactor.core.CoreSubscriber;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * One bounded lane per {@link Priority}: a number of permits (streams in flight), a bounded
 * FIFO wait queue with a deadline, and a bounded Scheduler for blocking work. Built once and
 * shared by every guarded call.
 *
 * <pre>{@code
 * PriorityLanes lanes = PriorityLanes.builder()
 *     .name("chat")
 *     .lane(Priority.P0, LaneSpec.of(4).maxQueueWait(Duration.ofSeconds(2)))
 *     .lane(Priority.P1, LaneSpec.of(4))
 *     .lane(Priority.P2, LaneSpec.of(8).maxQueueSize(1_000).agingAfter(Duration.ofSeconds(30)))
 *     .metrics(new MicrometerGuardMetrics(registry))
 *     .build();
 *
 * // by hand: the permit must be released exactly once (extra calls are ignored)
 * lanes.acquire(Priority.P0)
 *      .flatMapMany(permit -> client.stream(request).doFinally(s -> permit.release()));
 *
 * // or as an operator, priority taken from the Reactor Context
 * client.stream(request)
 *       .transform(lanes.admit())
 *       .contextWrite(Priority.P0.asContext());
 * }</pre>
 *
 * <p>Admission never blocks a thread. A request takes a free permit of its own lane, else an idle
 * permit of a less urgent lane ({@link LaneSpec#borrowFromLower(boolean)}), else (when that lane
 * lends) an idle permit of a more urgent lane ({@link LaneSpec#lendToLower(double)}); otherwise
 * it may preempt a stream on a lent permit ({@link LaneSpec#preemptBorrowers(boolean)}), or it
 * parks in its lane's queue. When a permit frees, the most urgent waiter allowed to use it gets it
 * (aging counted), earliest arrival first among equals. Refusals are immediate and typed:
 * {@link AdmissionRejectedException} with {@link Reason#QUEUE_FULL}, {@link Reason#WAIT_TIMEOUT}
 * or {@link Reason#DISPOSED}.
 *
 * <p>When a request's own lane has a free permit and nobody waits, admission and release are one
 * CAS each on the lane's free count. Everything else (queues, borrowing, lending, preemption,
 * deadlines) runs in a drain loop (the reactor-core "work-in-progress" pattern): the thread that
 * finds the loop idle runs it, any other thread leaves its request in a lock-free queue for it and
 * returns. A waiter's permit is therefore handed over on the thread that released the previous
 * one.
 */
public final class PriorityLanes implements Disposable {

	static final Priority[] PRIORITIES = Priority.values();

	private final String name;
	private final Lane[] lanes;
	/** Who gets the next permit: the fast paths and the drain loop (see {@link LaneArbiter}). */
	private final LaneArbiter arbiter;

	private PriorityLanes(Builder builder) {
		this.name = builder.name;
		GuardMetrics metrics = GuardMetrics.isolated(builder.metrics);
		this.lanes = new Lane[PRIORITIES.length];
		for (Priority p : PRIORITIES) {
			// build() refused a builder with a priority missing
			lanes[p.ordinal()] = new Lane(p, Objects.requireNonNull(builder.specs.get(p), "spec"));
		}
		this.arbiter = new LaneArbiter(name, builder.timer, metrics, lanes);
		metrics.lanesCreated(name, this::inFlight, this::borrowedInFlight, this::queued);
		metrics.laneCapacity(name, this::concurrency);
	}

	/** @return a builder; every lane must be given a {@link LaneSpec}. */
	public static Builder builder() {
		return new Builder();
	}

	/**
	 * Asks for a permit for a request of {@code priority}. Lazy: nothing happens until the Mono is
	 * subscribed and requested. Emits the permit at once when one may be used, else when one frees;
	 * fails with {@link AdmissionRejectedException} when the queue is full, the wait exceeds the
	 * lane's {@link LaneSpec#maxQueueWait()}, or the lanes are disposed. Cancelling while queued
	 * leaves the queue and consumes nothing; a permit granted concurrently with the cancel is
	 * released.
	 *
	 * @param priority the request's priority
	 * @return a Mono of exactly one permit, to be {@link LanePermit#release() released} once
	 */
	public Mono<LanePermit> acquire(Priority priority) {
		Objects.requireNonNull(priority, "priority");
		return new MonoAcquire(arbiter, priority);
	}

	/**
	 * Takes a permit at once if the request's own lane has one free and no request of any priority
	 * is waiting (it never jumps a queue, never borrows and never preempts); otherwise returns
	 * {@code null} and the caller uses {@link #acquire(Priority)}, which queues, borrows and
	 * preempts as configured. The permit is the same as one {@code acquire} grants: release it
	 * once. A zero queue wait is recorded, as for an immediate grant through {@code acquire}.
	 *
	 * <pre>{@code
	 * LanePermit permit = lanes.tryAcquire(priority);
	 * Mono<LanePermit> admission = permit != null ? Mono.just(permit) : lanes.acquire(priority);
	 * }</pre>
	 *
	 * @param priority the request's priority
	 * @return a permit, or {@code null} when the request would have to wait, borrow or be refused
	 */
	@Nullable
	public LanePermit tryAcquire(Priority priority) {
		Objects.requireNonNull(priority, "priority");
		return arbiter.tryAcquire(priority);
	}

	/**
	 * An operator that runs each subscription of a Flux under a permit: the priority is read from
	 * the subscriber's Context ({@link Priority#CONTEXT_KEY}, {@link Priority#P1} when absent), the
	 * permit is released exactly once when the stream completes, fails or is cancelled, and a
	 * preempted stream has its upstream cancelled and fails with {@link PreemptedException}.
	 *
	 * <pre>{@code
	 * Flux<ChatChunk> answer = client.stream(request).transform(lanes.admit());
	 * }</pre>
	 */
	public <T> Function<Flux<T>, Flux<T>> admit() {
		return admit(Priority.P1);
	}

	/**
	 * {@link #admit()} with the priority used when the Context carries none.
	 *
	 * @param whenAbsent priority of subscriptions whose Context has no priority
	 */
	public <T> Function<Flux<T>, Flux<T>> admit(Priority whenAbsent) {
		Objects.requireNonNull(whenAbsent, "whenAbsent");
		return flux -> new FluxAdmit<>(flux, this, whenAbsent, false);
	}

	/**
	 * {@link #admit(Priority)} for an upstream that blocks (a blocking SDK, an iterator over a
	 * socket): once admitted, the upstream is subscribed on the request's lane
	 * {@link #scheduler(Priority) Scheduler}, so blocking batch work never takes an interactive
	 * thread.
	 *
	 * <pre>{@code
	 * Flux.fromIterable(blockingSdk.stream(request)).transform(lanes.admitOnLane(Priority.P2));
	 * }</pre>
	 */
	public <T> Function<Flux<T>, Flux<T>> admitOnLane(Priority whenAbsent) {
		Objects.requireNonNull(whenAbsent, "whenAbsent");
		return flux -> new FluxAdmit<>(flux, this, whenAbsent, true);
	}

	/**
	 * @return the bounded Scheduler of {@code lane} ({@code aiguard-p0}, ...): where blocking
	 *         upstreams and fallback work of that priority run
	 */
	public Scheduler scheduler(Priority lane) {
		return lanes[lane.ordinal()].scheduler;
	}

	/** @return streams of {@code priority} running on their own lane's permits */
	public int inFlight(Priority priority) {
		return lanes[priority.ordinal()].ownInFlight();
	}

	/** @return streams of {@code priority} running on permits borrowed from other lanes */
	public int borrowedInFlight(Priority priority) {
		return lanes[priority.ordinal()].borrowedInFlight;
	}

	/** @return requests of {@code priority} waiting in its queue */
	public int queued(Priority priority) {
		return lanes[priority.ordinal()].queued;
	}

	/**
	 * @return the spec {@code lane} was built with; its {@link LaneSpec#concurrency()} is the
	 *         built size even after a {@link #resize(Priority, int)}
	 */
	public LaneSpec spec(Priority lane) {
		return lanes[lane.ordinal()].spec;
	}

	/**
	 * @return the permits {@code lane} has now: its built concurrency, or the last
	 *         {@link #resize(Priority, int) resize} once the lanes applied it
	 */
	public int concurrency(Priority lane) {
		return lanes[lane.ordinal()].limit;
	}

	/**
	 * Changes how many permits {@code lane} has, while requests are running. Streams already
	 * admitted keep their permits: a smaller lane admits nobody of its own until enough of them
	 * have finished to bring it under the new size, and lends and lets borrow only what the new
	 * size allows; a larger lane hands its new permits to waiters at once. The lane's queue, wait
	 * deadline, reservations and lending ratio stay as built (a reservation larger than the new
	 * size reserves the whole lane). Never blocks: the change is applied by the lanes' drain loop,
	 * by this thread when the loop is idle; of several concurrent resizes of one lane, the last
	 * applied wins.
	 *
	 * <pre>{@code
	 * lanes.resize(Priority.P2, lanes.spec(Priority.P2).concurrency() / 2); // halve batch work
	 * }</pre>
	 *
	 * @param lane the lane to resize
	 * @param concurrency its new number of permits; 0 leaves it only what it may borrow
	 * @throws IllegalArgumentException when {@code concurrency} is negative
	 */
	public void resize(Priority lane, int concurrency) {
		Objects.requireNonNull(lane, "lane");
		if (concurrency < 0) {
			throw new IllegalArgumentException("lane " + lane + ": concurrency must be >= 0, was " + concurrency);
		}
		arbiter.resize(lanes[lane.ordinal()], concurrency);
	}

	/** @return the name used in metrics and messages */
	public String name() {
		return name;
	}

	/**
	 * Fails every waiter with {@link Reason#DISPOSED}, refuses later requests the same way, and
	 * disposes the lanes' Schedulers. Permits already granted may still be released.
	 */
	@Override
	public void dispose() {
		if (arbiter.dispose()) {
			for (Lane lane : lanes) {
				lane.scheduler.dispose();
			}
		}
	}

	@Override
	public boolean isDisposed() {
		return arbiter.isDisposed();
	}

	@Override
	public String toString() {
		StringBuilder sb = new StringBuilder("PriorityLanes{name=").append(name);
		for (Lane lane : lanes) {
			sb.append(", ").append(lane.priority).append("={own=").append(lane.ownInFlight()).append(", borrowed=")
					.append(lane.borrowedInFlight).append(", queued=").append(lane.queued).append('}');
		}
		return sb.append('}').toString();
	}

	/** The Mono returned by {@link #acquire(Priority)}. */
	static final class MonoAcquire extends Mono<LanePermit> {

		final LaneArbiter arbiter;
		final Priority priority;

		MonoAcquire(LaneArbiter arbiter, Priority priority) {
			this.arbiter = arbiter;
			this.priority = priority;
		}

		@Override
		public void subscribe(CoreSubscriber<? super LanePermit> actual) {
			actual.onSubscribe(new LaneTicket(arbiter, priority, actual));
		}
	}

	/**
	 * Builds {@link PriorityLanes}. Every priority needs a lane.
	 *
	 * <pre>{@code
	 * PriorityLanes lanes = PriorityLanes.builder()
	 *     .name("chat")
	 *     .lane(Priority.P0, LaneSpec.of(4))
	 *     .lane(Priority.P1, LaneSpec.of(4))
	 *     .lane(Priority.P2, LaneSpec.of(8))
	 *     .build();
	 * }</pre>
	 */
	public static final class Builder {

		private String name = "lanes";
		private final Map<Priority, LaneSpec> specs = new EnumMap<>(Priority.class);
		private @Nullable Scheduler timer;
		private GuardMetrics metrics = GuardMetrics.noop();

		private Builder() {
		}

		/**
		 * @param name used in metric tags and messages (default {@code lanes})
		 * @throws IllegalArgumentException when blank
		 */
		public Builder name(String name) {
			if (name == null || name.isBlank()) {
				throw new IllegalArgumentException("name must not be blank, was '" + name + "'");
			}
			this.name = name;
			return this;
		}

		/** Sets (or replaces) the lane of {@code priority}. */
		public Builder lane(Priority priority, LaneSpec spec) {
			Objects.requireNonNull(priority, "priority");
			Objects.requireNonNull(spec, "spec");
			specs.put(priority, spec);
			return this;
		}

		/**
		 * The Scheduler that runs queue-wait deadlines and gives the time for waits and aging.
		 * Default: {@link Schedulers#parallel()}, looked up at each use so that
		 * {@code StepVerifier.withVirtualTime} replaces it.
		 */
		public Builder timer(Scheduler timer) {
			this.timer = Objects.requireNonNull(timer, "timer");
			return this;
		}

		/** Where queue waits, rejections, preemptions and the lane gauges are reported. */
		public Builder metrics(GuardMetrics metrics) {
			this.metrics = Objects.requireNonNull(metrics, "metrics");
			return this;
		}

		/**
		 * @throws IllegalArgumentException when a lane is missing, no lane has any permit, a
		 *         reservation exceeds its lane's concurrency, or preemption is on without lending
		 */
		public PriorityLanes build() {
			int total = 0;
			for (Priority p : PRIORITIES) {
				LaneSpec spec = specs.get(p);
				if (spec == null) {
					throw new IllegalArgumentException("lane " + p + " is not configured: call lane(Priority." + p
							+ ", LaneSpec.of(n))");
				}
				if (spec.reservedForOwn() > spec.concurrency()) {
					throw new IllegalArgumentException("lane " + p + ": reservedForOwn must be <= concurrency ("
							+ spec.concurrency() + "), was " + spec.reservedForOwn());
				}
				if (spec.preemptBorrowers() && spec.lendToLower() == 0.0) {
					throw new IllegalArgumentException("lane " + p
							+ ": preemptBorrowers needs lendToLower > 0 (nothing is lent that could be taken back), was "
							+ spec.lendToLower());
				}
				total += spec.concurrency();
			}
			if (total < 1) {
				throw new IllegalArgumentException("concurrency of all lanes together must be >= 1, was " + total);
			}
			return new PriorityLanes(this);
		}
	}
}
