package dev.aiguard.demo;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.IntFunction;
import java.util.function.Predicate;

import dev.aiguard.GuardPolicy;
import dev.aiguard.admission.PriorityLanes;
import dev.aiguard.boot.autoconfigure.AiGuardRegistry;
import dev.aiguard.core.Priority;
import dev.aiguard.breaker.BreakerConfig;
import dev.aiguard.breaker.BreakerEvent;
import dev.aiguard.breaker.BreakerListener;
import dev.aiguard.breaker.CircuitBreaker;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.test.mock.MockAnswers;
import dev.aiguard.fallback.FallbackRequest;
import dev.aiguard.fallback.FallbackTrigger;
import dev.aiguard.retry.RetryRules;
import dev.aiguard.stall.StallSpec;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.core.ParameterizedTypeReference;
import org.springframework.http.MediaType;
import org.springframework.http.client.reactive.ReactorClientHttpConnector;
import org.springframework.http.codec.ServerSentEvent;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.web.reactive.function.client.WebClient;
import reactor.blockhound.BlockingOperationError;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Hooks;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;
import reactor.netty.http.client.HttpClient;
import reactor.netty.resources.ConnectionProvider;
import reactor.test.StepVerifier;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A bounded end-to-end soak of the demo over HTTP: hundreds of concurrent {@code POST /api/chat}
 * streams against the running app while the embedded mock model goes through a seeded schedule
 * of faults (stalls, drops, missing terminal markers, 429/500/529 with Retry-After, context
 * limits, slow and late first tokens, slow token gaps), and clients that read slowly or leave
 * midway. Every stream is judged on its own ({@link StreamCheck}): one {@code meta}, numbered
 * tokens without a duplicate or a gap, exactly one {@code done} or {@code error} (or the client's
 * cancel), whole fallback answers, and an end within a bound computed from the configured
 * deadlines. At the end, with faults off: one guard report per request, lanes idle, no upstream
 * call left open at the mock, the breaker closed again after its open wait, the heap back within
 * 10 % of where it was after the warm-up, and no blocking call caught by BlockHound.
 *
 * <p>System properties (defaults in brackets): {@code soak.seed} [random, printed],
 * {@code soak.seconds} main run [40], {@code soak.warmupSeconds} [10], {@code soak.concurrency}
 * streams at once [200], {@code soak.phaseMillis} length of a fault phase [2500],
 * {@code soak.slackSeconds} added to each stream's bound for a loaded machine [10],
 * {@code soak.heapTolerance} [0.10]. The report goes to stdout and {@code target/soak-report.txt}.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT, properties = {
		// every request still takes from its tenant's and the key's buckets, none is refused: the
		// soak is about faults, and it sends a few hundred requests a second
		"aiguard.budgets.tenant.requests-per-minute=10000000",
		"aiguard.budgets.tenant.tokens-per-minute=2000000000",
		"aiguard.budgets.provider.requests-per-minute=10000000",
		"aiguard.budgets.provider.tokens-per-minute=2000000000",
		"aiguard.mock.first-token-delay=5ms",
		"aiguard.mock.token-interval=2ms",
		"aiguard.policies.chat.stall.first-token-timeout=1s",
		"aiguard.policies.chat.stall.idle-timeout=400ms",
		"aiguard.policies.chat.stall.max-duration=6s",
		"aiguard.breakers.model.failure-rate-threshold=0.8",
		"aiguard.breakers.model.minimum-calls=20",
		"aiguard.breakers.model.window-buckets=5",
		"aiguard.breakers.model.open-wait=500ms",
		"aiguard.breakers.model.max-open-wait=4s",
		"aiguard.breakers.model.minimum-dwell=500ms",
		"aiguard.breakers.model.slow-time-to-first-token=600ms",
		// the probes after the soak ask at every priority: no P0-only start of HALF_OPEN to wait out
		"aiguard.breaker-tree.p0-probe-window=100ms",
		"aiguard.lanes.p0.concurrency=6",
		"aiguard.lanes.p1.concurrency=6",
		"aiguard.lanes.p2.concurrency=4",
		"aiguard.lanes.p0.max-queue-size=80",
		"aiguard.lanes.p0.max-queue-wait=2s",
		"aiguard.lanes.p1.max-queue-size=80",
		"aiguard.lanes.p1.max-queue-wait=2s",
		"aiguard.lanes.p2.max-queue-size=80",
		"aiguard.lanes.p2.max-queue-wait=2s",
		"aiguard.policies.chat.retry.min-backoff=20ms",
		"aiguard.policies.chat.retry.max-backoff=100ms",
		"aiguard.policies.chat.retry.max-retry-after=1500ms",
		"aiguard.fallback.timeout=1s",
		"aiguard.fallback.cache-entries=64",
		"logging.level.dev.aiguard=INFO" })
@DirtiesContext
class FaultSoakTest {

	private static final ParameterizedTypeReference<ServerSentEvent<String>> SSE = new ParameterizedTypeReference<>() {
	};

	/** How often the fault switch looks at the schedule. */
	private static final Duration SLICE = Duration.ofMillis(125);

	/**
	 * How long a stream past its bound is still awaited, so the report can tell a late stream (an
	 * overloaded machine) from a hung one (one that would never end).
	 */
	private static final Duration GRACE = Duration.ofSeconds(30);

	/** How long a poll of {@code /api/guard} waits for the app to settle after the streams ended. */
	private static final Duration SETTLE = Duration.ofSeconds(5);

	@LocalServerPort
	int port;

	@Autowired
	JsonMapper json;

	@Autowired
	DemoProperties properties;

	/** Its token goes with the fault changes, as the page sends it. */
	@Autowired
	LocalAccessFilter access;

	CircuitBreaker breaker;

	/** The chat policy's endpoint breaker ({@code llm/mock/mock-large}), as the starter built it. */
	@Autowired
	void breakerFrom(AiGuardRegistry registry) {
		breaker = registry.guard("chat").policy().breaker();
		policy = registry.guard("chat").policy();
	}

	/** The demo's guard policy, {@code aiguard.policies.chat}, as the starter built it. */
	GuardPolicy policy;

	private final SoakTally tally = new SoakTally();
	private final AtomicLong nextStream = new AtomicLong();
	/** The phase in force, for the description of a stream that breaks a rule. */
	private final AtomicReference<String> phase = new AtomicReference<>("no phase yet");
	/** The fault the mock has now, for counting the streams that met each. */
	private final AtomicReference<SoakPlan.Fault> faultNow = new AtomicReference<>(SoakPlan.Fault.HEALTHY);
	private Settings settings;
	private SoakPlan plan;
	private StreamCheck.Ladder ladder;
	private Duration serverBound;
	private WebClient admin;

	/** The knobs of a run, from system properties. */
	record Settings(long seed, Duration main, Duration warmUp, int concurrency, Duration phase, Duration slack,
			double heapTolerance) {

		static Settings fromSystemProperties() {
			String seed = System.getProperty("soak.seed");
			return new Settings(seed == null || seed.isBlank() ? System.nanoTime() ^ System.currentTimeMillis()
					: Long.parseLong(seed.strip()),
					Duration.ofSeconds(Long.getLong("soak.seconds", 40)),
					Duration.ofSeconds(Long.getLong("soak.warmupSeconds", 10)),
					Integer.getInteger("soak.concurrency", 200),
					Duration.ofMillis(Long.getLong("soak.phaseMillis", 2500)),
					Duration.ofSeconds(Long.getLong("soak.slackSeconds", 10)),
					Double.parseDouble(System.getProperty("soak.heapTolerance", "0.10")));
		}
	}

	@Test
	void guardedStreamsSurviveASeededFaultScheduleOverHttp() {
		settings = Settings.fromSystemProperties();
		long runStart = System.nanoTime();
		StallSpec stall = policy.stall();
		plan = new SoakPlan(settings.seed(), json, stall.firstTokenTimeout(), stall.idleTimeout());
		ladder = ladder();
		serverBound = serverBound();
		System.out.println("Fault soak: seed " + settings.seed() + " (rerun with -Dsoak.seed=" + settings.seed()
				+ "), warm-up " + settings.warmUp().toSeconds() + " s, main " + settings.main().toSeconds() + " s, "
				+ settings.concurrency() + " streams at once, phases of " + settings.phase().toMillis()
				+ " ms, bound per stream " + serverBound.toMillis() + " ms (+ slow reading)");

		ConnectionProvider adminConnections = ConnectionProvider.create("soak-admin", 4);
		admin = client(adminConnections);
		// not failures by themselves (an error racing a cancel has nowhere to go), but worth a look
		Hooks.onErrorDropped(this::errorDropped);
		Hooks.onNextDropped(value -> tally.count("dropped values"));
		BreakerListener transitions = this::breakerEvent;
		breaker.addListener(transitions);
		try {
			blockHoundCatchesABlockingCallOnAParallelThread();
			long blockingBefore = DemoBlockHoundIntegration.caught();
			JsonNode first = snapshot().block(SETTLE);

			runStage("warm-up", settings.warmUp(), plan.warmUpPhases()::get, plan.warmUpPhases().size());
			long warmUpStreams = nextStream.get();
			long heapStart = heapAfterGc();

			runStage("main", settings.main(), plan::mainPhase, Integer.MAX_VALUE);
			long mainStreams = nextStream.get() - warmUpStreams;

			Duration recovery = recover();
			long probes = nextStream.get() - warmUpStreams - mainStreams;
			JsonNode last = settled("after the recovery");
			checkReports(first, last);
			long heapEnd = heapAfterGc();
			if (heapEnd > heapStart * (1 + settings.heapTolerance())) {
				tally.problem(String.format("heap after GC grew from %.1f MB to %.1f MB (more than %.0f %%)",
						mb(heapStart), mb(heapEnd), settings.heapTolerance() * 100));
			}
			long blocking = DemoBlockHoundIntegration.caught() - blockingBefore;
			if (blocking > 0) {
				tally.problem(blocking + " blocking call(s) caught by BlockHound:\n" + String.join("\n",
						DemoBlockHoundIntegration.notesAfter(blockingBefore)));
			}
			String report = report(first, last, warmUpStreams, mainStreams, probes, recovery, heapStart, heapEnd,
					blocking, Duration.ofNanos(System.nanoTime() - runStart));
			System.out.println(report);
			write(report);
			assertThat(tally.violations()).as(report).isZero();
		}
		finally {
			breaker.removeListener(transitions);
			Hooks.resetOnErrorDropped();
			Hooks.resetOnNextDropped();
			adminConnections.disposeLater().block(SETTLE);
		}
	}

	/** Counts the breaker's moves and keeps the first few with their reasons, for the report. */
	private void breakerEvent(BreakerEvent event) {
		if (event instanceof BreakerEvent.StateTransition t) {
			tally.count("breaker." + t.from() + " -> " + t.to());
			if (tally.get("breaker transitions noted") < 12) {
				tally.count("breaker transitions noted");
				tally.note("breaker " + t.from() + " -> " + t.to() + " in " + phase.get() + ": " + t.reason());
			}
		}
	}

	private void errorDropped(Throwable error) {
		tally.count("dropped errors");
		if (tally.get("dropped errors") <= 3) {
			StringBuilder where = new StringBuilder(error.toString()).append(" on ")
				.append(Thread.currentThread().getName());
			StackTraceElement[] frames = new Throwable().getStackTrace();
			for (int i = 1; i < Math.min(frames.length, 16); i++) {
				where.append("\n        at ").append(frames[i]);
			}
			tally.note(where.toString());
		}
	}

	// ---- the streams ----

	/**
	 * Runs streams, {@link Settings#concurrency()} at a time, for {@code length}, while the phases
	 * change the mock's faults; then resets the faults and waits for every stream to end.
	 */
	private void runStage(String name, Duration length, IntFunction<SoakPlan.Phase> phaseSource, int phaseCount) {
		ConnectionProvider connections = ConnectionProvider.builder("soak-" + name)
			.maxConnections(settings.concurrency() + 16)
			.pendingAcquireMaxCount(-1)
			.build();
		WebClient web = client(connections);
		Duration phaseLength = phaseCount == Integer.MAX_VALUE ? settings.phase()
				: length.dividedBy(Math.max(1, phaseCount));
		PhaseSwitch phases = new PhaseSwitch(phaseSource, phaseCount, Math.max(1, phaseLength.dividedBy(SLICE)));
		phases.apply(0).block(SETTLE);
		Disposable switcher = Flux.interval(SLICE, SLICE)
			.onBackpressureDrop()
			.concatMap(slice -> phases.apply(slice + 1), 1)
			.subscribe(null, e -> tally.problem("switching the fault phase failed: " + e));
		long end = System.nanoTime() + length.toNanos();
		Duration longest = serverBound.plus(GRACE).plus(Duration.ofSeconds(30));
		try {
			Flux.<Long>generate(sink -> sink.next(nextStream.getAndIncrement()))
				.takeWhile(n -> System.nanoTime() - end < 0)
				.flatMap(n -> stream(web, plan.stream(n)), settings.concurrency(), 1)
				.then()
				.block(length.plus(longest));
		}
		catch (IllegalStateException notEnded) {
			tally.problem("the " + name + " stage's streams did not all end within " + length.plus(longest).toSeconds()
					+ " s: " + notEnded.getMessage());
		}
		finally {
			switcher.dispose();
			admin.delete().uri("/api/faults").retrieve().toBodilessEntity().block(SETTLE);
			phase.set("faults off after the " + name + " stage");
			faultNow.set(SoakPlan.Fault.HEALTHY);
			connections.disposeLater().block(SETTLE);
		}
		settled("after the " + name + " stage");
	}

	/**
	 * Turns the phases into {@code PUT /api/faults} calls, one per change: each phase is cut into
	 * slices of {@link #SLICE}, and its fault is on in the first slices of each cycle.
	 */
	private final class PhaseSwitch {

		private final IntFunction<SoakPlan.Phase> phases;
		private final int count;
		private final long slicesPerPhase;
		private int appliedPhase = Integer.MIN_VALUE;
		private boolean appliedFaulty;

		PhaseSwitch(IntFunction<SoakPlan.Phase> phases, int count, long slicesPerPhase) {
			this.phases = phases;
			this.count = count;
			this.slicesPerPhase = slicesPerPhase;
		}

		/** Called for one slice after the other, never at once. */
		Mono<Void> apply(long slice) {
			int index = (int) Math.min(slice / slicesPerPhase, count - 1L);
			SoakPlan.Phase next = phases.apply(index);
			boolean faulty = next.faultyIn(slice % slicesPerPhase);
			if (index == appliedPhase && faulty == appliedFaulty) {
				return Mono.empty();
			}
			if (index != appliedPhase) {
				tally.count("phase." + next.fault());
			}
			appliedPhase = index;
			appliedFaulty = faulty;
			return admin.put().uri("/api/faults")
				.contentType(MediaType.APPLICATION_JSON)
				.bodyValue(faulty ? next.profile() : "{}")
				.retrieve()
				.toBodilessEntity()
				.doOnSuccess(ok -> {
					phase.set(next + (next.fault() == SoakPlan.Fault.HEALTHY ? "" : faulty ? " (fault on)" : " (fault off)"));
					faultNow.set(faulty ? next.fault() : SoakPlan.Fault.HEALTHY);
				})
				.then();
		}
	}

	/** One stream, read the way its plan says; never fails: what went wrong is in the tally. */
	private Mono<Void> stream(WebClient web, SoakPlan.Stream s) {
		return Mono.defer(() -> {
			Duration bound = boundOf(s);
			StreamCheck check = new StreamCheck(s, phase.get(), bound, json);
			tally.count("sent");
			tally.count("sent with fault." + faultNow.get());
			tally.count("reader." + s.reader());
			tally.count("question." + s.question());
			Flux<ServerSentEvent<String>> events = web.post().uri("/api/chat")
				.contentType(MediaType.APPLICATION_JSON)
				.accept(MediaType.TEXT_EVENT_STREAM)
				.header("X-Priority", s.priority().name())
				.bodyValue(s.body())
				.retrieve()
				.bodyToFlux(SSE);
			if (s.reader() == SoakPlan.Reader.SLOW) {
				// one event at a time, each taking a while: demand reaches the server a little at a time
				events = events.limitRate(1).concatMap(e -> Mono.delay(s.readDelay()).thenReturn(e), 0);
			}
			events = events.doOnNext(check::accept);
			if (s.reader() == SoakPlan.Reader.CANCEL_AFTER_TOKENS) {
				events = events.takeUntil(e -> {
					boolean leave = "token".equals(e.event()) && check.tokenCount() >= s.cancelAfterTokens();
					if (leave) {
						check.cancelling();
					}
					return leave;
				});
			}
			else if (s.reader() == SoakPlan.Reader.CANCEL_AFTER_TIME) {
				events = events.takeUntilOther(check.metaSeen()
					.then(Mono.delay(s.cancelAfter()))
					.doOnNext(t -> check.cancelling()));
			}
			return events.then()
				// a stream past its bound is late; one that does not end even after the grace is hung
				.timeout(bound.plus(GRACE))
				.then(Mono.fromRunnable(() -> tally.ended(check, check.judge(null, ladder))))
				.onErrorResume(e -> Mono.fromRunnable(() -> tally.ended(check, check.judge(e, ladder))))
				.then();
		});
	}

	/**
	 * The longest a request may take, from the demo's settings: the lane queue, every attempt before
	 * the first token (retries and prompt shrinking) with the longest wait between them, the last
	 * attempt's whole duration, each rung of the ladder, and slack for a loaded machine; a slow
	 * reader adds its reading time.
	 */
	private Duration serverBound() {
		StallSpec stall = policy.stall();
		RetryRules retry = policy.retry();
		int attempts = retry.maxAttempts() + policy.truncation().maxTruncations();
		Duration betweenAttempts = retry.maxBackoff().compareTo(retry.maxRetryAfter()) > 0 ? retry.maxBackoff()
				: retry.maxRetryAfter();
		PriorityLanes lanes = Objects.requireNonNull(policy.lanes(), "the demo's policy has lanes");
		Duration queueWait = Arrays.stream(Priority.values()).map(p -> lanes.spec(p).maxQueueWait())
			.max(Duration::compareTo).orElseThrow();
		return queueWait
			.plus(stall.firstTokenTimeout().multipliedBy(attempts - 1))
			.plus(betweenAttempts.multipliedBy(retry.maxAttempts() - 1))
			.plus(stall.maxDuration())
			// each rung to its first chunk: the sibling model, the cache, the canned answers, the fixed message
			.plus(properties.fallback().timeout().multipliedBy(Objects.requireNonNull(policy.fallback(), "the ladder")
				.steps().size()))
			.plus(settings.slack());
	}

	private Duration boundOf(SoakPlan.Stream s) {
		if (s.reader() != SoakPlan.Reader.SLOW) {
			return serverBound;
		}
		int longestAnswer = Math.max(s.count(), ladder.staticText().split(" ").length);
		for (String canned : ladder.topicAnswers().values()) {
			longestAnswer = Math.max(longestAnswer, canned.split(" ").length);
		}
		return serverBound.plus(s.readDelay().multipliedBy(longestAnswer + 3L));
	}

	// ---- after the streams ----

	/** @return how long the breaker took to close again, with faults off and probe requests flowing */
	private Duration recover() {
		BreakerConfig c = breaker.config();
		Duration longestOpen = Duration.ofNanos((long) (c.maxOpenWait().toNanos() * (1 + c.openWaitJitter())));
		Duration within = longestOpen.plus(c.minimumDwell()).plus(serverBound);
		ConnectionProvider connections = ConnectionProvider.create("soak-probes", 4);
		WebClient web = client(connections);
		long start = System.nanoTime();
		try {
			JsonNode last = Mono.defer(() -> stream(web, plan.probe(nextStream.getAndIncrement()))
					.then(Mono.delay(Duration.ofMillis(100)))
					.then(snapshot()))
				.repeat()
				.takeUntil(s -> "CLOSED".equals(breakerState(s)))
				.take(within)
				.last()
				.block(within.plus(serverBound));
			if (!"CLOSED".equals(breakerState(last))) {
				tally.problem("the breaker is still " + breakerState(last) + " " + within.toMillis()
						+ " ms after the faults were switched off (open wait up to " + longestOpen.toMillis()
						+ " ms, dwell " + c.minimumDwell().toMillis() + " ms): " + last.get("breaker"));
			}
		}
		finally {
			connections.disposeLater().block(SETTLE);
		}
		return Duration.ofNanos(System.nanoTime() - start);
	}

	/** Waits for lanes and mock to be idle, and notes it when they do not get there. */
	private JsonNode settled(String when) {
		JsonNode last = until(s -> lanesIdle(s) && s.path("mock").path("inProgress").asLong(-1) == 0);
		if (!lanesIdle(last)) {
			tally.problem("lanes not idle " + when + ": " + last.get("lanes"));
		}
		if (last.path("mock").path("inProgress").asLong(-1) != 0) {
			tally.problem("upstream calls still open at the mock " + when + ": " + last.get("mock"));
		}
		return last;
	}

	/**
	 * One report per request the guard took: the guard's request counter grew by exactly the number
	 * of streams sent, less those the load governor shed (refused before the guard takes them).
	 */
	private void checkReports(JsonNode first, JsonNode last) {
		long sent = tally.get("sent");
		long shed = tally.get("end." + StreamCheck.SHED);
		long taken = sent - shed;
		long before = first.path("counters").path("requests").asLong();
		JsonNode now = until(s -> s.path("counters").path("requests").asLong() - before >= taken);
		long reports = now.path("counters").path("requests").asLong() - before;
		if (reports != taken) {
			tally.problem(reports + " guard reports for " + sent + " requests, " + shed + " of them shed");
		}
		long done = tally.group("end.done ").values().stream().mapToLong(Long::longValue).sum();
		long success = outcome(now, "SUCCESS") - outcome(first, "SUCCESS");
		if (success < done) {
			tally.problem(done + " done events but only " + success + " SUCCESS reports");
		}
		long cancels = tally.get("end.cancelled before first token") + tally.get("end.cancelled mid-answer");
		long cancelled = outcome(now, "CANCELLED") - outcome(first, "CANCELLED");
		if (cancelled > cancels) {
			tally.problem(cancelled + " CANCELLED reports but clients cancelled only " + cancels + " streams");
		}
		long tokens = now.path("counters").path("tokens").asLong() - first.path("counters").path("tokens").asLong();
		if (tokens < tally.get("tokens")) {
			tally.problem("the guard reported " + tokens + " tokens delivered, clients received " + tally.get("tokens"));
		}
	}

	private JsonNode until(Predicate<JsonNode> settled) {
		return Flux.interval(Duration.ZERO, Duration.ofMillis(100))
			.onBackpressureDrop()
			.concatMap(i -> snapshot(), 1)
			.takeUntil(settled)
			.take(SETTLE)
			.last()
			.block(SETTLE.multipliedBy(2));
	}

	private Mono<JsonNode> snapshot() {
		return admin.get().uri("/api/guard").retrieve().bodyToMono(String.class).map(json::readTree);
	}

	private static boolean lanesIdle(JsonNode snapshot) {
		for (Priority p : Priority.values()) {
			JsonNode lane = snapshot.path("lanes").path(p.name());
			if (lane.path("inFlight").asLong(-1) != 0 || lane.path("borrowed").asLong(-1) != 0
					|| lane.path("queued").asLong(-1) != 0) {
				return false;
			}
		}
		return true;
	}

	private static String breakerState(JsonNode snapshot) {
		return snapshot.path("breaker").path("state").asString("?");
	}

	private static long outcome(JsonNode snapshot, String outcome) {
		return snapshot.path("counters").path("outcomes").path(outcome).asLong();
	}

	// ---- set-up ----

	/** The ladder's answers, taken from the demo's own rungs so the check cannot drift from them. */
	private StreamCheck.Ladder ladder() {
		Map<String, String> canned = new LinkedHashMap<>();
		DemoFaq faq = new DemoFaq();
		for (String topic : SoakPlan.TOPICS) {
			canned.put(topic, fallbackText(faq, SoakPlan.topicQuestion("x", 3, topic)));
		}
		assertThat(fallbackText(faq, MockAnswers.numbered("s1", 10))).as("a question without a topic has no canned answer")
			.isEmpty();
		return new StreamCheck.Ladder(properties.fallback().staticText(), canned);
	}

	private static String fallbackText(DemoFaq faq, String question) {
		ChatRequest request = ChatRequest.of(null, List.of(ChatMessage.user(question)));
		FallbackRequest asked = new FallbackRequest(request, new IllegalStateException("soak"),
				FallbackTrigger.RETRIES_EXHAUSTED, Priority.P1, null);
		StringBuilder b = new StringBuilder();
		Flux.from(faq.step().answer(asked)).map(ChatChunk::text).doOnNext(b::append).blockLast(SETTLE);
		return b.toString();
	}

	private WebClient client(ConnectionProvider connections) {
		return WebClient.builder()
			.baseUrl("http://127.0.0.1:" + port)
			.defaultHeader(LocalAccessFilter.TOKEN_HEADER, access.token())
			.clientConnector(new ReactorClientHttpConnector(HttpClient.create(connections)))
			.build();
	}

	/** The soak counts on BlockHound: prove it is installed and recording before trusting its silence. */
	private static void blockHoundCatchesABlockingCallOnAParallelThread() {
		long before = DemoBlockHoundIntegration.caught();
		StepVerifier.create(Mono.fromCallable(() -> new CountDownLatch(1).await(1, TimeUnit.MILLISECONDS))
				.subscribeOn(Schedulers.parallel()))
			.expectError(BlockingOperationError.class)
			.verify(SETTLE);
		assertThat(DemoBlockHoundIntegration.caught()).as("the recorder saw the blocking call").isEqualTo(before + 1);
	}

	/** @return heap in use after a full collection, the least of three so a late allocation does not count */
	private static long heapAfterGc() {
		long least = Long.MAX_VALUE;
		for (int i = 0; i < 3; i++) {
			System.gc();
			Mono.delay(Duration.ofMillis(200)).block(SETTLE);
			least = Math.min(least, ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed());
		}
		return least;
	}

	// ---- the report ----

	private String report(JsonNode first, JsonNode last, long warmUpStreams, long mainStreams, long probes,
			Duration recovery, long heapStart, long heapEnd, long blocking, Duration took) {
		JsonNode m0 = first.path("mock");
		JsonNode m1 = last.path("mock");
		Map<String, Long> mock = new LinkedHashMap<>();
		for (String field : List.of("requests", "completed", "cancelled", "injectedErrors", "contextRejections",
				"stalled", "dropped")) {
			mock.put(field, m1.path(field).asLong() - m0.path(field).asLong());
		}
		Map<String, Long> outcomes = new LinkedHashMap<>();
		last.path("counters").path("outcomes").propertyNames().forEach(o -> outcomes.put(o, outcome(last, o)
				- outcome(first, o)));
		Map<String, Long> sources = new LinkedHashMap<>();
		last.path("counters").path("sources").propertyNames().forEach(s -> sources.put(s,
				last.path("counters").path("sources").path(s).asLong()
						- first.path("counters").path("sources").path(s).asLong()));
		long requests = last.path("counters").path("requests").asLong() - first.path("counters").path("requests").asLong();
		long attempts = last.path("counters").path("attempts").asLong() - first.path("counters").path("attempts").asLong();
		StringBuilder b = new StringBuilder();
		b.append("\n==== fault soak report ====\n");
		b.append("seed ").append(settings.seed()).append(" (-Dsoak.seed=").append(settings.seed()).append("), ")
			.append(settings.concurrency()).append(" streams at once, warm-up ").append(settings.warmUp().toSeconds())
			.append(" s + main ").append(settings.main().toSeconds()).append(" s, phases of ")
			.append(settings.phase().toMillis()).append(" ms\n");
		b.append("streams: ").append(tally.get("sent")).append(" (warm-up ").append(warmUpStreams).append(", main ")
			.append(mainStreams).append(", recovery probes ").append(probes).append(")\n");
		b.append("tokens received: ").append(tally.get("tokens")).append(", checked against the numbering: ")
			.append(tally.get("numbered")).append('\n');
		b.append("phases: ").append(tally.group("phase.")).append('\n');
		b.append("streams sent while the mock had each fault: ").append(tally.group("sent with fault.")).append('\n');
		b.append("readers: ").append(tally.group("reader.")).append('\n');
		b.append("questions: ").append(tally.group("question.")).append('\n');
		b.append("ends seen by clients: ").append(tally.group("end.")).append('\n');
		b.append("guard reports: ").append(requests).append(" requests, ").append(attempts).append(" attempts, outcomes ")
			.append(outcomes).append(", sources ").append(sources).append('\n');
		b.append("faults at the mock: ").append(mock).append('\n');
		b.append("breaker moves: ").append(tally.group("breaker.")).append('\n');
		b.append("breaker: ").append(last.path("breaker")).append(", closed ").append(recovery.toMillis())
			.append(" ms after the faults were switched off\n");
		b.append("stream durations: ").append(tally.group("duration.")).append('\n');
		b.append("longest stream: ").append(tally.longestMillis()).append(" ms (bound ").append(serverBound.toMillis())
			.append(" ms + slow reading)\n");
		b.append(String.format("heap after GC: %.1f MB after the warm-up, %.1f MB at the end (%+.1f %%)%n", mb(heapStart),
				mb(heapEnd), 100.0 * (heapEnd - heapStart) / heapStart));
		b.append("blocking calls caught by BlockHound during the soak: ").append(blocking).append('\n');
		b.append("took: ").append(took.toMillis() / 1000.0).append(" s\n");
		b.append("dropped by Reactor (after a cancel, say): ").append(tally.get("dropped errors")).append(" errors, ")
			.append(tally.get("dropped values")).append(" values\n");
		for (String n : tally.notes()) {
			b.append("  note: ").append(n).append('\n');
		}
		b.append("problems: ").append(tally.violations()).append(" ").append(tally.group("problem.")).append('\n');
		for (String p : tally.problems()) {
			b.append("  - ").append(p).append('\n');
		}
		return b.toString();
	}

	private static double mb(long bytes) {
		return bytes / (1024.0 * 1024.0);
	}

	private static void write(String report) {
		try {
			Path target = Path.of("target");
			if (Files.isDirectory(target)) {
				Files.writeString(target.resolve("soak-report.txt"), report, StandardCharsets.UTF_8);
			}
		}
		catch (IOException e) {
			System.out.println("could not write target/soak-report.txt: " + e);
		}
	}
}
