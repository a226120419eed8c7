package dev.aiguard.admission;

import java.time.Duration;
import java.util.Objects;

import org.jspecify.annotations.Nullable;

/**
 * The shape of one priority lane: how many streams it runs, how many requests may wait and for
 * how long, the size of its Scheduler, and how it shares capacity with the other lanes.
 * Immutable and copy-on-write: every setter returns a new spec, so one spec can be a template.
 *
 * <pre>{@code
 * LaneSpec interactive = LaneSpec.of(4)
 *     .maxQueueSize(32)
 *     .maxQueueWait(Duration.ofSeconds(2))
 *     .lendToLower(1.0)            // idle P0 permits may run batch work...
 *     .preemptBorrowers(true);     // ...which a P0 arrival takes back
 * LaneSpec batch = LaneSpec.of(8)
 *     .maxQueueSize(1_000)
 *     .maxQueueWait(Duration.ofMinutes(2))
 *     .agingAfter(Duration.ofSeconds(30));
 * }</pre>
 *
 * <table>
 * <caption>Fields and defaults</caption>
 * <tr><th>field</th><th>default</th><th>meaning</th></tr>
 * <tr><td>{@code concurrency}</td><td>(required)</td><td>permits: streams of this lane in flight (0 = the lane
 * only borrows)</td></tr>
 * <tr><td>{@code maxQueueSize}</td><td>256</td><td>waiters parked in the lane's queue; one more is refused
 * with {@code QUEUE_FULL} (0 = never wait)</td></tr>
 * <tr><td>{@code maxQueueWait}</td><td>30 s</td><td>longest wait in the queue, then {@code WAIT_TIMEOUT}</td></tr>
 * <tr><td>{@code threadCap}</td><td>10 &times; CPUs</td><td>threads of the lane's bounded-elastic Scheduler</td></tr>
 * <tr><td>{@code queuedTaskCap}</td><td>100 000</td><td>tasks the lane's Scheduler may queue</td></tr>
 * <tr><td>{@code borrowFromLower}</td><td>true</td><td>this lane's requests may take idle permits of less urgent
 * lanes</td></tr>
 * <tr><td>{@code reservedForOwn}</td><td>0</td><td>permits of this lane that more urgent lanes never borrow</td></tr>
 * <tr><td>{@code agingAfter}</td><td>off</td><td>each full period a waiter spends queued serves it one
 * priority higher</td></tr>
 * <tr><td>{@code lendToLower}</td><td>0.0 (off)</td><td>fraction of this lane's permits that less urgent requests
 * may use while they are idle (work-conserving lending)</td></tr>
 * <tr><td>{@code preemptBorrowers}</td><td>false</td><td>lent permits of this lane can be taken back: an arrival
 * that finds nothing free stops a less urgent stream running on one ({@link PreemptedException})</td></tr>
 * </table>
 *
 * Settings that have nothing to act on are accepted and ignored: borrowing on the least urgent
 * lane, lending or preemption on it, a reservation on the most urgent one.
 */
public final class LaneSpec {

	static final int DEFAULT_MAX_QUEUE_SIZE = 256;
	static final Duration DEFAULT_MAX_QUEUE_WAIT = Duration.ofSeconds(30);
	static final int DEFAULT_THREAD_CAP = 10 * Runtime.getRuntime().availableProcessors();
	static final int DEFAULT_QUEUED_TASK_CAP = 100_000;

	private final int concurrency;
	private final int maxQueueSize;
	private final Duration maxQueueWait;
	private final int threadCap;
	private final int queuedTaskCap;
	private final boolean borrowFromLower;
	private final int reservedForOwn;
	private final @Nullable Duration agingAfter;
	private final double lendToLower;
	private final boolean preemptBorrowers;

	private LaneSpec(int concurrency, int maxQueueSize, Duration maxQueueWait, int threadCap, int queuedTaskCap,
			boolean borrowFromLower, int reservedForOwn, @Nullable Duration agingAfter, double lendToLower,
			boolean preemptBorrowers) {
		this.concurrency = concurrency;
		this.maxQueueSize = maxQueueSize;
		this.maxQueueWait = maxQueueWait;
		this.threadCap = threadCap;
		this.queuedTaskCap = queuedTaskCap;
		this.borrowFromLower = borrowFromLower;
		this.reservedForOwn = reservedForOwn;
		this.agingAfter = agingAfter;
		this.lendToLower = lendToLower;
		this.preemptBorrowers = preemptBorrowers;
	}

	/**
	 * A lane running at most {@code concurrency} streams on its own permits, with the defaults
	 * above for everything else.
	 *
	 * @throws IllegalArgumentException when {@code concurrency} is negative
	 */
	public static LaneSpec of(int concurrency) {
		return new LaneSpec(checkConcurrency(concurrency), DEFAULT_MAX_QUEUE_SIZE, DEFAULT_MAX_QUEUE_WAIT,
				DEFAULT_THREAD_CAP, DEFAULT_QUEUED_TASK_CAP, true, 0, null, 0.0, false);
	}

	/**
	 * @param permits streams of this lane in flight at once; 0 makes a lane that only borrows
	 * @throws IllegalArgumentException when negative
	 */
	public LaneSpec concurrency(int permits) {
		return new LaneSpec(checkConcurrency(permits), maxQueueSize, maxQueueWait, threadCap, queuedTaskCap,
				borrowFromLower, reservedForOwn, agingAfter, lendToLower, preemptBorrowers);
	}

	/**
	 * @param size waiters the lane's queue holds; 0 refuses at once whatever cannot run
	 * @throws IllegalArgumentException when negative
	 */
	public LaneSpec maxQueueSize(int size) {
		if (size < 0) {
			throw new IllegalArgumentException("maxQueueSize must be >= 0, was " + size);
		}
		return new LaneSpec(concurrency, size, maxQueueWait, threadCap, queuedTaskCap, borrowFromLower,
				reservedForOwn, agingAfter, lendToLower, preemptBorrowers);
	}

	/**
	 * @param wait longest time a request waits in the queue before {@code WAIT_TIMEOUT}
	 * @throws IllegalArgumentException when null, zero or negative
	 */
	public LaneSpec maxQueueWait(Duration wait) {
		return new LaneSpec(concurrency, maxQueueSize, positive("maxQueueWait", wait), threadCap, queuedTaskCap,
				borrowFromLower, reservedForOwn, agingAfter, lendToLower, preemptBorrowers);
	}

	/**
	 * @param threads threads the lane's bounded-elastic Scheduler may create
	 * @throws IllegalArgumentException when below 1
	 */
	public LaneSpec threadCap(int threads) {
		if (threads < 1) {
			throw new IllegalArgumentException("threadCap must be >= 1, was " + threads);
		}
		return new LaneSpec(concurrency, maxQueueSize, maxQueueWait, threads, queuedTaskCap, borrowFromLower,
				reservedForOwn, agingAfter, lendToLower, preemptBorrowers);
	}

	/**
	 * @param tasks tasks the lane's Scheduler may queue once all its threads are busy
	 * @throws IllegalArgumentException when below 1
	 */
	public LaneSpec queuedTaskCap(int tasks) {
		if (tasks < 1) {
			throw new IllegalArgumentException("queuedTaskCap must be >= 1, was " + tasks);
		}
		return new LaneSpec(concurrency, maxQueueSize, maxQueueWait, threadCap, tasks, borrowFromLower,
				reservedForOwn, agingAfter, lendToLower, preemptBorrowers);
	}

	/** Whether requests of this lane may take idle permits of less urgent lanes (on by default). */
	public LaneSpec borrowFromLower(boolean borrow) {
		return new LaneSpec(concurrency, maxQueueSize, maxQueueWait, threadCap, queuedTaskCap, borrow, reservedForOwn,
				agingAfter, lendToLower, preemptBorrowers);
	}

	/**
	 * @param permits permits of this lane that more urgent lanes may never borrow, so this
	 *        priority always keeps a floor of capacity
	 * @throws IllegalArgumentException when negative (a value above {@code concurrency} fails at
	 *         {@link PriorityLanes.Builder#build()})
	 */
	public LaneSpec reservedForOwn(int permits) {
		if (permits < 0) {
			throw new IllegalArgumentException("reservedForOwn must be >= 0, was " + permits);
		}
		return new LaneSpec(concurrency, maxQueueSize, maxQueueWait, threadCap, queuedTaskCap, borrowFromLower,
				permits, agingAfter, lendToLower, preemptBorrowers);
	}

	/**
	 * Aging: each full {@code period} a request spends in this lane's queue serves it one priority
	 * higher when a permit frees (P2 waiting two periods competes as P0, ties going to the earlier
	 * arrival), so a flood of urgent work cannot starve it forever. Aging changes the order in
	 * which waiters are served, not which permits they may use.
	 *
	 * @param period the wait that earns one step, or {@code null} for no aging (the default)
	 * @throws IllegalArgumentException when zero or negative
	 */
	public LaneSpec agingAfter(Duration period) {
		return new LaneSpec(concurrency, maxQueueSize, maxQueueWait, threadCap, queuedTaskCap, borrowFromLower,
				reservedForOwn, positiveOrNull("agingAfter", period), lendToLower, preemptBorrowers);
	}

	/**
	 * Work-conserving lending: less urgent requests may run on up to {@code fraction} of this
	 * lane's permits while this lane has nobody waiting. Off (0.0) by default. Without
	 * {@link #preemptBorrowers(boolean)} an urgent arrival may then wait for a lent permit to
	 * come back.
	 *
	 * @throws IllegalArgumentException when not between 0.0 and 1.0
	 */
	public LaneSpec lendToLower(double fraction) {
		if (!(fraction >= 0.0 && fraction <= 1.0)) {
			throw new IllegalArgumentException("lendToLower must be between 0.0 and 1.0, was " + fraction);
		}
		return new LaneSpec(concurrency, maxQueueSize, maxQueueWait, threadCap, queuedTaskCap, borrowFromLower,
				reservedForOwn, agingAfter, fraction, preemptBorrowers);
	}

	/**
	 * Whether permits this lane lent to less urgent requests can be taken back. An arrival that
	 * finds nothing free (its own lane full, no idle permit it may borrow) takes back a lent permit
	 * of its own lane, else of a less urgent lane it may borrow from (so P0 can also reclaim a P1
	 * permit lent to P2), and the stream that ran on it fails with {@link PreemptedException}.
	 * Needs {@link #lendToLower(double)} &gt; 0 (checked at {@link PriorityLanes.Builder#build()}).
	 */
	public LaneSpec preemptBorrowers(boolean preempt) {
		return new LaneSpec(concurrency, maxQueueSize, maxQueueWait, threadCap, queuedTaskCap, borrowFromLower,
				reservedForOwn, agingAfter, lendToLower, preempt);
	}

	public int concurrency() {
		return concurrency;
	}

	public int maxQueueSize() {
		return maxQueueSize;
	}

	public Duration maxQueueWait() {
		return maxQueueWait;
	}

	public int threadCap() {
		return threadCap;
	}

	public int queuedTaskCap() {
		return queuedTaskCap;
	}

	public boolean borrowFromLower() {
		return borrowFromLower;
	}

	public int reservedForOwn() {
		return reservedForOwn;
	}

	/** @return the aging period, or {@code null} when aging is off */
	public @Nullable Duration agingAfter() {
		return agingAfter;
	}

	public double lendToLower() {
		return lendToLower;
	}

	public boolean preemptBorrowers() {
		return preemptBorrowers;
	}

	/** @return how many permits may be lent to less urgent requests at once */
	int lendCap() {
		return lendCap(concurrency);
	}

	/** @return permits a lane of this spec resized to {@code permits} lends to less urgent ones */
	int lendCap(int permits) {
		return (int) Math.floor(lendToLower * permits);
	}

	private static int checkConcurrency(int permits) {
		if (permits < 0) {
			throw new IllegalArgumentException("concurrency must be >= 0, was " + permits);
		}
		return permits;
	}

	private static @Nullable Duration positiveOrNull(String field, @Nullable Duration value) {
		return value == null ? null : positive(field, value);
	}

	private static Duration positive(String field, @Nullable Duration value) {
		if (value == null) {
			throw new IllegalArgumentException(field + " must be set, was null");
		}
		if (value.isNegative() || value.isZero()) {
			throw new IllegalArgumentException(field + " must be > 0, was " + value);
		}
		return value;
	}

	@Override
	public boolean equals(Object o) {
		if (this == o) {
			return true;
		}
		if (!(o instanceof LaneSpec)) {
			return false;
		}
		LaneSpec that = (LaneSpec) o;
		return concurrency == that.concurrency && maxQueueSize == that.maxQueueSize && threadCap == that.threadCap
				&& queuedTaskCap == that.queuedTaskCap && borrowFromLower == that.borrowFromLower
				&& reservedForOwn == that.reservedForOwn && Double.compare(lendToLower, that.lendToLower) == 0
				&& preemptBorrowers == that.preemptBorrowers && maxQueueWait.equals(that.maxQueueWait)
				&& Objects.equals(agingAfter, that.agingAfter);
	}

	@Override
	public int hashCode() {
		return Objects.hash(concurrency, maxQueueSize, maxQueueWait, threadCap, queuedTaskCap, borrowFromLower,
				reservedForOwn, agingAfter, lendToLower, preemptBorrowers);
	}

	@Override
	public String toString() {
		return "LaneSpec{concurrency=" + concurrency + ", maxQueueSize=" + maxQueueSize + ", maxQueueWait="
				+ maxQueueWait + ", threadCap=" + threadCap + ", queuedTaskCap=" + queuedTaskCap + ", borrowFromLower="
				+ borrowFromLower + ", reservedForOwn=" + reservedForOwn + ", agingAfter=" + agingAfter
				+ ", lendToLower=" + lendToLower + ", preemptBorrowers=" + preemptBorrowers + '}';
	}
}
