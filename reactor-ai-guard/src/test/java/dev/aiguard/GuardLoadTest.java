package dev.aiguard;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import dev.aiguard.admission.AdmissionRejectedException;
import dev.aiguard.admission.AdmissionRejectedException.Reason;
import dev.aiguard.admission.LaneSpec;
import dev.aiguard.admission.PriorityLanes;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.core.Outcome;
import dev.aiguard.core.Priority;
import dev.aiguard.core.Source;
import dev.aiguard.fallback.Fallback;
import dev.aiguard.fallback.FallbackChain;
import dev.aiguard.fallback.FallbackTrigger;
import dev.aiguard.load.DegradedByLoadException;
import dev.aiguard.load.HealthSignals;
import dev.aiguard.load.LoadAction;
import dev.aiguard.load.LoadGovernor;
import dev.aiguard.load.LoadLevel;
import dev.aiguard.testing.Policies;
import dev.aiguard.testing.Reports;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import reactor.core.publisher.Flux;
import reactor.test.StepVerifier;
import reactor.test.scheduler.VirtualTimeScheduler;
import reactor.test.subscriber.TestSubscriber;
import reactor.test.util.RaceTestUtils;

import static dev.aiguard.core.Priority.P0;
import static dev.aiguard.core.Priority.P1;
import static dev.aiguard.core.Priority.P2;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The load governor as the guard asks it: every request is an arrival, the level's action for its
 * priority decides whether it is served live, by the ladder's cheaper steps first, by the static
 * answer or shed, and live attempts report back. Time is virtual: one decision per second.
 */
@Timeout(60)
class GuardLoadTest {

	static final double CAPACITY = 10.0; // requests per second

	final VirtualTimeScheduler vts = VirtualTimeScheduler.create();
	final Reports reports = new Reports();
	final List<LoadGovernor> governors = new ArrayList<>();
	final AtomicInteger liveCalls = new AtomicInteger();

	@AfterEach
	void dispose() {
		governors.forEach(LoadGovernor::dispose);
		vts.dispose();
	}

	/**
	 * A governor whose levels follow each second's offered load (no smoothing, a load line for
	 * every level); CPU and memory are the test machine's, so left out.
	 */
	LoadGovernor governor(Duration dwell) {
		LoadGovernor g = defaults(dwell).loadSmoothing(1.0).loadThresholds(0.8, 1.0, 2.0).build();
		governors.add(g);
		return g;
	}

	/** The default load lines and smoothing: the offered load alone reaches WARNING, the score the rest. */
	LoadGovernor.Builder defaults(Duration dwell) {
		return LoadGovernor.builder("chat")
				.capacity(CAPACITY)
				.interval(Duration.ofSeconds(1))
				.clock(vts)
				.dwell(dwell)
				.warmupIntervals(3)
				.withoutSignal(HealthSignals.CPU)
				.withoutSignal(HealthSignals.MEMORY);
	}

	@Test
	void byDefaultTheOfferedLoadStopsAtWarningAndAFailingModelShedsP2() {
		LoadGovernor governor = defaults(Duration.ofSeconds(30)).build();
		governors.add(governor);
		AtomicInteger failing = new AtomicInteger();
		AiGuard<ChatChunk> guard = AiGuard.of(Policies.onVirtualTime("chat", vts, reports).load(governor).build());
		java.util.function.Function<ChatRequest, Flux<ChatChunk>> model = r -> failing.get() > 0
				? Flux.error(new dev.aiguard.provider.ProviderServerException("test", 503, "server_error", null, "down", null))
				: Flux.just(ChatChunk.token("live"), ChatChunk.finish("stop"));

		for (int s = 0; s < 6; s++) {
			for (int i = 0; i < 30; i++) { // three times the capacity
				send(guard, model, P0);
			}
			vts.advanceTimeBy(Duration.ofSeconds(1));
		}
		assertThat(governor.level()).as("load alone").isEqualTo(LoadLevel.WARNING);
		assertThat(governor.state().load()).isGreaterThan(2.0);

		failing.set(1);
		// every attempt fails from now on: the error rate scores 0 at once, but the window's earlier
		// fast first tokens keep response-time at 100 until they leave the 10 s signal window; then
		// the score falls under DEGRADED's line and stays there for riseAfter (3 s)
		int seconds = 0;
		while (governor.level().compareTo(LoadLevel.DEGRADED) < 0 && seconds < 30) {
			for (int i = 0; i < 30; i++) {
				send(guard, model, P0);
			}
			vts.advanceTimeBy(Duration.ofSeconds(1));
			seconds++;
			assertThat(governor.state().subScores().get(HealthSignals.ERROR_RATE)).isZero();
		}
		// the machine's own cpu and heap sub-scores move the exact second, hence a range
		assertThat(seconds).as("seconds of failures until DEGRADED").isBetween(4, 20);
		assertThat(governor.level()).isGreaterThanOrEqualTo(LoadLevel.DEGRADED);
		assertThat(governor.state().lastChange().reason()).isEqualTo(dev.aiguard.load.LoadEvent.Reason.SCORE);
		assertThat(send(guard, model, P2).expectTerminalError()).isInstanceOfSatisfying(AdmissionRejectedException.class,
				e -> assertThat(e.reason()).isEqualTo(Reason.SHED));
	}

	TestSubscriber<ChatChunk> send(AiGuard<ChatChunk> guard, java.util.function.Function<ChatRequest, Flux<ChatChunk>> model,
			Priority priority) {
		TestSubscriber<ChatChunk> ts = TestSubscriber.<ChatChunk>builder().contextPut(Priority.CONTEXT_KEY, priority).build();
		guard.call(ask("q"), model).subscribe(ts);
		return ts;
	}

	AiGuard<ChatChunk> guard(LoadGovernor governor, FallbackChain<ChatChunk> ladder) {
		GuardPolicy.Builder b = Policies.onVirtualTime("chat", vts, reports).load(governor);
		if (ladder != null) {
			b.fallback(ladder);
		}
		return AiGuard.of(b.build());
	}

	Flux<ChatChunk> live(ChatRequest request) {
		return Flux.defer(() -> {
			liveCalls.incrementAndGet();
			return Flux.just(ChatChunk.token("live"), ChatChunk.finish("stop"));
		});
	}

	static ChatRequest ask(String question) {
		return ChatRequest.of(null, List.of(ChatMessage.user(question)));
	}

	TestSubscriber<ChatChunk> send(AiGuard<ChatChunk> guard, Priority priority, String question) {
		TestSubscriber<ChatChunk> ts = TestSubscriber.<ChatChunk>builder().contextPut(Priority.CONTEXT_KEY, priority).build();
		guard.call(ask(question), this::live).subscribe(ts);
		return ts;
	}

	/** Offers {@code perSecond} requests of {@code priority} in one second, then lets the governor decide. */
	List<TestSubscriber<ChatChunk>> second(AiGuard<ChatChunk> guard, Priority priority, int perSecond) {
		List<TestSubscriber<ChatChunk>> sent = new ArrayList<>();
		for (int i = 0; i < perSecond; i++) {
			sent.add(send(guard, priority, "q" + i));
		}
		vts.advanceTimeBy(Duration.ofSeconds(1));
		return sent;
	}

	static String text(TestSubscriber<ChatChunk> ts) {
		StringBuilder sb = new StringBuilder();
		ts.getReceivedOnNext().forEach(c -> sb.append(c.text() == null ? "" : c.text()));
		return sb.toString();
	}

	/** The load stage hears each live attempt's first token and outcome once, whatever else the request does. */
	@Test
	void eachLiveAttemptReachesTheGovernorOnce() {
		LoadGovernor governor = governor(Duration.ofSeconds(30));
		AiGuard<ChatChunk> guard = guard(governor, null);

		second(guard, P1, 4);

		assertThat(liveCalls).hasValue(4);
		assertThat(governor.state().interval().arrivals()).isEqualTo(4);
		assertThat(governor.state().interval().attempts()).isEqualTo(4);
		assertThat(governor.state().interval().firstTokens()).isEqualTo(4);
	}

	@Test
	void risingLoadShedsP2WithARetryHintAndKeepsP0Realtime() {
		LoadGovernor governor = governor(Duration.ofSeconds(30));
		AiGuard<ChatChunk> guard = guard(governor, null);

		for (int s = 0; s < 4; s++) {
			second(guard, P2, 5); // half the capacity
		}
		assertThat(governor.level()).isEqualTo(LoadLevel.HEALTHY);
		assertThat(reports).allSatisfy(r -> assertThat(r.source()).isEqualTo(Source.REALTIME));

		second(guard, P2, 12); // past capacity
		assertThat(governor.level()).isGreaterThanOrEqualTo(LoadLevel.DEGRADED);
		assertThat(governor.action(P2)).isEqualTo(LoadAction.SHED);
		int callsBefore = liveCalls.get();
		reports.clear();

		TestSubscriber<ChatChunk> batch = send(guard, P2, "summarise the logs");
		TestSubscriber<ChatChunk> interactive = send(guard, P0, "where is my order?");

		assertThat(batch.expectTerminalError()).isInstanceOfSatisfying(AdmissionRejectedException.class, e -> {
			assertThat(e.reason()).isEqualTo(Reason.SHED);
			assertThat(e.priority()).isEqualTo(P2);
			assertThat(e.retryAfter()).hasValueSatisfying(d -> assertThat(d).isPositive());
			assertThat(e.getMessage()).contains("chat").contains("P2").contains(governor.level().name());
		});
		assertThat(batch.getReceivedOnNext()).isEmpty();
		assertThat(interactive.isTerminatedComplete()).isTrue();
		assertThat(text(interactive)).isEqualTo("live");
		assertThat(liveCalls.get()).as("only P0 reached the model").isEqualTo(callsBefore + 1);
		assertThat(reports).extracting(GuardReport::priority, GuardReport::outcome, GuardReport::source)
				.containsExactlyInAnyOrder(org.assertj.core.groups.Tuple.tuple(P2, Outcome.REJECTED, Source.REALTIME),
						org.assertj.core.groups.Tuple.tuple(P0, Outcome.SUCCESS, Source.REALTIME));
	}

	@Test
	void arrivalsAndLiveAttemptsAreWhatTheGovernorMeasures() {
		LoadGovernor governor = governor(Duration.ofSeconds(30));
		AiGuard<ChatChunk> guard = guard(governor, null);

		second(guard, P0, 3);
		second(guard, P1, 4);

		assertThat(governor.state().requestRate()).isEqualTo(4.0);
		assertThat(governor.state().load()).isEqualTo(0.4);
		assertThat(governor.state().intervals()).isEqualTo(2);
	}

	@Test
	void atWarningP2TriesTheCheapStepsFirstAndTheModelWhenTheyHaveNoAnswer() {
		LoadGovernor governor = governor(Duration.ofSeconds(30));
		List<Throwable> causes = new ArrayList<>();
		FallbackChain<ChatChunk> ladder = FallbackChain.<ChatChunk>builder()
				.step(Fallback.<ChatChunk>lightweight(r -> {
					causes.add(r.cause());
					assertThat(r.trigger()).isEqualTo(FallbackTrigger.LOAD);
					String question = r.chatRequest().messages().get(0).content();
					return question.startsWith("faq") ? Flux.just(ChatChunk.token("from the faq"), ChatChunk.finish("stop"))
							: Flux.empty();
				}, false))
				.step(Fallback.staticText("busy"))
				.build();
		AiGuard<ChatChunk> guard = guard(governor, ladder);
		for (int s = 0; s < 3; s++) {
			second(guard, P0, 5);
		}
		second(guard, P0, 9); // 90 % of capacity
		assertThat(governor.level()).isEqualTo(LoadLevel.WARNING);
		assertThat(governor.action(P2)).isEqualTo(LoadAction.CHEAPER_FIRST);
		int callsBefore = liveCalls.get();
		reports.clear();

		TestSubscriber<ChatChunk> faq = send(guard, P2, "faq: opening hours");
		TestSubscriber<ChatChunk> other = send(guard, P2, "write a poem");
		TestSubscriber<ChatChunk> interactive = send(guard, P0, "faq: refunds");

		assertThat(text(faq)).isEqualTo("from the faq");
		assertThat(text(other)).as("no cheap answer: the model answers, not the static text").isEqualTo("live");
		assertThat(text(interactive)).as("P0 is served live at WARNING").isEqualTo("live");
		assertThat(liveCalls.get()).isEqualTo(callsBefore + 2);
		assertThat(reports).extracting(GuardReport::source)
				.containsExactlyInAnyOrder(Source.LIGHTWEIGHT, Source.REALTIME, Source.REALTIME);
		assertThat(causes).hasSize(2).allSatisfy(c -> assertThat(c).isInstanceOfSatisfying(DegradedByLoadException.class,
				d -> assertThat(d.action()).isEqualTo(LoadAction.CHEAPER_FIRST)));
	}

	@Test
	void atCriticalP1GetsTheStaticAnswerP2IsShedAndP0StaysLive() {
		LoadGovernor governor = governor(Duration.ofSeconds(30));
		FallbackChain<ChatChunk> ladder = FallbackChain.<ChatChunk>builder()
				.step(Fallback.<ChatChunk>lightweight(r -> Flux.just(ChatChunk.token("cheap"), ChatChunk.finish("stop")), false))
				.step(Fallback.staticText("The assistant is busy."))
				.build();
		AiGuard<ChatChunk> guard = guard(governor, ladder);
		second(guard, P0, 25); // 2.5 times the capacity
		assertThat(governor.level()).isEqualTo(LoadLevel.CRITICAL);
		int callsBefore = liveCalls.get();

		TestSubscriber<ChatChunk> assistive = send(guard, P1, "suggest a reply");
		TestSubscriber<ChatChunk> batch = send(guard, P2, "nightly report");
		TestSubscriber<ChatChunk> interactive = send(guard, P0, "help");

		assertThat(text(assistive)).isEqualTo("The assistant is busy.");
		assertThat(assistive.isTerminatedComplete()).isTrue();
		assertThat(reports.get(reports.size() - 3).source()).isEqualTo(Source.STATIC);
		assertThat(batch.expectTerminalError()).isInstanceOfSatisfying(AdmissionRejectedException.class,
				e -> assertThat(e.reason()).isEqualTo(Reason.SHED));
		assertThat(text(interactive)).isEqualTo("live");
		assertThat(liveCalls.get()).isEqualTo(callsBefore + 1);
	}

	@Test
	void withoutAStaticStepStaticOrShedSheds() {
		LoadGovernor governor = governor(Duration.ofSeconds(30));
		AiGuard<ChatChunk> guard = guard(governor, null);
		second(guard, P0, 25);
		assertThat(governor.action(P1)).isEqualTo(LoadAction.STATIC_OR_SHED);

		StepVerifier.create(guard.call(ask("x"), this::live).contextWrite(P1.asContext()))
				.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(AdmissionRejectedException.class))
				.verify(Duration.ofSeconds(5));
	}

	@Test
	void aLadderNotEnteredByLoadLeavesP2LiveAtWarning() {
		LoadGovernor governor = governor(Duration.ofSeconds(30));
		FallbackChain<ChatChunk> ladder = FallbackChain.<ChatChunk>builder()
				.step(Fallback.<ChatChunk>lightweight(r -> Flux.just(ChatChunk.token("cheap")), false))
				.triggers(java.util.EnumSet.of(FallbackTrigger.BREAKER_OPEN))
				.build();
		AiGuard<ChatChunk> guard = guard(governor, ladder);
		for (int s = 0; s < 3; s++) {
			second(guard, P0, 5);
		}
		second(guard, P0, 9);
		assertThat(governor.action(P2)).isEqualTo(LoadAction.CHEAPER_FIRST);

		assertThat(text(send(guard, P2, "anything"))).isEqualTo("live");
	}

	@Test
	void cancellingWhileTheCheapStepsRunEndsTheRequestOnceWithoutAskingTheModel() {
		LoadGovernor governor = governor(Duration.ofSeconds(30));
		reactor.core.publisher.Sinks.Many<ChatChunk> slow = reactor.core.publisher.Sinks.many().unicast().onBackpressureBuffer();
		FallbackChain<ChatChunk> ladder = FallbackChain.<ChatChunk>builder()
				.step(Fallback.<ChatChunk>lightweight(r -> slow.asFlux(), false))
				.build();
		AiGuard<ChatChunk> guard = guard(governor, ladder);
		for (int s = 0; s < 3; s++) {
			second(guard, P0, 5);
		}
		second(guard, P0, 9);
		int callsBefore = liveCalls.get();
		reports.clear();

		TestSubscriber<ChatChunk> ts = send(guard, P2, "anything");
		ts.cancel();

		assertThat(reports).singleElement().satisfies(r -> assertThat(r.outcome()).isEqualTo(Outcome.CANCELLED));
		assertThat(liveCalls.get()).isEqualTo(callsBefore);
	}

	/**
	 * Level changes racing admissions: each request ends exactly once, served or shed, and the
	 * lanes come back idle with every permit.
	 */
	@Test
	void levelChangesRacingAdmissionsEndEachRequestOnce() {
		LoadGovernor governor = governor(Duration.ZERO);
		PriorityLanes lanes = PriorityLanes.builder().lane(P0, LaneSpec.of(2)).lane(P1, LaneSpec.of(2))
				.lane(P2, LaneSpec.of(2)).timer(vts).build();
		AiGuard<ChatChunk> guard = AiGuard.of(Policies.onVirtualTime("chat", vts, reports).load(governor).lanes(lanes).build());
		try {
			for (int round = 0; round < 500; round++) {
				// alternate overload and calm, so that most decisions change the level
				int offered = round % 2 == 0 ? 30 : 0;
				for (int i = 0; i < offered; i++) {
					governor.arrived(P0);
				}
				reports.clear();
				TestSubscriber<ChatChunk> p2 = TestSubscriber.<ChatChunk>builder().contextPut(Priority.CONTEXT_KEY, P2).build();
				TestSubscriber<ChatChunk> p0 = TestSubscriber.<ChatChunk>builder().contextPut(Priority.CONTEXT_KEY, P0).build();

				RaceTestUtils.race(() -> guard.call(ask("batch"), this::live).subscribe(p2),
						() -> guard.call(ask("chat"), this::live).subscribe(p0),
						() -> vts.advanceTimeBy(Duration.ofSeconds(1)));

				assertThat(p0.isTerminatedComplete()).as("P0 is always served").isTrue();
				assertThat(p2.isTerminated()).isTrue();
				if (p2.isTerminatedError()) {
					assertThat(p2.expectTerminalError()).isInstanceOfSatisfying(AdmissionRejectedException.class,
							e -> assertThat(e.reason()).isEqualTo(Reason.SHED));
				}
				assertThat(reports).hasSize(2);
				for (Priority p : Priority.values()) {
					assertThat(lanes.inFlight(p)).isZero();
					assertThat(lanes.queued(p)).isZero();
				}
			}
			assertThat(governor.state().intervals()).isGreaterThan(400);
		}
		finally {
			lanes.dispose();
		}
	}
}
