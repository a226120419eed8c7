package dev.aiguard.benchmarks;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Threads;

import dev.aiguard.core.Outcome;
import dev.aiguard.breaker.BreakerConfig;
import dev.aiguard.breaker.BreakerPermit;
import dev.aiguard.breaker.CircuitBreaker;
import dev.aiguard.breaker.TripPolicy;
import io.github.resilience4j.circuitbreaker.CircuitBreakerConfig;

/**
 * The cost of guarding one call with a CLOSED breaker: take the permission, record a success.
 * Ours against resilience4j 2.4.0 (the baseline), with the same window shape on both sides, at one
 * and at two threads sharing the breaker.
 *
 * <p>{@code permitAndRecord} uses the plain API, so our breaker reads its own clock where it needs
 * one (the time window), as resilience4j does. {@code permitAndRecordAt} passes a timestamp the way
 * the guard does (it has already read the scheduler's time for the attempt); here each thread
 * refreshes its timestamp from {@link System#nanoTime()} every {@value #CLOCK_EVERY} calls, so the
 * buckets still turn over in real time and the clock costs almost nothing per call.
 *
 * <p>{@code permitAndRecordTripRules} is {@code permitAndRecord} on a breaker with the latency rules
 * switched on: the classic, latency-percentile and adaptive (with a starting baseline) policies
 * together, consecutive failures, a trip delay, a warm-up, a ramp-up and slowness normalised by a
 * prompt size given to every permit. {@code permitAndRecordAllPolicies} adds the decayed and
 * performance-score policies and a predictive forecast of them all: every policy the library ships.
 * {@code permitAndRecordAllPoliciesAt} is that breaker fed the caller's time (no clock read), and
 * {@code clockRead} one {@link System#nanoTime()}: the part of the plain API's cost that any policy
 * needing time pays.
 *
 * <pre>
 * java -jar benchmarks/target/benchmarks.jar BreakerBenchmark -f 1 -wi 3 -w 1s -i 5 -r 1s
 * </pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class BreakerBenchmark {

	/** Time to first token of the recorded calls: fast, so neither breaker counts them as slow. */
	private static final long TTFT_NANOS = 300_000_000L;

	/** The prompt size given to each permit of the all-policies breaker. */
	private static final int PROMPT_TOKENS = 1000;

	/** Calls between two clock readings in the timestamped variants. */
	static final int CLOCK_EVERY = 1024;

	/** The caller's own notion of "now", one per thread, as a guard holds per attempt. */
	@State(Scope.Thread)
	public static class CallerClock {

		private long now = System.nanoTime();
		private int calls;

		long now() {
			if (++calls == CLOCK_EVERY) {
				calls = 0;
				now = System.nanoTime();
			}
			return now;
		}
	}

	/** TIME: 60 buckets of 1 s (our default); COUNT: the last 100 calls (resilience4j's default). */
	@Param({ "TIME", "COUNT" })
	public String window;

	private CircuitBreaker ours;
	private CircuitBreaker oursTripRules;
	private CircuitBreaker oursAllPolicies;
	private io.github.resilience4j.circuitbreaker.CircuitBreaker resilience4j;

	@Setup
	public void setUp() {
		boolean time = "TIME".equals(window);
		BreakerConfig config = time ? BreakerConfig.defaults() : BreakerConfig.custom().countWindow(100).build();
		ours = CircuitBreaker.of("bench", config);
		oursTripRules = CircuitBreaker.of("bench-rules", tripRules(config));
		oursAllPolicies = CircuitBreaker.of("bench-all", allPolicies(config));
		CircuitBreakerConfig theirs = CircuitBreakerConfig.custom()
				.slidingWindowType(time ? CircuitBreakerConfig.SlidingWindowType.TIME_BASED
						: CircuitBreakerConfig.SlidingWindowType.COUNT_BASED)
				.slidingWindowSize(time ? 60 : 100)
				.build();
		resilience4j = io.github.resilience4j.circuitbreaker.CircuitBreaker.of("bench", theirs);
	}

	@Benchmark
	@Threads(1)
	public BreakerPermit permitAndRecord() {
		return acquireAndRecord();
	}

	@Benchmark
	@Threads(1)
	public boolean resilience4jPermitAndRecord() {
		return resilience4jAcquireAndRecord();
	}

	@Benchmark
	@Threads(2)
	public BreakerPermit permitAndRecordTwoThreads() {
		return acquireAndRecord();
	}

	@Benchmark
	@Threads(2)
	public boolean resilience4jPermitAndRecordTwoThreads() {
		return resilience4jAcquireAndRecord();
	}

	@Benchmark
	@Threads(1)
	public BreakerPermit permitAndRecordAt(CallerClock clock) {
		return acquireAndRecordAt(clock.now());
	}

	@Benchmark
	@Threads(2)
	public BreakerPermit permitAndRecordAtTwoThreads(CallerClock clock) {
		return acquireAndRecordAt(clock.now());
	}

	/** {@code base} with the latency trip policies and every rule beside the policy switched on. */
	static BreakerConfig tripRules(BreakerConfig base) {
		TripPolicy policies = TripPolicy.anyOf(TripPolicy.failureRate(),
				TripPolicy.ttftPercentile(Duration.ofSeconds(2)).percentile(0.99),
				TripPolicy.adaptiveTtft().startingBaseline(Duration.ofMillis(300)));
		return BreakerConfig.from(base).tripPolicy(policies).consecutiveFailuresToTrip(5)
				.tripDelay(Duration.ofSeconds(2)).warmUp(Duration.ofMinutes(1)).rampUp(Duration.ofSeconds(30))
				.slowTimeToFirstTokenPerPromptToken(Duration.ofMillis(5)).build();
	}

	@Benchmark
	@Threads(1)
	public BreakerPermit permitAndRecordTripRules() {
		return acquireAndRecord(oursTripRules);
	}

	@Benchmark
	@Threads(2)
	public BreakerPermit permitAndRecordTripRulesTwoThreads() {
		return acquireAndRecord(oursTripRules);
	}

	/** {@code base} with every trip policy and every rule beside them switched on. */
	static BreakerConfig allPolicies(BreakerConfig base) {
		TripPolicy policies = TripPolicy.anyOf(TripPolicy.failureRate(), TripPolicy.decayedFailureRate(),
				TripPolicy.performanceScore(Duration.ofMillis(300)),
				TripPolicy.adaptiveTtft().startingBaseline(Duration.ofMillis(300)),
				TripPolicy.ttftPercentile(Duration.ofSeconds(2)).percentile(0.99));
		return BreakerConfig.from(base).tripPolicy(TripPolicy.predictive(policies)).consecutiveFailuresToTrip(5)
				.tripDelay(Duration.ofSeconds(2)).warmUp(Duration.ofMinutes(1)).rampUp(Duration.ofSeconds(30))
				.slowTimeToFirstTokenPerPromptToken(Duration.ofMillis(5)).build();
	}

	@Benchmark
	@Threads(1)
	public BreakerPermit permitAndRecordAllPolicies() {
		return acquireAndRecordAllPolicies();
	}

	@Benchmark
	@Threads(2)
	public BreakerPermit permitAndRecordAllPoliciesTwoThreads() {
		return acquireAndRecordAllPolicies();
	}

	@Benchmark
	@Threads(1)
	public BreakerPermit permitAndRecordAllPoliciesAt(CallerClock clock) {
		return acquireAndRecordAt(oursAllPolicies, clock.now());
	}

	@Benchmark
	@Threads(2)
	public BreakerPermit permitAndRecordAllPoliciesAtTwoThreads(CallerClock clock) {
		return acquireAndRecordAt(oursAllPolicies, clock.now());
	}

	/** One reading of the clock the plain API reads per record: the floor of any policy that needs time. */
	@Benchmark
	@Threads(1)
	public long clockRead() {
		return System.nanoTime();
	}

	private BreakerPermit acquireAndRecordAllPolicies() {
		return acquireAndRecord(oursAllPolicies);
	}

	private static BreakerPermit acquireAndRecordAt(CircuitBreaker breaker, long now) {
		BreakerPermit permit = breaker.tryAcquire(now);
		permit.promptTokens(PROMPT_TOKENS).record(Outcome.SUCCESS, TTFT_NANOS, now);
		return permit;
	}

	private static BreakerPermit acquireAndRecord(CircuitBreaker breaker) {
		BreakerPermit permit = breaker.tryAcquire();
		permit.promptTokens(PROMPT_TOKENS).record(Outcome.SUCCESS, TTFT_NANOS);
		return permit;
	}

	private BreakerPermit acquireAndRecordAt(long now) {
		BreakerPermit permit = ours.tryAcquire(now);
		permit.record(Outcome.SUCCESS, TTFT_NANOS, now);
		return permit;
	}

	private BreakerPermit acquireAndRecord() {
		BreakerPermit permit = ours.tryAcquire();
		permit.record(Outcome.SUCCESS, TTFT_NANOS);
		return permit;
	}

	private boolean resilience4jAcquireAndRecord() {
		resilience4j.acquirePermission();
		resilience4j.onSuccess(TTFT_NANOS, TimeUnit.NANOSECONDS);
		return true;
	}
}
