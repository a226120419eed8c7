package dev.aiguard.breaker;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.function.BiConsumer;
import java.util.function.IntPredicate;

import dev.aiguard.core.Outcome;
import dev.aiguard.QuiescentActorsGenerator;
import dev.aiguard.QuiescentActorsGenerator.Quiescent;
import dev.aiguard.Scenarios;
import dev.aiguard.testing.ManualClock;
import org.jetbrains.lincheck.datastructures.IntGen;
import org.jetbrains.lincheck.datastructures.ModelCheckingOptions;
import org.jetbrains.lincheck.datastructures.Operation;
import org.jetbrains.lincheck.datastructures.Param;
import org.jetbrains.lincheck.datastructures.StressOptions;
import org.jetbrains.lincheck.datastructures.ThreadIdGen;
import org.junit.jupiter.api.Test;

import static dev.aiguard.Scenarios.actor;

/**
 * Lincheck: {@link CircuitBreaker} against {@link Spec}, a sequential state machine of the same
 * rules: a count window of the last four calls, trip at a failure rate of 0.5 over at least two
 * calls, a fixed 10 s open wait (no jitter, no growth), two counted HALF_OPEN probes judged with
 * the outstanding ones counted as failed (so both must be healthy to close), no minimum dwell,
 * and permits of an earlier phase that count in the window but decide nothing. Time comes from a
 * {@link ManualClock}.
 *
 * <p>The breaker starts CLOSED with one success in its window, or (the {@code Tripped} variants)
 * tripped with its open wait over. Each thread keeps the permits it was given;
 * {@code record(thread, outcome)} settles its latest with SUCCESS, FAILURE or CANCELLED. {@code acquire} and {@code state()} results race
 * freely; the window's counts, the HALF_OPEN probe count and the rejections are compared in the
 * sequential parts.
 *
 * <p>What Lincheck cannot check directly, and why:
 * <ul>
 * <li>Time moving during an operation: a transition reads the clock and then CASes the phase, so
 * the clock moves only in the sequential parts ({@link Quiescent} {@code waitOpen}). The OPEN to
 * HALF_OPEN transition itself still races in the parallel part once the wait has passed.</li>
 * <li>The window's totals and rates concurrently with recording: {@link CountWindow} documents
 * them as a snapshot that never over-states a rate, not an atomic view, so {@code snapshot()} is
 * read only in the sequential parts.</li>
 * <li>One permit settled twice from two threads: documented as not guarded for CLOSED permits
 * (the guard's end path settles once), so each permit here is settled once.</li>
 * <li>Time windows, slow calls, decaying and adaptive policies, listeners and operator
 * transitions are not modelled.</li>
 * </ul>
 */
class CircuitBreakerLincheckTest {

	static final Duration OPEN_WAIT = Duration.ofSeconds(10);
	static final BreakerConfig CONFIG = BreakerConfig.custom()
			.countWindow(4)
			.minimumCalls(2)
			.failureRateThreshold(0.5)
			.openWait(OPEN_WAIT)
			.openWaitMultiplier(1.0)
			.openWaitJitter(0)
			.halfOpenProbes(2)
			.successesToClose(1)
			.hysteresis(0.2)
			.minimumDwell(Duration.ZERO)
			.maxTimeInHalfOpen(Duration.ofHours(1))
			.build();
	static final Outcome[] OUTCOMES = { Outcome.SUCCESS, Outcome.FAILURE, Outcome.CANCELLED };
	static final int MAX_THREAD_IDS = 8;

	/**
	 * The breaker under test, CLOSED with one success in its window (so one failure reaches the
	 * 0.5 threshold), with the permits each thread holds (latest first).
	 */
	public static class Breaker {

		final ManualClock clock = new ManualClock();
		final CircuitBreaker breaker = CircuitBreaker.builder("lincheck").config(CONFIG).clock(clock).build();
		@SuppressWarnings("unchecked")
		final Deque<BreakerPermit>[] held = new Deque[MAX_THREAD_IDS];

		public Breaker() {
			for (int i = 0; i < held.length; i++) {
				held[i] = new ArrayDeque<>();
			}
			acquire(0);
			record(0, 0);
		}

		@Operation
		public boolean acquire(@Param(gen = ThreadIdGen.class) int thread) {
			BreakerPermit p = breaker.tryAcquire();
			if (p == null) {
				return false;
			}
			held[thread].push(p);
			return true;
		}

		/** Settles this thread's latest permit; does nothing when it holds none. */
		@Operation
		public void record(@Param(gen = ThreadIdGen.class) int thread, @Param(gen = IntGen.class, conf = "0:2") int outcome) {
			BreakerPermit p = held[thread].poll();
			if (p != null) {
				p.record(OUTCOMES[outcome], -1L);
			}
		}

		@Operation
		public String state() {
			return breaker.state().name();
		}

		/** The open wait passes. */
		@Quiescent
		@Operation
		public void waitOpen() {
			clock.advance(OPEN_WAIT);
		}

		@Quiescent
		@Operation
		public String snapshot() {
			BreakerSnapshot s = breaker.snapshot();
			BreakerPhase p = breaker.phase();
			String probes = p.state == BreakerState.HALF_OPEN ? " probes=" + p.granted : "";
			return p.state + " calls=" + s.calls() + " failures=" + s.failures() + " rejected="
					+ breaker.rejectedCalls() + probes;
		}
	}

	/** Starts tripped, its open wait over: the first acquire moves it to HALF_OPEN. */
	public static class TrippedBreaker extends Breaker {

		public TrippedBreaker() {
			tripThenWait(this::acquire, this::record, this::waitOpen);
		}
	}

	/** One failure next to the seeded success: 0.5 of two calls trips the breaker; then its wait passes. */
	static void tripThenWait(IntPredicate acquire, BiConsumer<Integer, Integer> record, Runnable waitOpen) {
		acquire.test(0);
		record.accept(0, 1);
		waitOpen.run();
	}

	private static ModelCheckingOptions modelChecking() {
		return new ModelCheckingOptions()
				.iterations(12)
				.invocationsPerIteration(150)
				.threads(2)
				.actorsPerThread(3)
				.actorsBefore(4)
				.actorsAfter(1)
				.executionGenerator(QuiescentActorsGenerator.class);
	}

	@Test
	void fromClosedIsLinearizable() {
		modelChecking().sequentialSpecification(Spec.class).check(Breaker.class);
	}

	@Test
	void fromHalfOpenIsLinearizable() {
		modelChecking().sequentialSpecification(TrippedSpec.class).check(TrippedBreaker.class);
	}

	/**
	 * One probe fails while the other succeeds: the breaker must re-open, never close.
	 *
	 * <p>Guards the single-CAS probe tally: were calls and failures counted separately, the success
	 * could decide between the failure's two increments, see two calls and no failure, and close.
	 */
	@Test
	void racingProbeResultsNeverCloseOnAFailedProbe() {
		Class<?> c = TrippedBreaker.class;
		new ModelCheckingOptions()
				.iterations(0)
				.invocationsPerIteration(500)
				.addCustomScenario(Scenarios.of(List.of(),
						List.of(List.of(actor(c, "acquire", 1), actor(c, "record", 1, 1)),
								List.of(actor(c, "acquire", 2), actor(c, "record", 2, 0))),
						List.of(actor(c, "state"), actor(c, "snapshot"))))
				.sequentialSpecification(TrippedSpec.class)
				.check(c);
	}

	/**
	 * The probe that closes the breaker races a call of the new CLOSED stay: that call must be
	 * judged against a fresh window, not against the failures that tripped the breaker before.
	 *
	 * <p>Guards the order inside {@code close}: the window is reset before the CLOSED phase is
	 * published. The other way round, a call granted in between would be recorded into the old
	 * window, re-trip the breaker on the old failures, and then be erased by the reset.
	 */
	@Test
	void aCallRightAfterClosingIsJudgedOnAFreshWindow() {
		Class<?> c = TrippedBreaker.class;
		new ModelCheckingOptions()
				.iterations(0)
				.invocationsPerIteration(500)
				.addCustomScenario(Scenarios.of(
						List.of(actor(c, "acquire", 1), actor(c, "acquire", 1), actor(c, "record", 1, 0)),
						List.of(List.of(actor(c, "record", 1, 0)),
								List.of(actor(c, "acquire", 2), actor(c, "record", 2, 1))),
						List.of(actor(c, "state"), actor(c, "snapshot"))))
				.sequentialSpecification(TrippedSpec.class)
				.check(c);
	}

	/**
	 * The call whose acquire ends the open wait races a probe that fails at once: it must hold a
	 * probe of the HALF_OPEN stay it opened, never be refused by the re-open that stay has already
	 * seen (the other thread saw HALF_OPEN, so some acquire moved the breaker there, and only this one
	 * could have).
	 */
	@Test
	void theCallThatEndsTheOpenWaitHoldsTheFirstProbe() {
		Class<?> c = TrippedBreaker.class;
		new ModelCheckingOptions()
				.iterations(0)
				.invocationsPerIteration(500)
				.addCustomScenario(Scenarios.of(List.of(),
						List.of(List.of(actor(c, "acquire", 1)),
								List.of(actor(c, "state"), actor(c, "acquire", 2), actor(c, "record", 2, 1))),
						List.of(actor(c, "snapshot"))))
				.sequentialSpecification(TrippedSpec.class)
				.check(c);
	}

	@Test
	void underStress() {
		new StressOptions()
				.iterations(8)
				.invocationsPerIteration(300)
				.threads(3)
				.actorsPerThread(2)
				.actorsBefore(3)
				.actorsAfter(1)
				.executionGenerator(QuiescentActorsGenerator.class)
				.sequentialSpecification(TrippedSpec.class)
				.check(TrippedBreaker.class);
	}

	/** The breaker's rules for {@link #CONFIG}, one operation at a time. */
	public static class Spec {

		static final long WAIT = OPEN_WAIT.toNanos();
		static final int WINDOW = 4;

		/** One stay in one state. */
		static final class Stay {
			final BreakerState state;
			final long enteredAt;
			final long openUntil;
			int granted;
			int probeCalls;
			int probeFailures;
			int probeHealthy;

			Stay(BreakerState state, long enteredAt, long openUntil) {
				this.state = state;
				this.enteredAt = enteredAt;
				this.openUntil = openUntil;
			}
		}

		record Permit(Stay stay, boolean probe) {
		}

		long now;
		long rejected;
		Stay stay = new Stay(BreakerState.CLOSED, 0, 0);
		/** The window's calls since it was last reset, latest last (true = failure); the last four count. */
		final List<Boolean> window = new ArrayList<>();
		@SuppressWarnings("unchecked")
		final Deque<Permit>[] held = new Deque[MAX_THREAD_IDS];

		public Spec() {
			for (int i = 0; i < held.length; i++) {
				held[i] = new ArrayDeque<>();
			}
			acquire(0);
			record(0, 0);
		}

		public boolean acquire(int thread) {
			if (stay.state == BreakerState.OPEN) {
				if (now < stay.openUntil) {
					rejected++;
					return false;
				}
				stay = new Stay(BreakerState.HALF_OPEN, now, 0);
			}
			if (stay.state == BreakerState.HALF_OPEN) {
				if (stay.granted >= CONFIG.halfOpenProbes()) {
					rejected++;
					return false;
				}
				stay.granted++;
				held[thread].push(new Permit(stay, true));
				return true;
			}
			held[thread].push(new Permit(stay, false));
			return true;
		}

		public void record(int thread, int outcome) {
			Permit p = held[thread].poll();
			if (p == null) {
				return;
			}
			Outcome o = OUTCOMES[outcome];
			if (o == Outcome.CANCELLED) {
				if (p.probe()) {
					p.stay().granted--; // the slot comes back, even to a stay that has ended
				}
				return;
			}
			boolean failure = o == Outcome.FAILURE;
			window.add(failure);
			if (p.stay() != stay) {
				return; // granted in an earlier stay: counted, decides nothing
			}
			if (stay.state == BreakerState.CLOSED) {
				if (failure && pressure(calls(), failures()) >= 1) {
					open();
				}
			}
			else if (stay.state == BreakerState.HALF_OPEN) {
				stay.probeCalls++;
				if (failure) {
					stay.probeFailures++;
				}
				else {
					stay.probeHealthy++;
				}
				decideHalfOpen();
			}
		}

		public String state() {
			return stay.state.name();
		}

		public void waitOpen() {
			now += WAIT;
		}

		public String snapshot() {
			String probes = stay.state == BreakerState.HALF_OPEN ? " probes=" + stay.granted : "";
			return stay.state + " calls=" + calls() + " failures=" + failures() + " rejected=" + rejected + probes;
		}

		private void decideHalfOpen() {
			int calls = stay.probeCalls;
			int failures = stay.probeFailures;
			double pressure = rate(calls, failures, 0);
			int outstanding = Math.max(0, CONFIG.halfOpenProbes() - calls);
			double worst = outstanding == 0 ? pressure
					: rate(calls + outstanding, failures + outstanding, outstanding);
			if (stay.probeHealthy >= CONFIG.successesToClose() && worst < 1 - CONFIG.hysteresis()) {
				stay = new Stay(BreakerState.CLOSED, now, 0);
				window.clear();
			}
			else if (calls >= CONFIG.successesToClose() && pressure >= 1) {
				open();
			}
			else if (calls >= CONFIG.halfOpenProbes()) {
				open();
			}
		}

		private void open() {
			stay = new Stay(BreakerState.OPEN, now, now + WAIT);
		}

		private long calls() {
			return Math.min(window.size(), WINDOW);
		}

		private long failures() {
			long f = 0;
			for (int i = Math.max(0, window.size() - WINDOW); i < window.size(); i++) {
				f += window.get(i) ? 1 : 0;
			}
			return f;
		}

		/** The classic rule: no pressure below the minimum calls. */
		private static double pressure(long calls, long failures) {
			return calls < CONFIG.minimumCalls() ? 0 : rate(calls, failures, 0);
		}

		private static double rate(long calls, long failures, long slow) {
			if (calls <= 0) {
				return 0;
			}
			double failureRate = Math.min(1.0, (double) failures / calls);
			double slowRate = Math.min(1.0, (double) slow / calls);
			return Math.max(failureRate / CONFIG.failureRateThreshold(), slowRate / CONFIG.slowCallRateThreshold());
		}
	}

	/** {@link Spec} from the same start as {@link TrippedBreaker}. */
	public static class TrippedSpec extends Spec {

		public TrippedSpec() {
			tripThenWait(this::acquire, this::record, this::waitOpen);
		}
	}
}
