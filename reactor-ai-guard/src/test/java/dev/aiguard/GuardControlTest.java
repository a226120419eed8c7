package dev.aiguard;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.time.Duration;
import java.time.Instant;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import dev.aiguard.admission.LaneSpec;
import dev.aiguard.admission.PriorityLanes;
import dev.aiguard.budget.BudgetSpec;
import dev.aiguard.budget.TenantLimits;
import dev.aiguard.breaker.BreakerConfig;
import dev.aiguard.breaker.BreakerSpec;
import dev.aiguard.breaker.BreakerState;
import dev.aiguard.breaker.CircuitBreaker;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.core.Outcome;
import dev.aiguard.core.Priority;
import dev.aiguard.fallback.Fallback;
import dev.aiguard.fallback.FallbackChain;
import dev.aiguard.fallback.FallbackSpec;
import dev.aiguard.metrics.GuardMetrics;
import dev.aiguard.metrics.MicrometerGuardMetrics;
import dev.aiguard.provider.ProviderErrors;
import dev.aiguard.provider.ProviderException;
import dev.aiguard.retry.MidStreamPolicy;
import dev.aiguard.retry.RetryBudget;
import dev.aiguard.retry.RetryRules;
import dev.aiguard.retry.RetrySpec;
import dev.aiguard.stall.StallSpec;
import dev.aiguard.stall.StreamStalledException;
import dev.aiguard.stall.watch.StallWatch;
import dev.aiguard.testing.Policies;
import dev.aiguard.testing.Reports;
import dev.aiguard.truncation.TruncationSpec;
import dev.aiguard.validation.ValidationSpec;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Hooks;
import reactor.test.scheduler.VirtualTimeScheduler;
import reactor.test.subscriber.TestSubscriber;
import reactor.test.util.RaceTestUtils;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Live reconfiguration ({@link GuardControl}): a change applies to requests subscribed after it and
 * never to a running one, is judged whole (a refused change leaves nothing behind), resizes the
 * shared lanes, keeps the policy's own breaker, and is audited in order to listeners, the history
 * and Micrometer. Races: changes against changes and against requests starting. All time is virtual.
 */
class GuardControlTest {

	static final Duration CONFIRM = Duration.ofNanos(StallWatch.CONFIRM_DELAY_NANOS);

	final VirtualTimeScheduler vts = VirtualTimeScheduler.create();
	final Reports reports = new Reports();
	final SimpleMeterRegistry registry = new SimpleMeterRegistry();

	@AfterEach
	void tearDown() {
		vts.dispose();
		Hooks.resetOnErrorDropped();
	}

	GuardPolicy.Builder chat() {
		return Policies.onVirtualTime("chat", vts, reports, new MicrometerGuardMetrics(registry))
				.stall(StallSpec.defaults().firstTokenTimeout(Duration.ofSeconds(10)));
	}

	static ProviderException unavailable() {
		return ProviderErrors.fromHttp("openai", 503, header -> null, "");
	}

	double changes(String result) {
		var counter = registry.find("aiguard.policy.changes").tags("policy", "chat", "result", result).counter();
		return counter == null ? 0 : counter.count();
	}

	// ---- when a change applies ----

	@Test
	void aChangeAppliesToRequestsSubscribedAfterItAndNeverToARunningStream() {
		GuardControl<ChatChunk> control = AiGuard.live(chat().build());
		AiGuard<ChatChunk> guard = control.guard();
		TestSubscriber<ChatChunk> before = TestSubscriber.create();
		Flux.<ChatChunk>never().transform(guard).subscribe(before);

		control.update("ops", b -> b.stall(StallSpec.defaults().firstTokenTimeout(Duration.ofSeconds(1))));
		assertThat(control.guard()).as("one guard, its policy replaced").isSameAs(guard);
		assertThat(guard.policy().stall().firstTokenTimeout()).isEqualTo(Duration.ofSeconds(1));
		TestSubscriber<ChatChunk> after = TestSubscriber.create();
		Flux.<ChatChunk>never().transform(guard).subscribe(after);

		vts.advanceTimeBy(Duration.ofSeconds(1).plus(CONFIRM));
		assertThat(after.expectTerminalError()).isInstanceOf(StreamStalledException.class);
		assertThat(before.isTerminated()).as("the running stream keeps its 10 s").isFalse();
		vts.advanceTimeBy(Duration.ofSeconds(9));
		assertThat(before.expectTerminalError()).isInstanceOf(StreamStalledException.class);
	}

	@Test
	void aRunningRequestRetriesByTheRulesItStartedWith() {
		GuardControl<ChatChunk> control = AiGuard.live(chat().retry(RetryRules.backoff(3, Duration.ofSeconds(1)).jitter(0))
				.build());
		AtomicInteger calls = new AtomicInteger();
		Flux<ChatChunk> failing = Flux.defer(() -> {
			calls.incrementAndGet();
			return Flux.error(unavailable());
		});
		TestSubscriber<ChatChunk> running = TestSubscriber.create();
		failing.transform(control.guard()).subscribe(running);
		assertThat(calls).as("the first attempt failed, a backoff runs").hasValue(1);

		control.update("ops", b -> b.retry(RetryRules.none()));
		vts.advanceTimeBy(Duration.ofSeconds(10));
		assertThat(running.expectTerminalError()).isInstanceOf(ProviderException.class);
		assertThat(calls).as("three attempts, as when it started").hasValue(3);

		calls.set(0);
		TestSubscriber<ChatChunk> next = TestSubscriber.create();
		failing.transform(control.guard()).subscribe(next);
		vts.advanceTimeBy(Duration.ofSeconds(10));
		assertThat(next.expectTerminalError()).isInstanceOf(ProviderException.class);
		assertThat(calls).hasValue(1);
	}

	@Test
	void perPrioritySettingsChangeLiveToo() {
		GuardControl<ChatChunk> control = AiGuard.live(chat().build());
		control.update("ops", b -> b.forPriority(Priority.P0, p -> p.firstTokenTimeout(Duration.ofSeconds(2))));
		TestSubscriber<ChatChunk> p0 = TestSubscriber.<ChatChunk>builder().contextPut(Priority.CONTEXT_KEY, Priority.P0)
				.build();
		TestSubscriber<ChatChunk> p1 = TestSubscriber.create();
		Flux.<ChatChunk>never().transform(control.guard()).subscribe(p0);
		Flux.<ChatChunk>never().transform(control.guard()).subscribe(p1);
		vts.advanceTimeBy(Duration.ofSeconds(2).plus(CONFIRM));
		assertThat(p0.expectTerminalError()).isInstanceOf(StreamStalledException.class);
		assertThat(p1.isTerminated()).isFalse();
		p1.cancel();
		assertThat(control.history()).singleElement().satisfies(c -> assertThat(c.settings())
				.containsExactly(new PolicyChange.Setting("priority.P0.firstTokenTimeout", PolicyChange.UNSET, "PT2S")));
	}

	@Test
	void adjustingASpecKeepsItsOtherSettings() {
		GuardControl<ChatChunk> control = AiGuard.live(chat()
				.stall(StallSpec.defaults().firstTokenTimeout(Duration.ofSeconds(10)).idleTimeout(Duration.ofSeconds(4)))
				.retry(RetryRules.backoff(3, Duration.ofMillis(250)))
				.build());
		PolicyChange change = control.update("ops", b -> b
				.adjustStall(s -> s.firstTokenTimeout(Duration.ofSeconds(2)))
				.adjustRetry(r -> r.maxAttempts(2)));
		assertThat(control.policy().stall().idleTimeout()).isEqualTo(Duration.ofSeconds(4));
		assertThat(control.policy().retry().minBackoff()).isEqualTo(Duration.ofMillis(250));
		assertThat(change.settings()).extracting(PolicyChange.Setting::toString)
				.containsExactly("stall.firstTokenTimeout: PT10S -> PT2S", "retry.maxAttempts: 3 -> 2");
		assertThatThrownBy(() -> control.update("ops", b -> b.adjustStall(s -> s.idleTimeout(Duration.ZERO))))
				.isInstanceOf(PolicyChangeRefusedException.class)
				.hasMessageEndingWith("idleTimeout must be > 0, was PT0S");
	}

	// ---- whole or nothing ----

	@Test
	void aRefusedChangeChangesNothingAndNamesTheField() {
		GuardPolicy original = chat().build();
		GuardControl<ChatChunk> control = AiGuard.live(original);
		List<PolicyChange> heard = new CopyOnWriteArrayList<>();
		control.addListener(heard::add);

		assertThatThrownBy(() -> control.update("ops:alice", b -> b
				.stall(StallSpec.defaults().firstTokenTimeout(Duration.ofSeconds(1)))
				.forPriority(Priority.P0, p -> p.firstTokenTimeout(Duration.ofSeconds(-1)))))
				.isInstanceOfSatisfying(PolicyChangeRefusedException.class, e -> {
					assertThat(e.policy()).isEqualTo("chat");
					assertThat(e.actor()).isEqualTo("ops:alice");
					assertThat(e.reason()).isEqualTo("priority.P0.firstTokenTimeout must be > 0, was PT-1S");
				})
				.hasMessage("policy 'chat': the change by 'ops:alice' was refused, nothing changed: "
						+ "priority.P0.firstTokenTimeout must be > 0, was PT-1S");
		// the valid half of the change (the stall spec set before the bad override) is not applied either
		assertThatThrownBy(() -> control.update("ops", b -> b
				.stall(StallSpec.defaults().firstTokenTimeout(Duration.ofSeconds(1)))
				.forPriority(Priority.P1, p -> p.laneConcurrency(2))))
				.isInstanceOf(PolicyChangeRefusedException.class)
				.hasMessageContaining("priority.P1.laneConcurrency needs the policy's lanes(..)");
		assertThatThrownBy(() -> control.replace("ops", GuardPolicy.builder("other").build()))
				.isInstanceOf(PolicyChangeRefusedException.class).hasMessageContaining("name must stay 'chat', was 'other'");
		assertThatThrownBy(() -> control.update("ops", b -> b.fallback(
				FallbackChain.<String>builder().step(Fallback.staticAnswer(List.of("busy"))).build())))
				.isInstanceOf(PolicyChangeRefusedException.class).hasMessageContaining("fallback chain");
		assertThatThrownBy(() -> control.update("ops", b -> null))
				.isInstanceOf(PolicyChangeRefusedException.class).hasMessageContaining("change returned no builder");

		assertThat(control.policy()).isSameAs(original);
		assertThat(control.guard().policy()).isSameAs(original);
		assertThat(control.version()).isZero();
		assertThat(control.history()).isEmpty();
		assertThat(heard).isEmpty();
		assertThat(changes("refused")).isEqualTo(5.0);
		assertThat(changes("applied")).isZero();
	}

	@Test
	void anActorIsRequired() {
		GuardControl<ChatChunk> control = AiGuard.live(chat().build());
		assertThatThrownBy(() -> control.update(" ", b -> b)).isInstanceOf(IllegalArgumentException.class)
				.hasMessage("actor must be 1 to 200 characters, not blank, was ' '");
		assertThatThrownBy(() -> control.update(null, b -> b)).hasMessageContaining("actor");
		assertThatThrownBy(() -> control.update("x".repeat(201), b -> b)).hasMessageContaining("actor");
		assertThat(control.version()).isZero();
	}

	// ---- the audit trail ----

	@Test
	void aChangeInForceIsAuditedWithWhatChangedWhoAndWhen() {
		GuardControl<ChatChunk> control = AiGuard.live(chat().retry(RetryRules.backoff(3, Duration.ofMillis(200))).build());
		List<PolicyChange> heard = new CopyOnWriteArrayList<>();
		control.addListener(heard::add);
		vts.advanceTimeBy(Duration.ofSeconds(42));

		PolicyChange change = control.update("ops:alice", b -> b
				.stall(StallSpec.defaults().firstTokenTimeout(Duration.ofSeconds(3)))
				.retry(RetryRules.backoff(2, Duration.ofMillis(200)))
				.forPriority(Priority.P2, p -> p.retry(RetryRules.none())));

		assertThat(change.policy()).isEqualTo("chat");
		assertThat(change.actor()).isEqualTo("ops:alice");
		assertThat(change.at()).isEqualTo(Instant.ofEpochMilli(42_000));
		assertThat(change.version()).isEqualTo(1);
		assertThat(change.settings()).extracting(PolicyChange.Setting::toString).containsExactly(
				"stall.firstTokenTimeout: PT10S -> PT3S",
				"retry.maxAttempts: 3 -> 2",
				"priority.P2.retry.maxAttempts: unset -> 1",
				"priority.P2.retry.minBackoff: unset -> PT0.5S",
				"priority.P2.retry.maxBackoff: unset -> PT8S",
				"priority.P2.retry.maxRetryAfter: unset -> PT1M",
				"priority.P2.retry.jitter: unset -> 1.0",
				"priority.P2.retry.retryOn: unset -> " + RetryRules.none().retryOn());
		assertThat(heard).containsExactly(change);
		assertThat(control.history()).containsExactly(change);
		assertThat(control.version()).isEqualTo(1);
		assertThat(changes("applied")).isEqualTo(1.0);
	}

	@Test
	void aThrowingListenerBreaksNothing() {
		List<Throwable> dropped = new CopyOnWriteArrayList<>();
		Hooks.onErrorDropped(dropped::add);
		GuardControl<ChatChunk> control = AiGuard.live(chat().build());
		IllegalStateException boom = new IllegalStateException("listener down");
		List<PolicyChange> heard = new CopyOnWriteArrayList<>();
		control.addListener(c -> {
			throw boom;
		});
		control.addListener(heard::add);

		PolicyChange change = control.update("ops", b -> b.defaultPriority(Priority.P2));
		assertThat(heard).containsExactly(change);
		assertThat(dropped).containsExactly(boom);
		assertThat(control.policy().defaultPriority()).isEqualTo(Priority.P2);
		TestSubscriber<ChatChunk> answer = TestSubscriber.create();
		Flux.just(ChatChunk.token("a"), ChatChunk.finish("stop"), ChatChunk.done()).transform(control.guard())
				.subscribe(answer);
		assertThat(answer.isTerminatedComplete()).as("the guard serves on").isTrue();
	}

	@Test
	void theHistoryKeepsTheLatestChangesOldestFirst() {
		GuardControl<ChatChunk> control = AiGuard.live(chat().build());
		for (int i = 1; i <= GuardControl.HISTORY_SIZE + 6; i++) {
			int seconds = i;
			control.update("ops", b -> b.stall(StallSpec.defaults().firstTokenTimeout(Duration.ofSeconds(seconds))));
		}
		assertThat(control.history()).hasSize(GuardControl.HISTORY_SIZE);
		assertThat(control.history().get(0).version()).isEqualTo(7);
		assertThat(control.history().get(GuardControl.HISTORY_SIZE - 1).version()).isEqualTo(GuardControl.HISTORY_SIZE + 6);
		assertThatThrownBy(() -> control.history().clear()).isInstanceOf(UnsupportedOperationException.class);
	}

	// ---- shared components ----

	@Test
	void aLaneChangeResizesTheSharedLanesAndAdmittedStreamsKeepTheirPermits() {
		PriorityLanes lanes = PriorityLanes.builder().timer(vts)
				.lane(Priority.P0, LaneSpec.of(1).borrowFromLower(false))
				.lane(Priority.P1, LaneSpec.of(2).borrowFromLower(false))
				.lane(Priority.P2, LaneSpec.of(1))
				.build();
		try {
			GuardControl<ChatChunk> control = AiGuard.live(chat().lanes(lanes).build());
			TestSubscriber<ChatChunk> first = TestSubscriber.create();
			TestSubscriber<ChatChunk> second = TestSubscriber.create();
			Flux.<ChatChunk>never().transform(control.guard()).subscribe(first);
			Flux.<ChatChunk>never().transform(control.guard()).subscribe(second);
			assertThat(lanes.inFlight(Priority.P1)).isEqualTo(2);

			PolicyChange shrink = control.update("ops", b -> b.forPriority(Priority.P1, p -> p.laneConcurrency(1)));
			assertThat(shrink.settings()).containsExactly(
					new PolicyChange.Setting("priority.P1.laneConcurrency", PolicyChange.UNSET, "1"));
			assertThat(lanes.concurrency(Priority.P1)).isEqualTo(1);
			assertThat(lanes.inFlight(Priority.P1)).as("admitted streams keep their permits").isEqualTo(2);
			TestSubscriber<ChatChunk> third = TestSubscriber.create();
			Flux.<ChatChunk>never().transform(control.guard()).subscribe(third);
			assertThat(lanes.queued(Priority.P1)).isEqualTo(1);
			first.cancel();
			assertThat(lanes.queued(Priority.P1)).as("still at the new size: one running").isEqualTo(1);
			second.cancel();
			assertThat(lanes.inFlight(Priority.P1)).isEqualTo(1);
			assertThat(lanes.queued(Priority.P1)).isZero();

			control.update("ops", b -> b.forPriority(Priority.P1, p -> PriorityOverrides.none()));
			assertThat(lanes.concurrency(Priority.P1)).as("back to its built size").isEqualTo(2);
			third.cancel();
			assertThat(lanes.inFlight(Priority.P1)).isZero();
		}
		finally {
			lanes.dispose();
		}
	}

	static BreakerConfig.Builder tripsAfterTwoFailures() {
		return BreakerConfig.custom().countWindow(2).minimumCalls(2).failureRateThreshold(0.5)
				.openWait(Duration.ofMinutes(1)).openWaitJitter(0).minimumDwell(Duration.ZERO);
	}

	@Test
	void thePolicysOwnBreakerKeepsItsStateAndIsReconfiguredInPlace() {
		GuardControl<ChatChunk> control = AiGuard.live(chat().breaker(tripsAfterTwoFailures().build()).build());
		CircuitBreaker breaker = control.policy().breaker();
		for (int i = 0; i < 2; i++) {
			TestSubscriber<ChatChunk> failed = TestSubscriber.create();
			Flux.<ChatChunk>error(unavailable()).transform(control.guard()).subscribe(failed);
			assertThat(failed.expectTerminalError()).isInstanceOf(ProviderException.class);
		}
		assertThat(breaker.state()).isEqualTo(BreakerState.OPEN);

		control.update("ops", b -> b.stall(StallSpec.defaults().firstTokenTimeout(Duration.ofSeconds(3))));
		assertThat(control.policy().breaker()).isSameAs(breaker);
		assertThat(breaker.state()).isEqualTo(BreakerState.OPEN);

		BreakerConfig tolerant = tripsAfterTwoFailures().failureRateThreshold(1.0).openWait(Duration.ofSeconds(5)).build();
		PolicyChange change = control.update("ops", b -> b.breaker(tolerant));
		assertThat(control.policy().breaker()).isSameAs(breaker);
		assertThat(breaker.config()).isEqualTo(tolerant);
		assertThat(breaker.state()).as("the state survives a new config").isEqualTo(BreakerState.OPEN);
		assertThat(change.settings()).extracting(PolicyChange.Setting::name).containsExactly("breaker.config");

		control.replace("ops", chat().breaker(tripsAfterTwoFailures().build()).build());
		assertThat(control.policy().breaker()).as("replace keeps it too").isSameAs(breaker);
		assertThat(breaker.config()).isEqualTo(tripsAfterTwoFailures().build());
	}

	@Test
	void aSharedBreakerIsSwappedAsAReference() {
		CircuitBreaker first = CircuitBreaker.of("first", tripsAfterTwoFailures().build());
		CircuitBreaker second = CircuitBreaker.of("second", tripsAfterTwoFailures().build());
		GuardControl<ChatChunk> control = AiGuard.live(chat().breaker(first).build());
		PolicyChange change = control.update("ops", b -> b.breaker(second));
		assertThat(control.policy().breaker()).isSameAs(second);
		assertThat(change.settings()).containsExactly(new PolicyChange.Setting("breaker", "first", "second"));
	}

	// ---- races ----

	/** Counts the attempts each policy's requests made, through the meters only that policy has. */
	static final class AttemptCount implements GuardMetrics {

		final AtomicInteger attempts = new AtomicInteger();

		@Override
		public void streamEnded(String policy, Priority priority, Outcome outcome, long durationNanos,
				long timeToFirstTokenNanos, long tokens) {
			attempts.incrementAndGet();
		}
	}

	@Test
	void racingChangesAreSerialisedAndEachRequestSeesOneWholePolicy() {
		for (int round = 0; round < 300; round++) {
			AttemptCount[] by = {new AttemptCount(), new AttemptCount(), new AttemptCount(), new AttemptCount()};
			GuardControl<ChatChunk> control = AiGuard.live(GuardPolicy.builder("chat").timer(vts)
					.retry(RetryRules.backoff(1, Duration.ZERO)).metrics(by[1]).build());
			List<Long> heard = new CopyOnWriteArrayList<>();
			control.addListener(c -> heard.add(c.version()));
			TestSubscriber<ChatChunk> request = TestSubscriber.create();
			Flux<ChatChunk> failing = Flux.error(unavailable());

			// a policy is whole when its retry rules and its meters agree: n attempts, all on meters n
			RaceTestUtils.race(
					() -> control.update("a", b -> b.retry(RetryRules.backoff(2, Duration.ZERO)).metrics(by[2])),
					() -> control.update("b", b -> b.retry(RetryRules.backoff(3, Duration.ZERO)).metrics(by[3])),
					() -> failing.transform(control.guard()).subscribe(request));
			vts.advanceTime();

			assertThat(request.expectTerminalError()).isInstanceOf(ProviderException.class);
			int seen = 0;
			for (int n = 1; n <= 3; n++) {
				int made = by[n].attempts.get();
				if (made != 0) {
					seen++;
					assertThat(made).as("round %d: policy %d", round, n).isEqualTo(n);
				}
			}
			assertThat(seen).as("round %d: one policy", round).isEqualTo(1);
			assertThat(control.version()).as("no change lost").isEqualTo(2);
			assertThat(heard).as("audited in order").containsExactly(1L, 2L);
			List<PolicyChange> history = control.history();
			String last = history.get(1).settings().stream().filter(s -> s.name().equals("retry.maxAttempts"))
					.findFirst().orElseThrow().after();
			String firstAfter = history.get(0).settings().stream().filter(s -> s.name().equals("retry.maxAttempts"))
					.findFirst().orElseThrow().after();
			String secondBefore = history.get(1).settings().stream().filter(s -> s.name().equals("retry.maxAttempts"))
					.findFirst().orElseThrow().before();
			assertThat(secondBefore).as("each change builds on the one before").isEqualTo(firstAfter);
			assertThat(String.valueOf(control.policy().retry().maxAttempts())).isEqualTo(last);
		}
	}

	@Test
	void racingLaneChangesLeaveTheLanesAtTheSizeInForce() {
		PriorityLanes lanes = PriorityLanes.builder().lane(Priority.P0, LaneSpec.of(1)).lane(Priority.P1, LaneSpec.of(2))
				.lane(Priority.P2, LaneSpec.of(1)).build();
		try {
			for (int round = 0; round < 200; round++) {
				GuardControl<ChatChunk> control = AiGuard.live(GuardPolicy.builder("chat").lanes(lanes).build());
				RaceTestUtils.race(
						() -> control.update("a", b -> b.forPriority(Priority.P1, p -> p.laneConcurrency(5))),
						() -> control.update("b", b -> b.forPriority(Priority.P1, p -> p.laneConcurrency(7))));
				assertThat(lanes.concurrency(Priority.P1)).as("round %d", round)
						.isEqualTo(control.policy().overrides(Priority.P1).laneConcurrency());
				control.update("reset", b -> b.forPriority(Priority.P1, p -> PriorityOverrides.none()));
				assertThat(lanes.concurrency(Priority.P1)).isEqualTo(2);
			}
		}
		finally {
			lanes.dispose();
		}
	}

	// ---- describe() covers the policy ----

	/**
	 * Every field of a policy is a setting a change can touch, so each must show in
	 * {@link GuardPolicy#describe()} (or be derived from one that does): a new field fails here
	 * until it is described and listed.
	 */
	@Test
	void describeNamesEverySettingOfThePolicy() {
		// "(...)": not a setting of its own; "spec": a capability spec, whose fields are listed below
		Map<String, String> describedAs = Map.ofEntries(
				Map.entry("name", "(the PolicyChange's policy)"), Map.entry("defaultPriority", "defaultPriority"),
				Map.entry("stall", "stall.firstTokenTimeout"), Map.entry("metrics", "metrics"),
				Map.entry("observer", "observer"), Map.entry("reportListeners", "onReport"), Map.entry("timer", "timer"),
				Map.entry("reportScheduler", "reportScheduler"), Map.entry("errorClassifier", "errorClassifier"),
				Map.entry("breaker", "breaker"), Map.entry("breakerSpec", "(spec)"), Map.entry("lanes", "lanes"),
				Map.entry("load", "load"), Map.entry("blockingUpstream", "blockingUpstream"),
				Map.entry("retry", "(spec)"), Map.entry("truncation", "truncation"), Map.entry("fallback", "(spec)"),
				Map.entry("validation", "(spec)"), Map.entry("priorities", "(spec)"),
				Map.entry("lastClock", "(a cache of the timer)"),
				Map.entry("budget", "budget.tenants"), Map.entry("bucketStore", "bucketStore"),
				Map.entry("budgetGate", "(derived from the budget and the store)"));
		Map<Class<?>, Map<String, String>> specsDescribedAs = Map.of(
				RetrySpec.class, Map.of("rules", "retry.maxAttempts", "budget", "retryBudget", "midStream", "midStream"),
				BreakerSpec.class, Map.of("breaker", "breaker", "config", "breaker.config", "path", "breakerPath"),
				FallbackSpec.class, Map.of("chain", "fallback", "responseCache", "responseCache", "cacheKey", "cacheKey"),
				ValidationSpec.class, Map.of("validators", "validate", "streamingValidators", "validateStreaming"),
				PrioritySettings.class, Map.of("overrides", "priority.P0.firstTokenTimeout",
						"resolved", "(derived from the overrides)"));
		assertThat(instanceFields(GuardPolicy.class)).as("describe() each new setting and list it here")
				.isEqualTo(describedAs.keySet());
		specsDescribedAs.forEach((spec, fields) -> assertThat(instanceFields(spec))
				.as("describe() each new setting of %s and list it here", spec.getSimpleName()).isEqualTo(fields.keySet()));

		GuardPolicy full = GuardPolicy.builder("full").timer(vts).reportScheduler(vts)
				.breaker(tripsAfterTwoFailures().build())
				.retry(RetryRules.defaults()).retryBudget(RetryBudget.create())
				.midStream(MidStreamPolicy.notice("[cut]")).truncation(TruncationSpec.defaults())
				.fallback(FallbackChain.<ChatChunk>builder().step(Fallback.staticText("busy")).build())
				.forPriority(Priority.P0, p -> p.firstTokenTimeout(Duration.ofSeconds(1)))
				.budget(BudgetSpec.defaults().tenants(TenantLimits.unlimited().requestsPerMinute(10)))
				.build();
		Map<String, String> described = full.describe();
		Stream.concat(describedAs.values().stream(), specsDescribedAs.values().stream().flatMap(m -> m.values().stream()))
				.filter(key -> !key.startsWith("(")).forEach(key -> assertThat(described).as(key).containsKey(key));
	}

	private static Set<String> instanceFields(Class<?> type) {
		return Arrays.stream(type.getDeclaredFields()).filter(f -> !Modifier.isStatic(f.getModifiers()))
				.map(Field::getName).collect(Collectors.toSet());
	}
}
