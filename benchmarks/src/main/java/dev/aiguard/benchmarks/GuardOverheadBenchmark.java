package dev.aiguard.benchmarks;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

import dev.aiguard.AiGuard;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.metrics.GuardMetrics;
import dev.aiguard.metrics.MicrometerGuardMetrics;
import dev.aiguard.validation.RepetitionDetector;
import dev.aiguard.validation.Validators;
import io.github.resilience4j.bulkhead.Bulkhead;
import io.github.resilience4j.bulkhead.BulkheadConfig;
import io.github.resilience4j.circuitbreaker.CircuitBreaker;
import io.github.resilience4j.circuitbreaker.CircuitBreakerConfig;
import io.github.resilience4j.reactor.bulkhead.operator.BulkheadOperator;
import io.github.resilience4j.reactor.circuitbreaker.operator.CircuitBreakerOperator;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.Blackhole;
import reactor.core.publisher.Flux;

/**
 * What the guard costs per streamed answer, against a plain pass-through, Reactor's per-element
 * {@code timeout}, and a resilience4j stack, on the same pre-built chunks.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class GuardOverheadBenchmark {

	@Param("1000")
	public int tokens;

	ChatChunk[] chunks;
	Function<Flux<ChatChunk>, Flux<ChatChunk>> guard;
	Function<Flux<ChatChunk>, Flux<ChatChunk>> stallOnly;
	Function<Flux<ChatChunk>, Flux<ChatChunk>> validated;
	Function<Flux<ChatChunk>, Flux<ChatChunk>> emptyOnly;
	Function<Flux<ChatChunk>, Flux<ChatChunk>> repetitionOnly;
	MicrometerGuardMetrics floorMetrics;
	CircuitBreaker r4jBreaker;
	Bulkhead r4jBulkhead;

	@Setup
	public void setup() {
		chunks = new ChatChunk[tokens + 1];
		for (int i = 0; i < tokens; i++) {
			chunks[i] = ChatChunk.token("tok" + i);
		}
		chunks[tokens] = ChatChunk.done();
		SimpleMeterRegistry registry = new SimpleMeterRegistry();
		guard = AiGuard.of(BenchmarkPolicies.fullPolicy(new MicrometerGuardMetrics(registry)));
		stallOnly = AiGuard.of(BenchmarkPolicies.stallOnlyPolicy(new MicrometerGuardMetrics(registry)));
		// the full policy plus the empty-answer validator and the repetition detector
		validated = AiGuard.of(BenchmarkPolicies.fullPolicy(new MicrometerGuardMetrics(registry)).toBuilder()
				.validate(Validators.emptyAnswer())
				.validateStreaming(RepetitionDetector.defaults())
				.build());
		emptyOnly = AiGuard.of(BenchmarkPolicies.fullPolicy(new MicrometerGuardMetrics(registry)).toBuilder()
				.validate(Validators.emptyAnswer()).build());
		repetitionOnly = AiGuard.of(BenchmarkPolicies.fullPolicy(new MicrometerGuardMetrics(registry)).toBuilder()
				.validateStreaming(RepetitionDetector.defaults()).build());
		floorMetrics = new MicrometerGuardMetrics(registry);
		r4jBreaker = CircuitBreaker.of("bench", CircuitBreakerConfig.ofDefaults());
		r4jBulkhead = Bulkhead.of("bench", BulkheadConfig.custom().maxConcurrentCalls(1000).build());
	}

	@Benchmark
	public void passThrough(Blackhole bh) {
		Flux.fromArray(chunks).map(Function.identity()).subscribe(new BlackholeSink<>(bh));
	}

	@Benchmark
	public void guarded(Blackhole bh) {
		Flux.fromArray(chunks).transform(guard).subscribe(new BlackholeSink<>(bh));
	}

	/** {@link #guarded} with output validation on: the end-of-attempt check and the per-chunk repetition watch. */
	@Benchmark
	public void guardedValidated(Blackhole bh) {
		Flux.fromArray(chunks).transform(validated).subscribe(new BlackholeSink<>(bh));
	}

	/** {@link #guarded} with the empty-answer validator alone: the tap and the end-of-attempt verdict. */
	@Benchmark
	public void guardedEmptyAnswer(Blackhole bh) {
		Flux.fromArray(chunks).transform(emptyOnly).subscribe(new BlackholeSink<>(bh));
	}

	/** {@link #guarded} with the repetition detector alone. */
	@Benchmark
	public void guardedRepetition(Blackhole bh) {
		Flux.fromArray(chunks).transform(repetitionOnly).subscribe(new BlackholeSink<>(bh));
	}

	/** Deadlines and metrics only, to separate the per-token watch from per-stream admission costs. */
	@Benchmark
	public void guardedStallOnly(Blackhole bh) {
		Flux.fromArray(chunks).transform(stallOnly).subscribe(new BlackholeSink<>(bh));
	}

	/** The floor: what any watcher keeping the per-token rules must do at least (see {@link MinimalWatch}). */
	@Benchmark
	public void minimalWatch(Blackhole bh) {
		Flux.fromArray(chunks).subscribe(new MinimalWatch<>(new BlackholeSink<>(bh), ChatChunk.INSPECTOR, floorMetrics));
	}

	/** The floor's per-chunk part alone: no meters, no clock reads beyond the watch's three. */
	@Benchmark
	public void minimalWatchNoMetrics(Blackhole bh) {
		Flux.fromArray(chunks).subscribe(new MinimalWatch<>(new BlackholeSink<>(bh), ChatChunk.INSPECTOR, GuardMetrics.noop()));
	}

	@Benchmark
	public void fluxTimeout(Blackhole bh) {
		Flux.fromArray(chunks).timeout(Duration.ofSeconds(30)).subscribe(new BlackholeSink<>(bh));
	}

	@Benchmark
	public void resilience4jStack(Blackhole bh) {
		Flux.fromArray(chunks)
				.timeout(Duration.ofSeconds(30))
				.transformDeferred(CircuitBreakerOperator.of(r4jBreaker))
				.transformDeferred(BulkheadOperator.of(r4jBulkhead))
				.subscribe(new BlackholeSink<>(bh));
	}
}
