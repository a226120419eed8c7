package dev.aiguard.admission;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;

import dev.aiguard.core.Priority;
import dev.aiguard.QuiescentActorsGenerator;
import dev.aiguard.QuiescentActorsGenerator.Quiescent;
import dev.aiguard.Scenarios;
import org.jetbrains.lincheck.datastructures.IntGen;
import org.jetbrains.lincheck.datastructures.ManagedStrategyGuarantee;
import org.jetbrains.lincheck.datastructures.ManagedStrategyGuaranteeKt;
import org.jetbrains.lincheck.datastructures.ModelCheckingOptions;
import org.jetbrains.lincheck.datastructures.Operation;
import org.jetbrains.lincheck.datastructures.Param;
import org.jetbrains.lincheck.datastructures.StressOptions;
import org.jetbrains.lincheck.datastructures.ThreadIdGen;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;
import reactor.core.Disposable;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

import static dev.aiguard.core.Priority.P0;
import static dev.aiguard.core.Priority.P1;
import static dev.aiguard.core.Priority.P2;
import static dev.aiguard.Scenarios.actor;

/**
 * Lincheck: {@link PriorityLanes} admission against {@link Spec}, a sequential counting model of
 * three one-permit lanes with borrowing (P0 and P1 take idle permits of less urgent lanes),
 * work-conserving lending (P2 runs on P0's idle permit) and preemption (a P0 arrival takes that
 * permit back), small queues (one place; two for P2), tryAcquire, release, cancel, and resizing a
 * lane to 0, 1 or 2 permits while requests hold and wait for them.
 *
 * <p>Each thread keeps the requests it made; {@code release(thread)} lets go of its latest one
 * (releases the permit, or cancels the request while it waits), so who holds what is part of the
 * checked result. {@code state()} compares every lane's in-flight, borrowed and queued counts and
 * every request's fate with the model, and checks that the permits the requests hold add up to
 * what the lanes count as taken (none lost, none released twice).
 *
 * <p>What Lincheck cannot check directly, and what stands in for it:
 * <ul>
 * <li>The drain loop hands work to whichever thread owns it: an {@code acquire} subscribed while
 * another thread drains returns before the lanes have seen it, and the owner grants, queues or
 * refuses it later (the Mono is asynchronous by contract). A Lincheck operation must have its
 * effect before it returns, so each operation here returns once the drain loop is idle (it spins
 * on the loop's work counter, which Lincheck's model checker recognises as a wait and
 * schedules around). That checks the lanes as a caller that waits for its request to be seen
 * observes them.</li>
 * <li>The gauges ({@code inFlight}, {@code borrowedInFlight}, {@code queued}) are documented as
 * snapshots, exact when idle: {@code state()} runs only in the sequential parts
 * ({@link Quiescent}).</li>
 * <li>Queue-wait deadlines, aging and the lanes' Schedulers need time and threads: the lanes get
 * a timer that never fires and Schedulers that start no thread (set through
 * {@link Schedulers#setFactory}). Deadlines racing cancel and grant stay with
 * {@code PriorityLanesRaceTest}.</li>
 * </ul>
 */
class PriorityLanesLincheckTest {

	static final Priority[] PRIORITIES = Priority.values();
	static final int MAX_THREAD_IDS = 8; // init part, up to 3 parallel threads, post part, with room

	static final VarHandle ARBITER;
	static final VarHandle WIP;
	static final VarHandle LANES;

	static {
		try {
			MethodHandles.Lookup lookup = MethodHandles.privateLookupIn(PriorityLanes.class, MethodHandles.lookup());
			ARBITER = lookup.findVarHandle(PriorityLanes.class, "arbiter", LaneArbiter.class);
			WIP = MethodHandles.privateLookupIn(LaneArbiter.class, MethodHandles.lookup())
					.findVarHandle(LaneArbiter.class, "wip", int.class);
			LANES = lookup.findVarHandle(PriorityLanes.class, "lanes", Lane[].class);
		}
		catch (ReflectiveOperationException e) {
			throw new ExceptionInInitializerError(e);
		}
	}

	@BeforeAll
	static void schedulersWithoutThreads() {
		// every PriorityLanes builds three bounded-elastic Schedulers; thousands of invocations must not start threads
		Schedulers.setFactory(new Schedulers.Factory() {
			@Override
			public Scheduler newBoundedElastic(int threadCap, int queuedTaskCap, ThreadFactory threadFactory,
					int ttlSeconds) {
				return NeverTimer.INSTANCE;
			}
		});
	}

	@AfterAll
	static void restoreSchedulers() {
		Schedulers.resetFactory();
	}

	/** A timer whose deadlines never come (no waiter times out) and a Scheduler that runs nothing. */
	static final class NeverTimer implements Scheduler {

		static final NeverTimer INSTANCE = new NeverTimer();

		@Override
		public Disposable schedule(Runnable task) {
			return () -> {
			};
		}

		@Override
		public Disposable schedule(Runnable task, long delay, TimeUnit unit) {
			return () -> {
			};
		}

		@Override
		public long now(TimeUnit unit) {
			return 0L;
		}

		@Override
		public Worker createWorker() {
			throw new UnsupportedOperationException("no worker in a Lincheck test");
		}
	}

	static final LaneSpec P0_SPEC = LaneSpec.of(1).maxQueueSize(1).lendToLower(1.0).preemptBorrowers(true);
	static final LaneSpec P1_SPEC = LaneSpec.of(1).maxQueueSize(1);
	static final LaneSpec P2_SPEC = LaneSpec.of(1).maxQueueSize(2);

	/** One acquire (or tryAcquire) of one thread, as its subscriber sees it. */
	static final class Request implements CoreSubscriber<LanePermit> {

		final Priority priority;
		volatile Subscription subscription;
		volatile LanePermit permit;
		volatile String refusal;
		volatile boolean preempted;
		volatile boolean abandoned;

		Request(Priority priority) {
			this.priority = priority;
		}

		@Override
		public void onSubscribe(Subscription s) {
			subscription = s;
			s.request(1);
		}

		@Override
		public void onNext(LanePermit p) {
			permit = p;
			p.onPreempted(e -> preempted = true);
			if (abandoned) {
				p.release(); // the owner let go while this grant was on its way
			}
		}

		@Override
		public void onError(Throwable e) {
			refusal = e instanceof AdmissionRejectedException a ? a.reason().name() : e.toString();
		}

		@Override
		public void onComplete() {
		}

		/** Releases the permit, or cancels the request while it waits; a grant racing this is released too. */
		void letGo() {
			abandoned = true;
			Subscription s = subscription;
			if (s != null) {
				s.cancel();
			}
			LanePermit p = permit;
			if (p != null) {
				p.release();
			}
		}

		String status() {
			LanePermit p = permit;
			if (preempted) {
				return "preempted";
			}
			if (p != null) {
				return priority + "@" + p.lane();
			}
			String r = refusal;
			return r != null ? "rejected " + r : "queued";
		}
	}

	/** The lanes under test, with the requests each thread made (latest last). */
	public static class Lanes {

		final PriorityLanes lanes = PriorityLanes.builder()
				.lane(P0, P0_SPEC)
				.lane(P1, P1_SPEC)
				.lane(P2, P2_SPEC)
				.timer(NeverTimer.INSTANCE)
				.build();

		@SuppressWarnings("unchecked")
		final Deque<Request>[] held = new Deque[MAX_THREAD_IDS];

		public Lanes() {
			for (int i = 0; i < held.length; i++) {
				held[i] = new ArrayDeque<>();
			}
		}

		/** Returns once the drain loop is idle: whatever this thread handed to it has been done. */
		void awaitDrained() {
			while ((int) WIP.getVolatile((LaneArbiter) ARBITER.get(lanes)) != 0) {
				Thread.onSpinWait();
			}
		}

		/** Asks for a permit; what became of the request shows in {@link #state()}. */
		@Operation
		public void acquire(@Param(gen = ThreadIdGen.class) int thread,
				@Param(gen = IntGen.class, conf = "0:2") int priority) {
			Request r = new Request(PRIORITIES[priority]);
			held[thread].push(r);
			lanes.acquire(r.priority).subscribe(r);
			awaitDrained();
		}

		@Operation
		public String tryAcquire(@Param(gen = ThreadIdGen.class) int thread,
				@Param(gen = IntGen.class, conf = "0:2") int priority) {
			LanePermit p = lanes.tryAcquire(PRIORITIES[priority]);
			if (p == null) {
				return "none";
			}
			Request r = new Request(PRIORITIES[priority]);
			r.onNext(p);
			held[thread].push(r);
			return r.status();
		}

		/** Lets go of this thread's latest request (releases its permit, or cancels it while it waits). */
		@Operation
		public void release(@Param(gen = ThreadIdGen.class) int thread) {
			Request r = held[thread].poll();
			if (r != null) {
				r.letGo();
				awaitDrained();
			}
		}

		/** Resizes a lane while others acquire and release. */
		@Operation
		public void resize(@Param(gen = IntGen.class, conf = "0:2") int lane,
				@Param(gen = IntGen.class, conf = "0:2") int concurrency) {
			lanes.resize(PRIORITIES[lane], concurrency);
			awaitDrained();
		}

		@Quiescent
		@Operation
		public String state() {
			int[] holding = new int[PRIORITIES.length];
			StringBuilder sb = new StringBuilder();
			for (Priority p : PRIORITIES) {
				sb.append(p).append("{own=").append(lanes.inFlight(p)).append(", borrowed=")
						.append(lanes.borrowedInFlight(p)).append(", queued=").append(lanes.queued(p)).append("} ");
			}
			for (int t = 0; t < held.length; t++) {
				if (held[t].isEmpty()) {
					continue;
				}
				List<String> fates = new ArrayList<>();
				for (Iterator<Request> it = held[t].descendingIterator(); it.hasNext();) {
					Request r = it.next();
					fates.add(r.status());
					if (r.permit != null && !r.preempted) {
						holding[r.permit.lane().ordinal()]++;
					}
				}
				sb.append("t").append(t).append(fates).append(' ');
			}
			for (Priority lane : PRIORITIES) {
				Lane l = ((Lane[]) LANES.get(lanes))[lane.ordinal()];
				int taken = l.limit - l.available;
				if (taken != holding[lane.ordinal()]) {
					throw new IllegalStateException("lane " + lane + ": " + taken + " permits taken, but requests hold "
							+ holding[lane.ordinal()]);
				}
			}
			return sb.toString().trim();
		}
	}

	/** The command queue is reactor-core's MPSC queue, correct on its own: one step each for offer and poll. */
	static final ManagedStrategyGuarantee COMMAND_QUEUE_IS_ATOMIC =
			ManagedStrategyGuaranteeKt.forClasses("reactor.util.concurrent.MpscLinkedQueue").allMethods().treatAsAtomic();

	static ModelCheckingOptions modelChecking() {
		return new ModelCheckingOptions().addGuarantee(COMMAND_QUEUE_IS_ATOMIC);
	}

	@Test
	void admissionIsLinearizable() {
		modelChecking()
				.iterations(10)
				.invocationsPerIteration(80)
				.threads(2)
				.actorsPerThread(3)
				.actorsBefore(3)
				.actorsAfter(1)
				.executionGenerator(QuiescentActorsGenerator.class)
				.sequentialSpecification(Spec.class)
				.check(Lanes.class);
	}

	/**
	 * A permit given back on the fast path while the drain loop admits a newcomer of the same
	 * lane: the request already waiting must get it, the newcomer queues behind it.
	 *
	 * <p>Guards {@code arrive} looking at the waiters before it takes a free permit: were it to
	 * look at {@code available} alone, the newcomer would take the permit before {@code dispatch}
	 * offers it to the queue and jump the waiter.
	 */
	@Test
	void aFreedPermitGoesToTheWaiterNotToARacingArrival() {
		Class<?> c = Lanes.class;
		modelChecking()
				.iterations(0)
				.invocationsPerIteration(300)
				.addCustomScenario(Scenarios.of(
						List.of(actor(c, "acquire", 1, 2), // thread 1 holds P2's permit
								actor(c, "acquire", 0, 0), actor(c, "acquire", 0, 1), // P0 and P1 busy too
								actor(c, "acquire", 0, 2)), // so this P2 request waits
						List.of(List.of(actor(c, "release", 1)), List.of(actor(c, "acquire", 2, 2))),
						List.of(actor(c, "state"))))
				.sequentialSpecification(Spec.class)
				.check(c);
	}

	/**
	 * A lane shrinks while one of its holders lets go and a newcomer arrives: the newcomer runs
	 * only if it came before the shrink, and no permit is lost or doubled either way.
	 */
	@Test
	void aShrinkRacingAReleaseAndAnArrival() {
		Class<?> c = Lanes.class;
		modelChecking()
				.iterations(0)
				.invocationsPerIteration(300)
				.addCustomScenario(Scenarios.of(
						List.of(actor(c, "resize", 2, 2), actor(c, "acquire", 1, 2), actor(c, "acquire", 1, 2)),
						List.of(List.of(actor(c, "resize", 2, 1)), List.of(actor(c, "release", 1)),
								List.of(actor(c, "acquire", 2, 2))),
						List.of(actor(c, "state"))))
				.sequentialSpecification(Spec.class)
				.check(c);
	}

	@Test
	void admissionUnderStress() {
		new StressOptions()
				.iterations(8)
				.invocationsPerIteration(300)
				.threads(3)
				.actorsPerThread(2)
				.actorsBefore(3)
				.actorsAfter(1)
				.executionGenerator(QuiescentActorsGenerator.class)
				.sequentialSpecification(Spec.class)
				.check(Lanes.class);
	}

	/**
	 * The lanes as counters and lists, one operation at a time: the same rules as
	 * {@link PriorityLanes} (own lane first, then idle permits of less urgent lanes it may borrow,
	 * then lent permits of more urgent ones; else preempt; else queue; the most urgent waiter gets
	 * a freed permit, earliest first) with none of its concurrency.
	 */
	public static final class Spec {

		static final int[] MAX_QUEUE = { 1, 1, 2 };
		static final boolean[] BORROW_FROM_LOWER = { true, true, true };
		static final double[] LEND_TO_LOWER = { 1.0, 0.0, 0.0 };
		static final boolean[] PREEMPT = { true, false, false };

		/** Permits per lane: one each until resized. */
		final int[] concurrency = { 1, 1, 1 };

		static final class Req {
			final int p;
			int lane = -1;
			String fate = "queued";
			long seq;

			Req(int p) {
				this.p = p;
			}

			String status() {
				return fate.equals("granted") ? PRIORITIES[p] + "@" + PRIORITIES[lane] : fate;
			}
		}

		final int[] available = concurrency.clone();
		final int[] lentDown = new int[3];
		final int[] lentUp = new int[3];
		final int[] borrowed = new int[3];
		@SuppressWarnings("unchecked")
		final List<Req>[] queues = new List[] { new ArrayList<>(), new ArrayList<>(), new ArrayList<>() };
		@SuppressWarnings("unchecked")
		final List<Req>[] lent = new List[] { new ArrayList<>(), new ArrayList<>(), new ArrayList<>() };
		@SuppressWarnings("unchecked")
		final Deque<Req>[] held = new Deque[MAX_THREAD_IDS];
		long seq;

		public Spec() {
			for (int i = 0; i < held.length; i++) {
				held[i] = new ArrayDeque<>();
			}
		}

		public void acquire(int thread, int priority) {
			Req r = new Req(priority);
			held[thread].push(r);
			submit(r);
			dispatch();
		}

		public String tryAcquire(int thread, int priority) {
			if (totalQueued() != 0 || available[priority] <= 0) {
				return "none";
			}
			Req r = new Req(priority);
			available[priority]--;
			grant(r, priority);
			held[thread].push(r);
			return r.status();
		}

		public void release(int thread) {
			Req r = held[thread].poll();
			if (r == null) {
				return;
			}
			switch (r.fate) {
				case "queued" -> queues[r.p].remove(r);
				case "granted" -> {
					if (r.p == r.lane) {
						available[r.lane]++;
					}
					else {
						free(r, true);
					}
				}
				default -> {
					// refused or preempted: nothing is held
				}
			}
			r.fate = "released";
			dispatch();
		}

		/** The free count moves by the difference: held permits stay held, a shrink is paid back as they return. */
		public void resize(int lane, int size) {
			available[lane] += size - concurrency[lane];
			concurrency[lane] = size;
			dispatch();
		}

		public String state() {
			StringBuilder sb = new StringBuilder();
			for (int p = 0; p < 3; p++) {
				int own = concurrency[p] - available[p] - lentDown[p] - lentUp[p];
				sb.append(PRIORITIES[p]).append("{own=").append(own).append(", borrowed=").append(borrowed[p])
						.append(", queued=").append(queues[p].size()).append("} ");
			}
			for (int t = 0; t < held.length; t++) {
				if (held[t].isEmpty()) {
					continue;
				}
				List<String> fates = new ArrayList<>();
				for (Iterator<Req> it = held[t].descendingIterator(); it.hasNext();) {
					fates.add(it.next().status());
				}
				sb.append("t").append(t).append(fates).append(' ');
			}
			return sb.toString().trim();
		}

		private int totalQueued() {
			return queues[0].size() + queues[1].size() + queues[2].size();
		}

		private void submit(Req r) {
			int p = r.p;
			if (totalQueued() == 0) {
				if (available[p] > 0) {
					available[p]--;
					grant(r, p);
					return;
				}
			}
			else if (queues[p].size() >= MAX_QUEUE[p] && MAX_QUEUE[p] > 0) {
				r.fate = "rejected QUEUE_FULL";
				return;
			}
			int lane = takeFree(p);
			if (lane >= 0) {
				grant(r, lane);
				return;
			}
			if (preempt(r)) {
				return;
			}
			if (queues[p].size() >= MAX_QUEUE[p]) {
				r.fate = "rejected QUEUE_FULL";
				return;
			}
			r.seq = seq++;
			queues[p].add(r);
		}

		private int takeFree(int p) {
			if (available[p] > 0) {
				available[p]--;
				return p;
			}
			if (BORROW_FROM_LOWER[p]) {
				for (int l = p + 1; l < 3; l++) {
					if (mayUse(p, l) && available[l] > 0) {
						available[l]--;
						return l;
					}
				}
			}
			for (int l = p - 1; l >= 0; l--) {
				if (mayUse(p, l) && available[l] > 0) {
					available[l]--;
					return l;
				}
			}
			return -1;
		}

		private boolean mayUse(int p, int l) {
			if (p == l) {
				return true;
			}
			if (p < l) {
				return BORROW_FROM_LOWER[p] && lentDown[l] < concurrency[l];
			}
			return lentUp[l] < (int) Math.floor(LEND_TO_LOWER[l] * concurrency[l]) && queues[l].isEmpty();
		}

		private boolean preempt(Req r) {
			for (int l = r.p; l < 3; l++) {
				if (PREEMPT[l] && !lent[l].isEmpty() && (l == r.p || mayUse(r.p, l))) {
					Req victim = null;
					for (int i = lent[l].size() - 1; i >= 0; i--) {
						Req c = lent[l].get(i);
						if (victim == null || c.p > victim.p) {
							victim = c; // least urgent first, most recently admitted among those
						}
					}
					victim.fate = "preempted";
					free(victim, false); // the permit passes straight to the arrival
					grant(r, l);
					return true;
				}
			}
			return false;
		}

		private void grant(Req r, int lane) {
			r.lane = lane;
			r.fate = "granted";
			if (r.p != lane) {
				borrowed[r.p]++;
				if (r.p < lane) {
					lentDown[lane]++;
				}
				else {
					lentUp[lane]++;
					lent[lane].add(r);
				}
			}
		}

		private void free(Req r, boolean returnPermit) {
			borrowed[r.p]--;
			if (r.p < r.lane) {
				lentDown[r.lane]--;
			}
			else {
				lentUp[r.lane]--;
				lent[r.lane].remove(r);
			}
			if (returnPermit) {
				available[r.lane]++;
			}
		}

		private void dispatch() {
			for (int lane = 0; lane < 3; lane++) {
				while (available[lane] > 0 && totalQueued() > 0) {
					Req best = null;
					for (int c = 0; c < 3; c++) {
						if (queues[c].isEmpty() || !mayUse(c, lane)) {
							continue;
						}
						Req head = queues[c].get(0);
						if (best == null || c < best.p || (c == best.p && head.seq < best.seq)) {
							best = head;
						}
					}
					if (best == null) {
						break;
					}
					available[lane]--;
					queues[best.p].remove(0);
					grant(best, lane);
				}
			}
		}
	}
}
