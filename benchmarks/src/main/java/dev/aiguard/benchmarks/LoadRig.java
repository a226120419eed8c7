package dev.aiguard.benchmarks;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
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
import dev.aiguard.test.mock.MockAnswers;
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
import org.reactivestreams.Subscription;
import reactor.core.publisher.BaseSubscriber;
import reactor.core.publisher.Flux;
import reactor.core.publisher.SignalType;
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

	private final Settings settings;
	private final ProcessMeters meters = new ProcessMeters();
	private final OpenAiCompatibleClient client;
	private final ServerControl server;
	private final ScheduledExecutorService ramp = Executors.newSingleThreadScheduledExecutor(r -> {
		Thread t = new Thread(r, "rig-ramp");
		t.setDaemon(true);
		return t;
	});

	// the pass in progress
	private volatile Function<ChatRequest, Flux<ChatChunk>> variant = request -> Flux.empty();
	private volatile boolean stopping;
	private volatile int expectedTokens;
	private volatile long answerNanos;
	private volatile long windowStart = Long.MAX_VALUE;
	private volatile long windowEnd = Long.MAX_VALUE;
	private final AtomicLong open = new AtomicLong();
	private final AtomicLong peakOpen = new AtomicLong();
	private final LongAdder tokens = new LongAdder();
	private final LongAdder completed = new LongAdder();
	private final LongAdder failed = new LongAdder();
	private final Map<String, LongAdder> failures = new ConcurrentHashMap<>();
	/** The guarded variant's meters at the K in progress: printed when its streams did not all complete. */
	private SimpleMeterRegistry guardMeters = new SimpleMeterRegistry();
	/** Where the pass in progress records first-token times: shared by the passes of one variant at one K. */
	private volatile LatencyHistogram ttft = new LatencyHistogram();
	/**
	 * In a paired pass, the two variants the slots alternate between (even slots the first) and
	 * where each records its first-token times; {@code null} otherwise.
	 */
	@Nullable
	private volatile Paired paired;
	/** The paired passes run so far. */
	private final List<PairedTtft> pairedResults = new ArrayList<>();

	/** What a paired pass runs: the variant of even slots, then of odd ones, and their first-token times. */
	private record Paired(Function<ChatRequest, Flux<ChatChunk>> even, Function<ChatRequest, Flux<ChatChunk>> odd,
			LatencyHistogram evenTtft, LatencyHistogram oddTtft) {
	}

	private LoadRig(Settings settings, OpenAiCompatibleClient client, ServerControl server) {
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
		Settings settings = Settings.parse(args);
		long started = System.nanoTime();
		Process server = startServer(settings);
		Runtime.getRuntime().addShutdownHook(new Thread(server::destroyForcibly, "rig-server-stop"));
		List<VariantResult> results;
		List<PairedTtft> pairedTtfts;
		double isolated;
		try (ServerControl control = new ServerControl(server)) {
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
		Map<String, Function<ChatRequest, Flux<ChatChunk>>> inMemory = variants(settings.ks[0],
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
		for (int i = 0; i < settings.ks.length; i++) {
			int k = settings.ks[i];
			long interval = settings.intervalMs(i);
			server.pace(settings.firstMs, interval);
			Map<String, Function<ChatRequest, Flux<ChatChunk>>> variants = variants(k);
			int answerTokens = settings.tokens(i);
			expectedTokens = answerTokens;
			Slot[] slots = slots(k, answerTokens);
			List<String> names = new ArrayList<>(variants.keySet());
			// warm-up: every variant at the first K (the JIT), the first one at the others (the pool's new connections)
			for (String name : i == 0 ? names : names.subList(0, 1)) {
				pass(name, k, answerTokens, interval, variants.get(name), slots,
						Duration.ofSeconds(settings.warmupSeconds), new LatencyHistogram(), false,
						i == 0 ? Duration.ofSeconds(settings.jitQuietMaxSeconds()) : MEASURED_JIT_QUIET_MAX);
			}
			Map<String, List<VariantResult>> passes = new LinkedHashMap<>();
			Map<String, LatencyHistogram> ttfts = new LinkedHashMap<>();
			for (int round = 0; round < settings.rounds; round++) {
				// every other round in reverse order, so no variant always runs first or last
				List<String> order = new ArrayList<>(names);
				if (round % 2 == 1) {
					Collections.reverse(order);
				}
				for (String name : order) {
					LatencyHistogram into = ttfts.computeIfAbsent(name, n -> new LatencyHistogram());
					passes.computeIfAbsent(name, n -> new ArrayList<>()).add(pass(name, k, answerTokens, interval,
							variants.get(name), slots, Duration.ofSeconds(settings.windowSeconds), into, true,
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
			Function<ChatRequest, Flux<ChatChunk>> guarded, Slot[] slots) throws InterruptedException, IOException {
		Paired p = new Paired(unguarded, guarded, new LatencyHistogram(), new LatencyHistogram());
		paired = p;
		try {
			pass("paired", k, answerTokens, interval, unguarded, slots, Duration.ofSeconds(settings.windowSeconds()),
					new LatencyHistogram(), false, MEASURED_JIT_QUIET_MAX);
		}
		finally {
			paired = null;
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

	private Slot[] slots(int k, int answerTokens) {
		Slot[] slots = new Slot[k];
		for (int i = 0; i < k; i++) {
			ChatRequest request = ChatRequest.of(null,
					List.of(ChatMessage.user(MockAnswers.numbered("s" + i, answerTokens))));
			slots[i] = new Slot(request, i);
		}
		return slots;
	}

	/**
	 * One pass of one variant: ramp, window, retained heap, drain; a warm-up pass is not
	 * {@code measured}. After the ramp the window waits until the JIT compilers are quiet, at most
	 * {@code jitQuietMax} (see {@link #waitForQuietJit}): switching variants brings new types to
	 * call sites that Reactor and Netty code shares between them, and the JIT recompiles those.
	 */
	private VariantResult pass(String name, int k, int answerTokens, long intervalMs, Function<ChatRequest, Flux<ChatChunk>> v,
			Slot[] slots, Duration window, LatencyHistogram ttftInto, boolean measured, Duration jitQuietMax)
			throws InterruptedException, IOException {
		variant = v;
		stopping = false;
		windowStart = Long.MAX_VALUE;
		windowEnd = Long.MAX_VALUE;
		open.set(0);
		peakOpen.set(0);
		tokens.reset();
		completed.reset();
		failed.reset();
		failures.clear();
		ttft = ttftInto;

		long baselineHeap = meters.retainedHeap();
		@Nullable ClassHistogram baselineClasses = settings.histogram && measured
				? ClassHistogram.ofThisJvm() : null;
		answerNanos = TimeUnit.MILLISECONDS.toNanos(settings.firstMs + (answerTokens - 1L) * intervalMs);
		long spacing = Math.max(1, answerNanos / k);
		for (int i = 0; i < k; i++) {
			Slot slot = slots[i];
			ramp.schedule(slot::launch, i * spacing, TimeUnit.NANOSECONDS);
		}
		// every slot started and the first answers replaced by the next ones; the JIT check's first
		// slice is the ramp's last
		long rampNanos = answerNanos + TimeUnit.SECONDS.toNanos(1);
		long firstSlice = jitQuietMax.isZero() ? 0L : Math.min(rampNanos, JIT_SLICE.toNanos());
		TimeUnit.NANOSECONDS.sleep(rampNanos - firstSlice);
		if (firstSlice > 0L) {
			waitForQuietJit(name, k, jitQuietMax);
		}

		long serverCpuBefore = server.cpuNanos();
		ProcessMeters.Snapshot before = meters.snapshot();
		long tokensBefore = tokens.sum();
		windowStart = before.nanoTime();
		TimeUnit.NANOSECONDS.sleep(window.toNanos());
		ProcessMeters.Snapshot after = meters.snapshot();
		windowEnd = after.nanoTime();
		long serverCpu = server.cpuNanos() - serverCpuBefore;
		long windowTokens = tokens.sum() - tokensBefore;
		ProcessMeters.Snapshot delta = after.minus(before);

		long openBefore = open.get();
		long heap = meters.retainedHeap();
		long openAtHeap = (openBefore + open.get()) / 2;
		if (baselineClasses != null) {
			System.out.println("# " + name + " k=" + k + ": retained heap per open stream by class");
			ClassHistogram.ofThisJvm().growthSince(baselineClasses, Math.max(1, openAtHeap), 25)
				.forEach(row -> System.out.println("#   " + row));
		}

		stopping = true;
		long drainDeadline = System.nanoTime() + answerNanos + DRAIN_SLACK.toNanos();
		while (open.get() > 0 && System.nanoTime() < drainDeadline) {
			TimeUnit.MILLISECONDS.sleep(50);
		}
		long stuck = open.get();
		if (stuck > 0) {
			for (Slot slot : slots) {
				slot.cancel();
			}
			failures.computeIfAbsent("still open after the drain", key -> new LongAdder()).add(stuck);
		}
		VariantResult result = new VariantResult(name, k, completed.sum(), failed.sum() + stuck, peakOpen.get(),
				openAtHeap, windowTokens, delta.cpuNanos(), delta.allocatedBytes(), delta.gcMillis(), delta.nanoTime(),
				heap - baselineHeap, ttft.percentileMillis(50), ttft.percentileMillis(99), ttft.count(), serverCpu,
				delta.threadCpuNanos());
		System.out.printf("# %s k=%d window=%ds: %s tokens/s, %s µs CPU/token, %s B/token, heap %s B/stream, "
				+ "TTFT p99 %s ms, completed %d, failed %d%s%n", name, k, window.toSeconds(),
				RigReport.format(result.tokensPerSecond(), 0), RigReport.format(result.cpuNanosPerToken() / 1000, 2),
				RigReport.format(result.allocatedBytesPerToken(), 0), RigReport.format(result.heapBytesPerStream(), 0),
				RigReport.format(result.ttftP99Ms(), 2), result.completed(), result.failed(),
				failures.isEmpty() ? "" : " " + failures);
		if (name.equals(RigReport.GUARDED) && !failures.isEmpty()) {
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

	/** One of the K places that keep a stream open: when its answer ends it asks for the next one. */
	private final class Slot {

		private final ChatRequest request;
		/** Even slots and odd ones run different variants in a paired pass. */
		private final boolean even;
		@Nullable
		private volatile Run current;

		Slot(ChatRequest request, int index) {
			this.request = request;
			this.even = index % 2 == 0;
		}

		void launch() {
			if (stopping) {
				current = null;
				return;
			}
			Run run = new Run(this);
			current = run;
			run.start();
		}

		void cancel() {
			Run run = current;
			if (run != null) {
				run.dispose();
			}
		}
	}

	/** One streamed answer: counts its tokens, times its first one, checks it is whole. */
	private final class Run extends BaseSubscriber<ChatChunk> {

		private final Slot slot;
		private long start;
		private int received;
		private boolean terminal;
		private boolean failedRun;
		/** Where this stream's first-token time goes: the pass's, or its half's in a paired pass. */
		private LatencyHistogram ttftInto;

		Run(Slot slot) {
			this.slot = slot;
		}

		void start() {
			long now = open.incrementAndGet();
			peakOpen.accumulateAndGet(now, Math::max);
			Paired p = paired;
			Function<ChatRequest, Flux<ChatChunk>> v = p == null ? variant : slot.even ? p.even() : p.odd();
			ttftInto = p == null ? ttft : slot.even ? p.evenTtft() : p.oddTtft();
			start = System.nanoTime();
			v.apply(slot.request).subscribe(this);
		}

		@Override
		protected void hookOnSubscribe(Subscription subscription) {
			subscription.request(Long.MAX_VALUE);
		}

		@Override
		protected void hookOnNext(ChatChunk chunk) {
			if (chunk.hasContent()) {
				if (received == 0) {
					long first = System.nanoTime();
					if (start >= windowStart && first <= windowEnd) {
						ttftInto.record(first - start);
					}
				}
				received++;
				tokens.increment();
			}
			if (chunk.terminal()) {
				terminal = true;
			}
		}

		@Override
		protected void hookOnComplete() {
			if (received == expectedTokens && terminal) {
				completed.increment();
			}
			else {
				fail("incomplete answer: " + received + " tokens, terminal " + terminal);
			}
		}

		@Override
		protected void hookOnError(Throwable error) {
			fail(error.getClass().getSimpleName() + ": " + error.getMessage());
		}

		@Override
		protected void hookOnCancel() {
			fail("cancelled by the rig");
		}

		private void fail(String why) {
			failedRun = true;
			failed.increment();
			failures.computeIfAbsent(why.length() > 160 ? why.substring(0, 160) : why, key -> new LongAdder()).increment();
		}

		@Override
		protected void hookFinally(SignalType type) {
			open.decrementAndGet();
			if (type == SignalType.CANCEL) {
				return;
			}
			// an answer that ended early (a fallback, an error) is not followed at once by the next:
			// a slot asks at most once per answer's duration, so failures cannot turn into a storm
			// the next request is sent from the rig's thread, not from inside this completion: by then
			// the ended stream has given back whatever permit (lane, bulkhead) it held
			long early = start + answerNanos - System.nanoTime();
			if (!failedRun || early <= 0) {
				ramp.execute(slot::launch);
			}
			else {
				ramp.schedule(slot::launch, early, TimeUnit.NANOSECONDS);
			}
		}
	}

	private static Process startServer(Settings settings) throws IOException {
		String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
		List<String> command = new ArrayList<>(List.of(java, "-Xmx" + settings.serverHeap, "-XX:+UseParallelGC"));
		command.addAll(settings.serverOptions);
		command.addAll(List.of("-cp", System.getProperty("java.class.path"), RigServer.class.getName(), "900"));
		ProcessBuilder builder = new ProcessBuilder(command);
		builder.redirectError(ProcessBuilder.Redirect.INHERIT);
		return builder.start();
	}

	/** The server process's standard input and output: its port, and commands. */
	private static final class ServerControl implements AutoCloseable {

		private final BufferedReader out;
		private final Writer in;
		private final String baseUrl;

		ServerControl(Process process) throws IOException {
			this.out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
			this.in = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
			// a JVM option (a profiler) may print lines of its own first
			String line = out.readLine();
			for (int skipped = 0; line != null && !line.startsWith("port=") && skipped < 100; skipped++) {
				line = out.readLine();
			}
			if (line == null || !line.startsWith("port=")) {
				throw new IOException("the rig server did not report its port, said: " + line);
			}
			this.baseUrl = "http://127.0.0.1:" + Integer.parseInt(line.substring(5)) + "/v1";
		}

		String baseUrl() {
			return baseUrl;
		}

		/** @return the server's process CPU time, in nanoseconds */
		synchronized long cpuNanos() throws IOException {
			in.write("cpu\n");
			in.flush();
			String answer = out.readLine();
			try {
				return Long.parseLong(String.valueOf(answer).trim());
			}
			catch (NumberFormatException e) {
				throw new IOException("the rig server did not report its CPU time, said: " + answer, e);
			}
		}

		synchronized void pace(long firstMs, long intervalMs) throws IOException {
			in.write("pace " + firstMs + " " + intervalMs + "\n");
			in.flush();
			String answer = out.readLine();
			if (!"ok".equals(answer)) {
				throw new IOException("the rig server refused the pace: " + answer);
			}
		}

		@Override
		public void close() throws IOException {
			in.write("stop\n");
			in.flush();
			in.close();
		}
	}

	/** The command line. */
	record Settings(int[] ks, int[] tokensPerK, long firstMs, long[] intervalsMs, int windowSeconds, int warmupSeconds,
			int rounds,
			List<String> variants, String serverHeap, List<String> serverOptions, boolean histogram, boolean paired,
			int jitQuietMaxSeconds) {

		static Settings parse(String[] args) {
			Map<String, String> options = new LinkedHashMap<>();
			for (String arg : args) {
				int eq = arg.indexOf('=');
				if (!arg.startsWith("--") || eq < 0) {
					throw new IllegalArgumentException("arguments are --name=value, was '" + arg + "'");
				}
				options.put(arg.substring(2, eq), arg.substring(eq + 1));
			}
			int[] ks = ints(options.remove("k"), "1000,5000,10000", "k", 1, 20_000);
			// by default the whole run streams about 25 000 tokens a second, what leaves the two cores
			// of the project's machines headroom with the server on the same machine: 40 ms between
			// tokens up to K = 1000 (100-token answers), proportionally slower above (answers of
			// 8 s, at least 20 tokens), so a pass stays within seconds
			String defaultIntervals = Arrays.stream(ks).mapToObj(k -> String.valueOf(defaultIntervalMs(k)))
				.reduce((a, b) -> a + "," + b).orElseThrow();
			String defaultTokens = Arrays.stream(ks)
				.mapToObj(k -> String.valueOf(k <= 1000 ? 100 : Math.max(20, 8000 / defaultIntervalMs(k))))
				.reduce((a, b) -> a + "," + b).orElseThrow();
			int[] tokens = ints(options.remove("tokens"), defaultTokens, "tokens", 1, 1000);
			long first = ints(options.remove("first-ms"), "20", "first-ms", 0, 10_000)[0];
			long[] intervals = Arrays.stream(ints(options.remove("interval-ms"), defaultIntervals, "interval-ms", 1, 10_000))
				.asLongStream().toArray();
			perK("interval-ms", intervals.length, ks.length);
			perK("tokens", tokens.length, ks.length);
			int window = ints(options.remove("window-s"), "6", "window-s", 1, 300)[0];
			int warmup = ints(options.remove("warmup-s"), "2", "warmup-s", 1, 300)[0];
			int rounds = ints(options.remove("rounds"), "2", "rounds", 1, 10)[0];
			List<String> variants = List.of(options.getOrDefault("variants",
					RigReport.UNGUARDED + "," + RigReport.GUARDED + "," + RigReport.ALTERNATIVE).split(","));
			options.remove("variants");
			String serverHeap = options.getOrDefault("server-heap", "1g");
			options.remove("server-heap");
			String serverOptions = options.getOrDefault("server-opts", "").trim();
			options.remove("server-opts");
			boolean histogram = Boolean.parseBoolean(options.getOrDefault("histogram", "false"));
			options.remove("histogram");
			boolean paired = Boolean.parseBoolean(options.getOrDefault("paired", "true"));
			options.remove("paired");
			int jitQuietMax = ints(options.remove("jit-quiet-max-s"), "12", "jit-quiet-max-s", 0, 600)[0];
			if (!options.isEmpty()) {
				throw new IllegalArgumentException("unknown options: " + options.keySet());
			}
			return new Settings(ks, tokens, first, intervals, window, warmup, rounds, variants, serverHeap,
					serverOptions.isEmpty() ? List.of() : List.of(serverOptions.split("\\s+")), histogram, paired,
					jitQuietMax);
		}

		int largestK() {
			return Arrays.stream(ks).max().orElseThrow();
		}

		private static int defaultIntervalMs(int k) {
			return Math.max(40, k / 25);
		}

		long intervalMs(int index) {
			return intervalsMs.length == 1 ? intervalsMs[0] : intervalsMs[index];
		}

		int tokens(int index) {
			return tokensPerK.length == 1 ? tokensPerK[0] : tokensPerK[index];
		}

		/** A per-K setting has one value for all K, or one per K. */
		private static void perK(String name, int values, int ks) {
			if (values != 1 && values != ks) {
				throw new IllegalArgumentException("--" + name + ": one value or one per K (" + ks + "), was " + values);
			}
		}

		private static int[] ints(@Nullable String value, String otherwise, String name, int min, int max) {
			String text = value == null ? otherwise : value;
			int[] parsed;
			try {
				parsed = Arrays.stream(text.split(",")).map(String::trim).mapToInt(Integer::parseInt).toArray();
			}
			catch (NumberFormatException e) {
				throw new IllegalArgumentException("--" + name + " must be whole numbers, was '" + text + "'", e);
			}
			for (int p : parsed) {
				if (p < min || p > max) {
					throw new IllegalArgumentException("--" + name + " must be between " + min + " and " + max
							+ ", was " + p);
				}
			}
			return parsed;
		}

		@Override
		public String toString() {
			return "k=" + Arrays.toString(ks) + " tokens=" + Arrays.toString(tokensPerK) + " first-ms=" + firstMs + " interval-ms="
					+ Arrays.toString(intervalsMs) + " window-s=" + windowSeconds + " warmup-s=" + warmupSeconds + " rounds=" + rounds
					+ " variants=" + variants + " paired=" + paired + " jit-quiet-max-s=" + jitQuietMaxSeconds + " cores=" + Runtime.getRuntime().availableProcessors() + " max-heap="
					+ Runtime.getRuntime().maxMemory() / (1024 * 1024) + "m";
		}
	}
}
