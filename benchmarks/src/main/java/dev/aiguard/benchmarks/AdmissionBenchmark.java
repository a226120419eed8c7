package dev.aiguard.benchmarks;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;

import dev.aiguard.core.Priority;
import dev.aiguard.admission.LanePermit;
import dev.aiguard.admission.LaneSpec;
import dev.aiguard.admission.PriorityLanes;
import io.github.resilience4j.bulkhead.Bulkhead;
import io.github.resilience4j.bulkhead.BulkheadConfig;
import io.github.resilience4j.reactor.bulkhead.operator.BulkheadOperator;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Threads;
import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * Cost of one admission (acquire + release) when a permit is free, against resilience4j's
 * semaphore bulkhead measured in the same run, on 1 and 2 threads sharing one instance.
 *
 * <ul>
 * <li>{@code *AcquireRelease}: the bare protocol. Lanes: subscribe to {@code acquire(P0)}, release
 * the permit in {@code onNext}. Bulkhead: {@code tryAcquirePermission()} + {@code onComplete()}.</li>
 * <li>{@code *Operator}: a one-element Flux through {@code lanes.admit(P0)} against the same Flux
 * through resilience4j's {@code BulkheadOperator}; {@code fluxOnly} is the Flux with no admission.</li>
 * <li>{@code admissionFloor}: the atomic work any non-blocking admission with an exactly-once,
 * cancellable permit needs (four atomic operations and one small allocation), with no lane logic
 * and no Reactive-Streams handshake: the floor the lanes are compared with.</li>
 * </ul>
 *
 * Run: {@code java -jar benchmarks/target/benchmarks.jar AdmissionBenchmark -f 1 -wi 3 -w 1s -i 5 -r 1s}
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class AdmissionBenchmark {

	/** Requests one, releases the permit as soon as it arrives. Stateless, so shared by all threads. */
	static final CoreSubscriber<LanePermit> RELEASER = new CoreSubscriber<>() {
		@Override
		public void onSubscribe(Subscription s) {
			s.request(1);
		}

		@Override
		public void onNext(LanePermit permit) {
			permit.release();
		}

		@Override
		public void onError(Throwable t) {
			throw new IllegalStateException("admission refused in a benchmark with free permits", t);
		}

		@Override
		public void onComplete() {
		}
	};

	/** Takes everything, keeps nothing. */
	static final CoreSubscriber<Integer> SINK = new CoreSubscriber<>() {
		@Override
		public void onSubscribe(Subscription s) {
			s.request(Long.MAX_VALUE);
		}

		@Override
		public void onNext(Integer value) {
		}

		@Override
		public void onError(Throwable t) {
			throw new IllegalStateException("refused in a benchmark with free permits", t);
		}

		@Override
		public void onComplete() {
		}
	};

	/**
	 * The least a non-blocking admission with an exactly-once permit does, without any lane logic:
	 * take from a shared free count, claim a fresh per-admission object for delivery (a cancel may
	 * race it), claim it again for the release (two releases may race), give back to the count.
	 */
	static final class FloorClaim {
		static final AtomicIntegerFieldUpdater<FloorClaim> STATE =
				AtomicIntegerFieldUpdater.newUpdater(FloorClaim.class, "state");
		static final AtomicIntegerFieldUpdater<FloorClaim> RELEASED =
				AtomicIntegerFieldUpdater.newUpdater(FloorClaim.class, "released");
		volatile int state;
		volatile int released;
	}

	static final AtomicIntegerFieldUpdater<AdmissionBenchmark> FREE =
			AtomicIntegerFieldUpdater.newUpdater(AdmissionBenchmark.class, "free");
	volatile int free = 192;

	PriorityLanes lanes;
	Bulkhead bulkhead;
	Mono<LanePermit> acquireP0;
	Flux<Integer> admitted;
	Flux<Integer> bulkheaded;
	Flux<Integer> plain;

	@Setup
	public void setUp() {
		lanes = PriorityLanes.builder()
				.name("bench")
				.lane(Priority.P0, LaneSpec.of(64))
				.lane(Priority.P1, LaneSpec.of(64))
				.lane(Priority.P2, LaneSpec.of(64))
				.build();
		bulkhead = Bulkhead.of("bench",
				BulkheadConfig.custom().maxConcurrentCalls(192).maxWaitDuration(Duration.ZERO).build());
		acquireP0 = lanes.acquire(Priority.P0);
		plain = Flux.just(1);
		admitted = plain.transform(lanes.admit(Priority.P0));
		bulkheaded = plain.transformDeferred(BulkheadOperator.of(bulkhead));
	}

	@TearDown
	public void tearDown() {
		lanes.dispose();
	}

	// ---- bare protocol ----

	@Benchmark
	@Threads(1)
	public void bulkheadAcquireRelease1() {
		if (bulkhead.tryAcquirePermission()) {
			bulkhead.onComplete();
		}
	}

	@Benchmark
	@Threads(2)
	public void bulkheadAcquireRelease2() {
		if (bulkhead.tryAcquirePermission()) {
			bulkhead.onComplete();
		}
	}

	@Benchmark
	@Threads(1)
	public void lanesAcquireRelease1() {
		acquireP0.subscribe(RELEASER);
	}

	@Benchmark
	@Threads(2)
	public void lanesAcquireRelease2() {
		acquireP0.subscribe(RELEASER);
	}

	@Benchmark
	@Threads(1)
	public FloorClaim admissionFloor1() {
		return admissionFloor();
	}

	@Benchmark
	@Threads(2)
	public FloorClaim admissionFloor2() {
		return admissionFloor();
	}

	private FloorClaim admissionFloor() {
		FloorClaim claim = new FloorClaim();
		for (;;) {
			int f = free;
			if (f <= 0) {
				return claim; // cannot happen: every admission gives its permit back
			}
			if (FREE.compareAndSet(this, f, f - 1)) {
				break;
			}
		}
		if (FloorClaim.STATE.compareAndSet(claim, 0, 1) && FloorClaim.RELEASED.compareAndSet(claim, 0, 1)) {
			FREE.incrementAndGet(this);
		}
		return claim;
	}

	// ---- as operators on a one-element Flux ----

	@Benchmark
	@Threads(1)
	public void fluxOnly1() {
		plain.subscribe(SINK);
	}

	@Benchmark
	@Threads(2)
	public void fluxOnly2() {
		plain.subscribe(SINK);
	}

	@Benchmark
	@Threads(1)
	public void bulkheadOperator1() {
		bulkheaded.subscribe(SINK);
	}

	@Benchmark
	@Threads(2)
	public void bulkheadOperator2() {
		bulkheaded.subscribe(SINK);
	}

	@Benchmark
	@Threads(1)
	public void lanesOperator1() {
		admitted.subscribe(SINK);
	}

	@Benchmark
	@Threads(2)
	public void lanesOperator2() {
		admitted.subscribe(SINK);
	}
}
