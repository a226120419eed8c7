package dev.aiguard.benchmarks;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

import dev.aiguard.admission.AdmissionRejectedException;
import dev.aiguard.budget.BudgetGate;
import dev.aiguard.budget.BudgetSpec;
import dev.aiguard.budget.LocalBucketStore;
import dev.aiguard.budget.TenantLimits;
import dev.aiguard.core.Priority;
import dev.aiguard.metrics.GuardMetrics;
import io.github.bucket4j.Bucket;
import io.github.bucket4j.TimeMeter;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

/**
 * Cost of one local budget check per request — the guard's tenant admission
 * ({@code BudgetGate.tenant(id)} + {@code admit(..)}: the tenant's resolved buckets, the store's
 * lookup, Bucket4j's take, the reserve check, the callback) — against a bare Bucket4j
 * {@code tryConsume(1)} on a lock-free local bucket, measured in the same run. Both buckets are
 * large enough never to refuse, so both measure the admitting path.
 *
 * <ul>
 * <li>{@code bareTryConsume}: {@code bucket.tryConsume(1)}, the baseline (Bucket4j's default
 * millisecond clock);</li>
 * <li>{@code bareTryConsumeNanos}, {@code bareProbeNanos}: floors, the same bucket on the
 * nanosecond clock the local store uses, and with {@code tryConsumeAndReturnRemaining} (what a take
 * that must report what is left costs); {@code nanoTime}: one clock read;</li>
 * <li>{@code budgetCheck}: a tenant with a requests-per-minute budget;</li>
 * <li>{@code budgetCheckWithReserve}: the same with {@code reserve(P0, 0.10)}, asked by a P1 request.</li>
 * </ul>
 *
 * Run: {@code java -jar benchmarks/target/benchmarks.jar BudgetCheckBenchmark -f 1 -wi 3 -w 1s -i 5 -r 1s}
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class BudgetCheckBenchmark {

	/**
	 * Never refuses within a run: a minute holds more than a benchmark can take, under Bucket4j's
	 * highest refill rate (one unit per nanosecond).
	 */
	static final long PER_MINUTE = 50_000_000_000L;

	/** Counts admissions, so the check's result is used. */
	static final class Sink implements BudgetGate.Admission {
		long admitted;

		@Override
		public void budgetAdmitted(long tokensTaken, long costTaken) {
			admitted++;
		}

		@Override
		public void budgetRefused(AdmissionRejectedException refusal) {
			throw new IllegalStateException("refused in a benchmark whose budget never runs out", refusal);
		}
	}

	Bucket bare;
	Bucket bareNanos;
	BudgetGate gate;
	BudgetGate reserving;
	final Sink sink = new Sink();

	@Setup
	public void setUp() {
		bare = Bucket.builder().addLimit(limit -> limit.capacity(PER_MINUTE).refillGreedy(PER_MINUTE, Duration.ofMinutes(1)))
				.build();
		bareNanos = Bucket.builder().withCustomTimePrecision(TimeMeter.SYSTEM_NANOTIME)
				.addLimit(limit -> limit.capacity(PER_MINUTE).refillGreedy(PER_MINUTE, Duration.ofMinutes(1))).build();
		BudgetSpec spec = BudgetSpec.defaults().tenants(TenantLimits.unlimited().requestsPerMinute(PER_MINUTE));
		gate = BudgetGate.create("bench", spec, LocalBucketStore.create(), GuardMetrics.noop());
		reserving = BudgetGate.create("bench", spec.reserve(Priority.P0, 0.10), LocalBucketStore.create(),
				GuardMetrics.noop());
	}

	@Benchmark
	public boolean bareTryConsume() {
		return bare.tryConsume(1);
	}

	@Benchmark
	public boolean bareTryConsumeNanos() {
		return bareNanos.tryConsume(1);
	}

	@Benchmark
	public Object bareProbeNanos() {
		return bareNanos.tryConsumeAndReturnRemaining(1);
	}

	@Benchmark
	public long nanoTime() {
		return System.nanoTime();
	}

	@Benchmark
	public long budgetCheck() {
		gate.admit(gate.tenant("acme"), Priority.P1, 0L, 0L, sink);
		return sink.admitted;
	}

	@Benchmark
	public long budgetCheckWithReserve() {
		reserving.admit(reserving.tenant("acme"), Priority.P1, 0L, 0L, sink);
		return sink.admitted;
	}
}
