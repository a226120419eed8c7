package dev.aiguard.benchmarks;

import java.io.IOException;
import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Function;
import java.util.function.LongSupplier;

import dev.aiguard.AiGuard;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.core.Priority;
import dev.aiguard.metrics.MicrometerGuardMetrics;
import dev.aiguard.provider.OpenAiCompatibleClient;
import dev.aiguard.test.mock.MockModelServer;
import io.github.resilience4j.bulkhead.Bulkhead;
import io.github.resilience4j.bulkhead.BulkheadConfig;
import io.github.resilience4j.circuitbreaker.CircuitBreaker;
import io.github.resilience4j.circuitbreaker.CircuitBreakerConfig;
import io.github.resilience4j.reactor.bulkhead.operator.BulkheadOperator;
import io.github.resilience4j.reactor.circuitbreaker.operator.CircuitBreakerOperator;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Sinks;
import reactor.netty.http.client.HttpClient;
import reactor.netty.resources.ConnectionProvider;
import reactor.util.context.Context;

/**
 * End-to-end load rig: K concurrent streamed answers from the mock model server, in a JVM of its
 * own ({@link RigServer}), over loopback, read by {@link OpenAiCompatibleClient} through one shared
 * Reactor Netty pool, unguarded, guarded by the library's full policy with budgets, and guarded by the usual
 * alternative ({@code Flux.timeout} + resilience4j circuit breaker and bulkhead). Every variant
 * gets the same traffic in the same run; the rig reports this JVM's CPU time and allocation per
 * delivered token, retained heap per open stream, time to first token and GC time, then the goal
 * lines of {@link RigReport}. Not part of the build: run it by hand (see {@code docs/benchmarks.md}).
 *
 * <pre>{@code
 * java -Xmx512m -cp benchmarks/target/benchmarks.jar dev.aiguard.benchmarks.LoadRig --k=1000,5000,10000
 * }</pre>
 *
 * Each concurrency K runs every variant in turn: a warm-up pass (which also opens the pool's
 * connections), then the measured pass. A pass starts K slots spread evenly over one answer's
 * duration; each slot asks for an answer of {@code --tokens} numbered tokens, reads it to the end,
 * checks it, and asks again at once, so K streams stay open. After the ramp comes the
 * measurement window; then, with the streams still open, two full collections give the retained
 * heap; then the slots stop asking and the rig waits for every stream to end.
 */
public final class LoadRig {

	private static final Duration DRAIN_SLACK = Duration.ofSeconds(20);
	/** How long each variant runs over answers from memory before the first network pass. */
	private static final Duration MEMORY_WARM_UP = Duration.ofSeconds(4);
	/** The warm-up's JIT check looks at slices this long... */
	private static final Duration JIT_SLICE = Duration.ofSeconds(2);
	/** ...and calls the JIT quiet when its threads used at most this share of one core in one. */
	private static final double JIT_QUIET_SHARE = 0.02;
	/** The longest a pass after the first warm-ups waits for the JIT to be quiet. */
	private static final Duration MEASURED_JIT_QUIET_MAX = Duration.ofSeconds(6);
	private static final ChatRequest ISOLATED_REQUEST = ChatRequest.of(null, List.of(ChatMessage.user("q")));

	private final RigSettings settings;
	private final ProcessMeters meters = new ProcessMeters();
	private final OpenAiCompatibleClient client;
	private final RigServerControl server;
	private final RigStreams streams = new RigStreams();
	/** The guarded variant's meters at the K in progress: printed when its streams did not all complete. */
	private SimpleMeterRegistry guardMeters = new SimpleMeterRegistry();
	/** The paired passes run so far. */
	private final List<PairedTtft> pairedResults = new ArrayList<>();

	private LoadRig(RigSettings settings, OpenAiCompatibleClient client, RigServerControl server) {
		this.settings = settings;
		this.client = client;
		this.server = server;
	}

	/**
	 * Runs the rig and prints the table and the goal lines.
	 *
	 * @param args {@code --k=1000,5000,10000} (concurrencies); {@code --tokens} (per answer) and
	 *        {@code --interval-ms} (between tokens), each one value or one per K, by default 100 tokens
	 *        40 ms apart up to K = 1000 and K/25 ms apart above, in answers of 8 s (about 25 000
	 *        tokens a second in all); {@code --first-ms=20} (before the first token), {@code --rounds=2}
	 *        (measured passes per variant, every other round in reverse order; the figures pool them),
	 *        {@code --window-s=6} (measurement), {@code --warmup-s=2},
	 *        {@code --variants=unguarded,guarded,alternative} (also {@code guarded-without-budget}: the guard
	 *        with the full policy and no budget), {@code --server-heap=1g},
	 *        {@code --server-opts=<JVM options of the server, space-separated>} (a profiler, say),
	 *        {@code --histogram=true} (print, per measured pass, the classes that hold the retained
	 *        heap per open stream; the histograms' collections add to the pass's time),
	 *        {@code --jit-quiet-max-s=12} (the warm-up at the first K goes on until the JIT is quiet, at
	 *        most this long; every later pass waits for it at most 6 s), {@code --paired=true} (after the measured rounds at the largest K, one pass in which half
	 *        the slots run unguarded and half guarded at once: the first-token lines come from it)
	 * @throws Exception when the server cannot be started or a pass cannot be run
	 */
	public static void main(String[] args) throws Exception {
		RigSettings settings = RigSettings.parse(args);
		long started = System.nanoTime();
		Process server = RigServerControl.startServer(settings);
		Runtime.getRuntime().addShutdownHook(new Thread(server::destroyForcibly, "rig-server-stop"));
		List<VariantResult> results;
		List<PairedTtft> pairedTtfts;
		double isolated;
		try (RigServerControl control = new RigServerControl(server)) {
			int maxK = settings.largestK();
			ConnectionProvider pool = ConnectionProvider.builder("load-rig")
				.maxConnections(maxK + 64)
				.pendingAcquireMaxCount(-1)
				.pendingAcquireTimeout(Duration.ofSeconds(60))
				.build();
			OpenAiCompatibleClient client = OpenAiCompatibleClient.builder(control.baseUrl())
				.model(MockModelServer.MODEL)
				.httpClient(HttpClient.create(pool))
				.build();
			System.out.println("# load rig: " + settings + ", server " + control.baseUrl());
			LoadRig rig = new LoadRig(settings, client, control);
			results = rig.run();
			pairedTtfts = rig.pairedResults;
			isolated = rig.isolatedGuardHeapPerStream(maxK);
			pool.disposeLater().block(Duration.ofSeconds(10));
		}
		finally {
			server.destroy();
			if (!server.waitFor(10, TimeUnit.SECONDS)) {
				server.destroyForcibly();
			}
		}
		System.out.println();
		System.out.print(RigReport.table(results));
		System.out.println();
		System.out.println("CPU µs per token by thread:");
		System.out.println();
		System.out.print(RigReport.threadTable(results));
		System.out.println();
		RigReport.lines(results, pairedTtfts).forEach(System.out::println);
		System.out.println("guard-heap-per-stream-isolated-bytes=" + RigReport.format(isolated, 0));
		System.out.println("# wall time " + (System.nanoTime() - started) / 1_000_000_000 + " s");
	}

	/**
	 * Runs each variant for {@link #MEMORY_WARM_UP} over answers from memory, as fast as one thread
	 * can: hundreds of thousands of streams, so that the per-stream code of each (admission,
	 * breaker, budget, settling; the alternative's operators) is compiled by C2 before the
	 * network passes, where a few hundred streams a second would take minutes to get there.
	 */
	private void warmUpInMemory(int answerTokens) {
		ChatChunk[] answer = new ChatChunk[answerTokens + 1];
		for (int t = 0; t < answerTokens; t++) {
			answer[t] = ChatChunk.token("t" + t + " ");
		}
		answer[answerTokens] = ChatChunk.done();
		Map<String, Function<ChatRequest, Flux<ChatChunk>>> inMemory = variants(settings.ks()[0],
				request -> Flux.fromArray(answer));
		for (String name : settings.variants()) {
			Function<ChatRequest, Flux<ChatChunk>> v = inMemory.get(name);
			long streams = 0;
			long deadline = System.nanoTime() + MEMORY_WARM_UP.toNanos();
			while (System.nanoTime() < deadline) {
				for (int n = 0; n < 100; n++) {
					Long count = v.apply(ISOLATED_REQUEST).count().block(Duration.ofSeconds(10));
					if (count == null || count != answerTokens + 1) {
						throw new IllegalStateException(name + " warm-up: " + count + " chunks instead of " + (answerTokens + 1));
					}
				}
				streams += 100;
			}
			System.out.printf("# warm-up %s in memory: %d streams of %d tokens%n", name, streams, answerTokens);
		}
	}

	private List<VariantResult> run() throws Exception {
		List<VariantResult> results = new ArrayList<>();
		warmUpInMemory(settings.tokens(0));
		for (int i = 0; i < settings.ks().length; i++) {
			int k = settings.ks()[i];
			long interval = settings.intervalMs(i);
			server.pace(settings.firstMs(), interval);
			Map<String, Function<ChatRequest, Flux<ChatChunk>>> variants = variants(k);
			int answerTokens = settings.tokens(i);
			streams.expectedTokens = answerTokens;
			RigStreams.Slot[] slots = streams.slots(k, answerTokens);
			List<String> names = new ArrayList<>(variants.keySet());
			// warm-up: every variant at the first K (the JIT), the first one at the others (the pool's new connections)
			for (String name : i == 0 ? names : names.subList(0, 1)) {
				pass(name, k, answerTokens, interval, variants.get(name), slots,
						Duration.ofSeconds(settings.warmupSeconds()), new LatencyHistogram(), false,
						i == 0 ? Duration.ofSeconds(settings.jitQuietMaxSeconds()) : MEASURED_JIT_QUIET_MAX);
			}
			Map<String, List<VariantResult>> passes = new LinkedHashMap<>();
			Map<String, LatencyHistogram> ttfts = new LinkedHashMap<>();
			for (int round = 0; round < settings.rounds(); round++) {
				// every other round in reverse order, so no variant always runs first or last
				List<String> order = new ArrayList<>(names);
				if (round % 2 == 1) {
					Collections.reverse(order);
				}
				for (String name : order) {
					LatencyHistogram into = ttfts.computeIfAbsent(name, n -> new LatencyHistogram());
					passes.computeIfAbsent(name, n -> new ArrayList<>()).add(pass(name, k, answerTokens, interval,
							variants.get(name), slots, Duration.ofSeconds(settings.windowSeconds()), into, true,
							MEASURED_JIT_QUIET_MAX));
				}
			}
			for (String name : names) {
				results.add(VariantResult.pooled(passes.get(name), ttfts.get(name)));
			}
			if (settings.paired() && k == settings.largestK()
					&& variants.containsKey(RigReport.UNGUARDED) && variants.containsKey(RigReport.GUARDED)) {
				pairedResults.add(pairedPass(k, answerTokens, interval, variants.get(RigReport.UNGUARDED),
						variants.get(RigReport.GUARDED), slots));
			}
		}
		return results;
	}

	/**
	 * One pass in which even slots run unguarded and odd ones guarded, at the same time on the same
	 * connections: both halves see the same queueing and the same collections, so the difference
	 * of their first-token times is what the guard adds, without the pass-to-pass spread that
	 * separate passes carry. Its CPU figures mix both variants and are not used.
	 */
	private PairedTtft pairedPass(int k, int answerTokens, long interval, Function<ChatRequest, Flux<ChatChunk>> unguarded,
			Function<ChatRequest, Flux<ChatChunk>> guarded, RigStreams.Slot[] slots) throws InterruptedException, IOException {
		RigStreams.Paired p = new RigStreams.Paired(unguarded, guarded, new LatencyHistogram(), new LatencyHistogram());
		streams.paired = p;
		try {
			pass("paired", k, answerTokens, interval, unguarded, slots, Duration.ofSeconds(settings.windowSeconds()),
					new LatencyHistogram(), false, MEASURED_JIT_QUIET_MAX);
		}
		finally {
			streams.paired = null;
		}
		PairedTtft result = new PairedTtft(k, p.evenTtft(), p.oddTtft());
		System.out.printf("# paired k=%d: first token p50 %s / %s ms, p99 %s / %s ms (unguarded / guarded, %d / %d streams)%n",
				k, RigReport.format(result.unguarded().percentileMillis(50), 2),
				RigReport.format(result.guarded().percentileMillis(50), 2),
				RigReport.format(result.unguarded().percentileMillis(99), 2),
				RigReport.format(result.guarded().percentileMillis(99), 2), result.unguarded().count(),
				result.guarded().count());
		return result;
	}

	/**
	 * The guard's own retained heap per open stream, without the network: {@code k} streams held
	 * open on in-memory upstreams that have sent one token, guarded (the full policy with budgets) and not; the
	 * difference over {@code k}. The network passes measure the same thing end to end, where the
	 * client's buffers in flight make the figure move by several hundred bytes per stream.
	 */
	private double isolatedGuardHeapPerStream(int k) {
		AiGuard<ChatChunk> guard = AiGuard.of(BenchmarkPolicies.budgetedPolicy(
				new MicrometerGuardMetrics(new SimpleMeterRegistry()), k));
		Context priority = Priority.P1.asContext();
		long[] heap = new long[2];
		for (int guarded = 0; guarded < 2; guarded++) {
			List<Sinks.Many<ChatChunk>> upstreams = new ArrayList<>(k);
			List<reactor.core.Disposable> held = new ArrayList<>(k);
			for (int i = 0; i < k; i++) {
				Sinks.Many<ChatChunk> upstream = Sinks.many().unicast().onBackpressureBuffer();
				Flux<ChatChunk> answer = upstream.asFlux();
				Flux<ChatChunk> stream = guarded == 1
						? guard.call(ISOLATED_REQUEST, request -> answer).contextWrite(priority) : answer;
				held.add(stream.subscribe());
				upstream.tryEmitNext(ChatChunk.token("t "));
				upstreams.add(upstream);
			}
			heap[guarded] = meters.retainedHeap();
			held.forEach(reactor.core.Disposable::dispose);
			upstreams.clear();
		}
		return (double) (heap[1] - heap[0]) / k;
	}

	/** The variants at concurrency {@code k}, in the order they run; each gets fresh state. */
	private Map<String, Function<ChatRequest, Flux<ChatChunk>>> variants(int k) {
		return variants(k, client::stream);
	}

	/**
	 * The variants at concurrency {@code k} over {@code upstream} (the client, or answers from
	 * memory for the JIT warm-up), in the order they run; each gets fresh state.
	 */
	private Map<String, Function<ChatRequest, Flux<ChatChunk>>> variants(int k,
			Function<ChatRequest, Flux<ChatChunk>> upstream) {
		Map<String, Function<ChatRequest, Flux<ChatChunk>>> all = new LinkedHashMap<>();
		all.put(RigReport.UNGUARDED, upstream);
		guardMeters = new SimpleMeterRegistry();
		AiGuard<ChatChunk> guard = AiGuard.of(BenchmarkPolicies.budgetedPolicy(new MicrometerGuardMetrics(guardMeters), k));
		Context priority = Priority.P1.asContext();
		all.put(RigReport.GUARDED, request -> guard.call(request, upstream).contextWrite(priority));
		AiGuard<ChatChunk> withoutBudget = AiGuard.of(BenchmarkPolicies.fullPolicy(
				new MicrometerGuardMetrics(new SimpleMeterRegistry()), k));
		all.put(RigReport.GUARDED_WITHOUT_BUDGET,
				request -> withoutBudget.call(request, upstream).contextWrite(priority));
		CircuitBreaker breaker = CircuitBreaker.of("rig", CircuitBreakerConfig.ofDefaults());
		Bulkhead bulkhead = Bulkhead.of("rig", BulkheadConfig.custom()
			.maxConcurrentCalls(k)
			.maxWaitDuration(Duration.ZERO)
			.build());
		Duration idle = Duration.ofSeconds(30);
		all.put(RigReport.ALTERNATIVE, request -> upstream.apply(request)
			.timeout(idle)
			.transformDeferred(CircuitBreakerOperator.of(breaker))
			.transformDeferred(BulkheadOperator.of(bulkhead)));
		Map<String, Function<ChatRequest, Flux<ChatChunk>>> chosen = new LinkedHashMap<>();
		for (String name : settings.variants()) {
			Function<ChatRequest, Flux<ChatChunk>> f = all.get(name);
			if (f == null) {
				throw new IllegalArgumentException("--variants: unknown variant '" + name + "', known: " + all.keySet());
			}
			chosen.put(name, f);
		}
		return chosen;
	}


	/**
	 * One pass of one variant: ramp, window, retained heap, drain; a warm-up pass is not
	 * {@code measured}. After the ramp the window waits until the JIT compilers are quiet, at most
	 * {@code jitQuietMax} (see {@link #waitForQuietJit}): switching variants brings new types to
	 * call sites that Reactor and Netty code shares between them, and the JIT recompiles those.
	 */
	private VariantResult pass(String name, int k, int answerTokens, long intervalMs, Function<ChatRequest, Flux<ChatChunk>> v,
			RigStreams.Slot[] slots, Duration window, LatencyHistogram ttftInto, boolean measured, Duration jitQuietMax)
			throws InterruptedException, IOException {
		streams.reset(v, ttftInto);

		long baselineHeap = meters.retainedHeap();
		@Nullable ClassHistogram baselineClasses = settings.histogram() && measured
				? ClassHistogram.ofThisJvm() : null;
		streams.answerNanos = TimeUnit.MILLISECONDS.toNanos(settings.firstMs() + (answerTokens - 1L) * intervalMs);
		long spacing = Math.max(1, streams.answerNanos / k);
		for (int i = 0; i < k; i++) {
			RigStreams.Slot slot = slots[i];
			streams.launch(slot, i * spacing);
		}
		// every slot started and the first answers replaced by the next ones; the JIT check's first
		// slice is the ramp's last
		long rampNanos = streams.answerNanos + TimeUnit.SECONDS.toNanos(1);
		long firstSlice = jitQuietMax.isZero() ? 0L : Math.min(rampNanos, JIT_SLICE.toNanos());
		TimeUnit.NANOSECONDS.sleep(rampNanos - firstSlice);
		if (firstSlice > 0L) {
			waitForQuietJit(name, k, jitQuietMax);
		}

		long serverCpuBefore = server.cpuNanos();
		ProcessMeters.Snapshot before = meters.snapshot();
		long tokensBefore = streams.tokens.sum();
		streams.windowStart = before.nanoTime();
		TimeUnit.NANOSECONDS.sleep(window.toNanos());
		ProcessMeters.Snapshot after = meters.snapshot();
		streams.windowEnd = after.nanoTime();
		long serverCpu = server.cpuNanos() - serverCpuBefore;
		long windowTokens = streams.tokens.sum() - tokensBefore;
		ProcessMeters.Snapshot delta = after.minus(before);

		long openBefore = streams.open.get();
		long heap = meters.retainedHeap();
		long openAtHeap = (openBefore + streams.open.get()) / 2;
		if (baselineClasses != null) {
			System.out.println("# " + name + " k=" + k + ": retained heap per open stream by class");
			ClassHistogram.ofThisJvm().growthSince(baselineClasses, Math.max(1, openAtHeap), 25)
				.forEach(row -> System.out.println("#   " + row));
		}

		streams.stopping = true;
		long drainDeadline = System.nanoTime() + streams.answerNanos + DRAIN_SLACK.toNanos();
		while (streams.open.get() > 0 && System.nanoTime() < drainDeadline) {
			TimeUnit.MILLISECONDS.sleep(50);
		}
		long stuck = streams.open.get();
		if (stuck > 0) {
			for (RigStreams.Slot slot : slots) {
				slot.cancel();
			}
			streams.failures.computeIfAbsent("still open after the drain", key -> new LongAdder()).add(stuck);
		}
		LatencyHistogram ttft = streams.ttft;
		VariantResult result = new VariantResult(name, k, streams.completed.sum(), streams.failed.sum() + stuck,
				streams.peakOpen.get(), openAtHeap, windowTokens, delta.cpuNanos(), delta.allocatedBytes(), delta.gcMillis(),
				delta.nanoTime(), heap - baselineHeap, ttft.percentileMillis(50), ttft.percentileMillis(99), ttft.count(),
				serverCpu, delta.threadCpuNanos());
		System.out.printf("# %s k=%d window=%ds: %s tokens/s, %s µs CPU/token, %s B/token, heap %s B/stream, "
				+ "TTFT p99 %s ms, completed %d, failed %d%s%n", name, k, window.toSeconds(),
				RigReport.format(result.tokensPerSecond(), 0), RigReport.format(result.cpuNanosPerToken() / 1000, 2),
				RigReport.format(result.allocatedBytesPerToken(), 0), RigReport.format(result.heapBytesPerStream(), 0),
				RigReport.format(result.ttftP99Ms(), 2), result.completed(), result.failed(),
				streams.failures.isEmpty() ? "" : " " + streams.failures);
		if (name.equals(RigReport.GUARDED) && !streams.failures.isEmpty()) {
			// why the guard answered otherwise, from its own meters (counted since this K began)
			guardMeters.getMeters().forEach(meter -> {
				double count = meter instanceof Counter c ? c.count() : meter instanceof Timer t ? t.count() : 0;
				if (count > 0) {
					System.out.println("#   " + meter.getId().getName() + " " + meter.getId().getTags() + " " + (long) count);
				}
			});
		}
		return result;
	}

	/**
	 * Keeps the pass running until the JIT compiler threads used at most {@link #JIT_QUIET_SHARE}
	 * of one core over a {@link #JIT_SLICE}, or {@code max} went by. A guarded stream
	 * runs more per-stream code than an unguarded one (admission, breaker, budget, settling), and
	 * C2 compiles a method only after thousands of calls: at a few hundred streams a second a fixed
	 * warm-up of seconds ends before that, and the compilations land in the measured window. The
	 * compilers' CPU time comes from {@code /proc} ({@link ThreadCpu#JIT}); without it, from the
	 * JVM's compilation time, which counts wall time and so also a compiler thread that waits for
	 * a core.
	 */
	private void waitForQuietJit(String name, int k, Duration max) throws InterruptedException {
		CompilationMXBean compilation = ManagementFactory.getCompilationMXBean();
		boolean fromProc = ThreadCpu.snapshot()[ThreadCpu.JIT.ordinal()] > 0;
		if (!fromProc && (compilation == null || !compilation.isCompilationTimeMonitoringSupported())) {
			return;
		}
		LongSupplier jitNanos = fromProc ? () -> ThreadCpu.snapshot()[ThreadCpu.JIT.ordinal()]
				: () -> TimeUnit.MILLISECONDS.toNanos(compilation.getTotalCompilationTime());
		// the first slice is the end of the ramp: it does not count as waiting
		long started = System.nanoTime() + JIT_SLICE.toNanos();
		long limit = max.toNanos();
		for (;;) {
			long before = jitNanos.getAsLong();
			TimeUnit.NANOSECONDS.sleep(JIT_SLICE.toNanos());
			long spent = jitNanos.getAsLong() - before;
			long waited = Math.max(0L, System.nanoTime() - started);
			boolean quiet = spent <= JIT_SLICE.toNanos() * JIT_QUIET_SHARE;
			if (quiet || waited >= limit) {
				System.out.printf("# %s k=%d: JIT %s %d s after the ramp (%d ms of %s in the last %d s)%n", name, k,
						quiet ? "quiet" : "still busy", TimeUnit.NANOSECONDS.toSeconds(waited),
						TimeUnit.NANOSECONDS.toMillis(spent), fromProc ? "compiler CPU" : "compiling",
						JIT_SLICE.toSeconds());
				return;
			}
		}
	}

}
