package dev.aiguard;

import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ConcurrentSkipListSet;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import dev.aiguard.admission.AdmissionRejectedException;
import dev.aiguard.admission.LaneSpec;
import dev.aiguard.admission.PriorityLanes;
import dev.aiguard.breaker.BreakerConfig;
import dev.aiguard.breaker.BreakerEvent;
import dev.aiguard.breaker.BreakerListener;
import dev.aiguard.breaker.BreakerState;
import dev.aiguard.breaker.CircuitBreaker;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.fallback.Fallback;
import dev.aiguard.fallback.FallbackChain;
import dev.aiguard.core.Source;
import dev.aiguard.metrics.GuardMetrics;
import dev.aiguard.provider.ContextLengthExceededException;
import dev.aiguard.provider.ProviderErrors;
import dev.aiguard.provider.ProviderServerException;
import dev.aiguard.retry.ContinuationStrategy;
import dev.aiguard.retry.MidStreamPolicy;
import dev.aiguard.retry.PartialStreamException;
import dev.aiguard.retry.RetryRules;
import dev.aiguard.stall.StallSpec;
import dev.aiguard.stall.StreamStalledException;
import dev.aiguard.truncation.PromptTooLargeException;
import dev.aiguard.truncation.PromptTruncator;
import dev.aiguard.truncation.TokenCounter;
import dev.aiguard.truncation.TruncationSpec;
import org.assertj.core.api.SoftAssertions;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.reactivestreams.Subscription;
import reactor.blockhound.BlockingOperationError;
import reactor.core.CoreSubscriber;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Hooks;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;
import reactor.util.context.Context;
import dev.aiguard.core.Priority;
import dev.aiguard.core.Outcome;
import dev.aiguard.core.ChunkInspector;
import dev.aiguard.core.CallbackException;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Every user callback the guard calls, failing every way it can, on a synchronous and an
 * asynchronous upstream: the first invariant ("every stream terminates whatever a user callback
 * does") and the second ("permits released exactly once") checked cell by cell.
 *
 * <h2>How a cell runs</h2>
 * Each callback has a scenario that reaches it: the first attempt fails with a retryable 503, the
 * guard backs off one virtual second, and the following attempts take the path where the callback
 * is called (a chunk for the inspector, a context-length error for the truncator and the token
 * counter, exhausted retries for a fallback step, a trip and a half-open probe for the breaker
 * listener...). The request is subscribed on a "caller" thread that may block; a synchronous
 * upstream therefore runs its first attempt there and every later one on the timer thread, where
 * the backoff resumes it; an asynchronous upstream runs every attempt on a bounded-elastic thread.
 * The timer is virtual ({@link VirtualTimer}) but is advanced on a Reactor parallel thread, so
 * BlockHound treats it like the real, non-blocking timer: a callback that blocks there is caught.
 *
 * <p>A blocking callback parks until the test releases it (at most {@link #BLOCK_CAP}). While it
 * is parked the test advances virtual time by up to {@link #BLOCKED_HORIZON}, so a deadline that
 * should not wait for the callback gets every chance to fire; then it releases the callback.
 *
 * <h2>What each cell expects</h2>
 * <ul>
 * <li>Always: one terminal signal within the scenario's virtual time (backoffs, plus the horizon
 * per parked episode), one {@link GuardReport} carrying the subscriber's error, lanes idle,
 * every breaker permission settled and no half-open probe left, no task left on the timer.</li>
 * <li>A callback whose result the guard needs (inspector, truncator, token counter, upstream
 * function, continuation strategy) that throws or returns null: the request fails with a
 * {@link CallbackException} naming it, inside a {@code PartialStreamException} once tokens were
 * delivered. BlockHound stopping it on a non-blocking thread counts as a throw.</li>
 * <li>A fallback step: the ladder moves on and the static step answers.</li>
 * <li>The error classifier: counts as FAILURE; the retry predicate: counts as "not retryable";
 * the notice factory: fails as {@code MidStreamPolicy.fail()} — a throw is reported to
 * {@code Hooks.onErrorDropped} in each case.</li>
 * <li>Observers (metrics, report and breaker listeners, signals): the request is exactly what
 * the control run was, and a throw is reported.</li>
 * <li>A callback parked on a thread that may block: the request only waits, unless a deadline
 * covers the phase it is parked in (inspector and source signal: maxDuration; fallback step: the
 * step timeout), which must then end the request while it is still parked.</li>
 * </ul>
 *
 * <h2>Reproducing one cell</h2>
 * {@code mvn -pl reactor-ai-guard test -Dtest=GuardCallbackMatrixTest -Dmatrix.only=TRUNCATOR/THROWS/SYNC}
 * (a comma-separated list of {@code CALLBACK/FAILURE/UPSTREAM}; a part may end with {@code *};
 * {@code -Dmatrix.repeat=20} runs every selected cell 20 times).
 * Every cell prints one line with what happened, and its failure message lists every broken rule,
 * each tagged: [hang], [terminal], [no report], [leaked permit], [timer], [wrong error],
 * [outcome changed], [not reported], [deadline waited] ([scenario]: the scenario itself is broken).
 */
class GuardCallbackMatrixTest {

	/** The longest a blocking callback stays parked when nobody releases it. */
	static final Duration BLOCK_CAP = Duration.ofMillis(300);
	/** Virtual time the test lets pass while a callback is parked (covers maxDuration + a step timeout). */
	static final Duration BLOCKED_HORIZON = Duration.ofSeconds(70);
	static final Duration BLOCKED_STEP = Duration.ofSeconds(5);
	static final Duration FIRST_TOKEN_TIMEOUT = Duration.ofSeconds(10);
	static final Duration MAX_DURATION = Duration.ofSeconds(60);
	static final Duration STEP_TIMEOUT = Duration.ofSeconds(5);
	/** Real time after which a cell that has not terminated counts as hung. */
	static final Duration REAL_LIMIT = Duration.ofSeconds(4);

	/**
	 * The breaker reports what its listeners, trip policies and meters throw to
	 * {@code Hooks.onErrorDropped}, like everything else. Its {@code System.Logger} is still watched:
	 * a throw that reaches it instead counts as not reported.
	 */
	static final boolean BREAKER_REPORTS_TO_ITS_LOGGER = false;

	// ---- the matrix ----

	/** How the guard must treat a failure of the callback. */
	enum Role {
		/** Its result is needed: a throw or a null ends the request with a CallbackException naming it. */
		FUNCTION,
		/** A fallback step: its failure moves the ladder on to the next step. */
		LADDER,
		/** Maps an error to an outcome: a throw or a null counts as FAILURE. */
		CLASSIFIER,
		/** Says whether an error is worth a retry: a throw counts as "no" and is reported (docs). */
		RETRY_DECIDER,
		/** Builds the notice chunk: a throw (reported) or a null fails the stream as MidStreamPolicy.fail() (docs). */
		NOTICE,
		/** Only watches: a throw is dropped (reported) and the request goes on as if nothing happened. */
		OBSERVER
	}

	enum Callback {
		INSPECTOR(Role.FUNCTION, "ChunkInspector", false),
		INSPECTOR_FINISH_REASON(Role.FUNCTION, "ChunkInspector", false),
		METRICS(Role.OBSERVER, null, false),
		REPORT_LISTENER(Role.OBSERVER, null, false),
		BREAKER_LISTENER(Role.OBSERVER, null, false),
		SIGNALS(Role.OBSERVER, null, false),
		ERROR_CLASSIFIER(Role.CLASSIFIER, null, true),
		FALLBACK_LIGHTWEIGHT(Role.LADDER, null, true),
		FALLBACK_MODEL(Role.LADDER, null, true),
		TRUNCATOR(Role.FUNCTION, "truncator", true),
		TOKEN_COUNTER(Role.FUNCTION, "counter", false),
		/** The counter again, healthy while shrinking, failing when the guard measures the prompt it gives up on. */
		TOKEN_COUNTER_AT_LIMIT(Role.FUNCTION, "counter", false),
		UPSTREAM_FUNCTION(Role.FUNCTION, "upstream", true),
		// not in the brief's list, but user callbacks the guard calls as well
		RETRY_PREDICATE(Role.RETRY_DECIDER, null, false),
		NOTICE_FACTORY(Role.NOTICE, null, true),
		CONTINUATION_STRATEGY(Role.FUNCTION, "continuation", true);

		final Role role;
		/** What {@link CallbackException#callback()} must contain (case-insensitive) for a FUNCTION. */
		final String named;
		/** Whether the callback returns an object (so "returns null" applies). */
		final boolean returnsObject;

		Callback(Role role, String named, boolean returnsObject) {
			this.role = role;
			this.named = named;
			this.returnsObject = returnsObject;
		}
	}

	enum Failure {
		/** The control: the scenario with a healthy callback (also the baseline of the other cells). */
		NONE,
		/** Throws an IllegalStateException with a recognisable message, at every call. */
		THROWS,
		/** Returns null, at every call (only for callbacks that return an object). */
		RETURNS_NULL,
		/** Parks on a latch until the test releases it (at most BLOCK_CAP), once per call site and thread. */
		BLOCKS
	}

	enum Upstream {
		/** Emits on the thread that subscribes it (the caller thread, then the timer thread). */
		SYNC,
		/** Subscribed on a bounded-elastic scheduler: every signal comes from there. */
		ASYNC
	}

	static Stream<Arguments> cells() {
		List<Arguments> cells = new ArrayList<>();
		for (Callback c : Callback.values()) {
			for (Failure f : Failure.values()) {
				if (f == Failure.RETURNS_NULL && !c.returnsObject) {
					continue;
				}
				for (Upstream u : Upstream.values()) {
					for (int i = 0; i < Integer.getInteger("matrix.repeat", 1); i++) {
						cells.add(Arguments.of(c, f, u));
					}
				}
			}
		}
		return cells.stream();
	}

	// ---- the scenarios ----

	/** What one attempt's upstream does. */
	enum Step {
		/** A retryable 503 before any token. */
		SERVER_ERROR,
		/** "a", "b", "c", a finish reason and [DONE]. */
		ANSWER,
		/** A context-length error (not retryable, but the call form can shrink the prompt). */
		CONTEXT_LENGTH,
		/** "a", "b", then a retryable 503: a failure after tokens reached the subscriber. */
		CUT_SHORT,
		/** The rest of a cut answer: "c", a finish reason and [DONE]. */
		REST
	}

	static List<Step> script(Callback c) {
		switch (c) {
			case BREAKER_LISTENER:
			case ERROR_CLASSIFIER:
			case RETRY_PREDICATE:
				return List.of(Step.SERVER_ERROR, Step.SERVER_ERROR, Step.ANSWER);
			case NOTICE_FACTORY:
				return List.of(Step.SERVER_ERROR, Step.CUT_SHORT);
			case CONTINUATION_STRATEGY:
				return List.of(Step.SERVER_ERROR, Step.CUT_SHORT, Step.REST);
			case FALLBACK_LIGHTWEIGHT:
			case FALLBACK_MODEL:
				return List.of(Step.SERVER_ERROR, Step.SERVER_ERROR, Step.SERVER_ERROR);
			case TRUNCATOR:
			case TOKEN_COUNTER:
				return List.of(Step.SERVER_ERROR, Step.CONTEXT_LENGTH, Step.ANSWER);
			case TOKEN_COUNTER_AT_LIMIT:
				// one truncation allowed: the second context-length error ends the request
				return List.of(Step.SERVER_ERROR, Step.CONTEXT_LENGTH, Step.CONTEXT_LENGTH);
			default:
				return List.of(Step.SERVER_ERROR, Step.ANSWER);
		}
	}

	/** The virtual time a healthy run of the scenario takes: a backoff (1 s, then 2 s) before each retry. */
	static Duration nominalTime(Callback c) {
		List<Step> steps = script(c);
		int retriedAfterBackoff = 0;
		for (int i = 0; i < steps.size() - 1; i++) {
			if (steps.get(i) == Step.SERVER_ERROR) {
				retriedAfterBackoff++;
			}
		}
		return Duration.ofSeconds((1L << retriedAfterBackoff) - 1);
	}

	static boolean callForm(Callback c) {
		return c == Callback.FALLBACK_MODEL || c == Callback.TRUNCATOR || c == Callback.TOKEN_COUNTER
				|| c == Callback.TOKEN_COUNTER_AT_LIMIT
				|| c == Callback.UPSTREAM_FUNCTION || c == Callback.CONTINUATION_STRATEGY;
	}

	/** A conversation long enough for a truncator to have something to drop. */
	static ChatRequest longConversation() {
		List<ChatMessage> messages = new ArrayList<>();
		messages.add(ChatMessage.system("You are terse."));
		for (int i = 0; i < 12; i++) {
			messages.add(ChatMessage.user("question " + i + " " + "words ".repeat(150)));
			messages.add(ChatMessage.assistant("answer " + i + " " + "words ".repeat(150)));
		}
		messages.add(ChatMessage.user("and now?"));
		return ChatRequest.of("m", messages);
	}

	static Flux<ChatChunk> answer(String... tokens) {
		return Flux.fromArray(tokens).map(ChatChunk::token)
				.concatWith(Flux.just(ChatChunk.finish("stop"), ChatChunk.done()));
	}

	// ---- fixtures shared by the runs of a cell ----

	Scheduler callerThread;
	Scheduler upstreamThread;
	Scheduler timerThread;
	/** The run the global hooks report to. */
	volatile Run current;
	final Handler breakerLog = new Handler() {
		@Override
		public void publish(LogRecord record) {
			Run r = current;
			if (r != null && record.getThrown() != null) {
				r.breakerLogged.add(record.getThrown());
			}
		}

		@Override
		public void flush() {
		}

		@Override
		public void close() {
		}
	};
	Logger breakerLogger;
	boolean breakerLoggerUsedParents;

	@BeforeEach
	void start() {
		callerThread = Schedulers.newBoundedElastic(2, 64, "matrix-caller");
		upstreamThread = Schedulers.newBoundedElastic(4, 64, "matrix-upstream");
		// parallel threads are NonBlocking: BlockHound watches them as it watches the real timer
		timerThread = Schedulers.newParallel("matrix-timer", 1);
		// every task on a Reactor scheduler (caller, upstream, cancels) counts as work in progress:
		// virtual time only moves once the request can make no progress without it
		Schedulers.onScheduleHook("callback-matrix", task -> {
			Run r = current;
			if (r == null) {
				return task;
			}
			r.busy.incrementAndGet();
			return () -> {
				try {
					task.run();
				}
				finally {
					r.busy.decrementAndGet();
					r.wake();
				}
			};
		});
		Hooks.onErrorDropped(e -> {
			Run r = current;
			if (r != null) {
				r.dropped.add(e);
			}
		});
		breakerLogger = Logger.getLogger(CircuitBreaker.class.getName());
		breakerLoggerUsedParents = breakerLogger.getUseParentHandlers();
		// the console handler would write from the timer thread: keep the capture free of side effects
		breakerLogger.setUseParentHandlers(false);
		breakerLogger.addHandler(breakerLog);
	}

	@AfterEach
	void stop() {
		current = null;
		Hooks.resetOnErrorDropped();
		Schedulers.resetOnScheduleHook("callback-matrix");
		breakerLogger.removeHandler(breakerLog);
		breakerLogger.setUseParentHandlers(breakerLoggerUsedParents);
		callerThread.dispose();
		upstreamThread.dispose();
		timerThread.dispose();
	}

	// ---- the test ----

	@ParameterizedTest(name = "{0} x {1} x {2}")
	@MethodSource("cells")
	void callbackFailureNeverBreaksTheStream(Callback callback, Failure failure, Upstream upstream) {
		Assumptions.assumeTrue(selected(callback, failure, upstream), "not selected by -Dmatrix.only");
		Run control = null;
		if (failure != Failure.NONE) {
			control = new Run(callback, Failure.NONE, upstream).execute();
		}
		Run run = new Run(callback, failure, upstream).execute();

		SoftAssertions soft = new SoftAssertions();
		checkInvariants(soft, run);
		if (failure == Failure.NONE) {
			checkControl(soft, run);
		}
		else {
			checkFailureHandling(soft, run, control);
		}
		List<String> broken = soft.errorsCollected().stream()
				.map(e -> String.valueOf(e.getMessage()).lines().filter(l -> l.contains("[")).findFirst().orElse("?").trim())
				.toList();
		// what happened is printed for a failing cell, or for every cell with -Dmatrix.verbose=true
		if (!broken.isEmpty() || Boolean.getBoolean("matrix.verbose")) {
			System.out.println("[matrix] " + callback + " x " + failure + " x " + upstream + ": " + run.describe());
			System.out.println("[matrix-result] " + callback + " x " + failure + " x " + upstream + ": "
					+ (broken.isEmpty() ? "PASS" : "FAIL " + broken));
		}
		soft.assertAll();
	}

	static boolean selected(Callback c, Failure f, Upstream u) {
		String only = System.getProperty("matrix.only", "").trim();
		if (only.isEmpty()) {
			return true;
		}
		for (String pattern : only.split(",")) {
			String[] p = pattern.trim().split("/");
			if (p.length == 3 && matches(p[0], c.name()) && matches(p[1], f.name()) && matches(p[2], u.name())) {
				return true;
			}
		}
		return false;
	}

	private static boolean matches(String pattern, String name) {
		String p = pattern.toUpperCase(Locale.ROOT);
		return p.endsWith("*") ? name.startsWith(p.substring(0, p.length() - 1)) : p.equals(name);
	}

	// ---- what every cell must show ----

	void checkInvariants(SoftAssertions soft, Run run) {
		soft.assertThat(run.subscriber.terminals.get())
				.as("[hang] the stream terminated within %s real time (%s)", REAL_LIMIT, run.hang)
				.isPositive();
		Duration bound = nominalTime(run.callback).plus(BLOCKED_HORIZON.multipliedBy(run.blockEpisodes))
				.plusSeconds(1);
		soft.assertThat(run.virtualAtTerminal)
				.as("[hang] virtual time needed to end: the scenario's backoffs %s + %s per blocked episode (%d)",
						nominalTime(run.callback), BLOCKED_HORIZON, run.blockEpisodes)
				.isLessThanOrEqualTo(bound);
		soft.assertThat(run.subscriber.terminals.get()).as("[terminal] at most one terminal signal")
				.isLessThanOrEqualTo(1);
		soft.assertThat(run.subscriber.lateSignals).as("[terminal] no signal after the terminal one").isEmpty();
		soft.assertThat(run.reports).as("[no report] exactly one GuardReport, even after every deadline").hasSize(1);
		if (run.reports.size() == 1) {
			GuardReport r = run.reports.get(0);
			soft.assertThat(r.error()).as("[no report] the report carries the error the subscriber got")
					.isSameAs(run.subscriber.error);
		}
		for (Priority p : Priority.values()) {
			soft.assertThat(run.inFlightAfter[p.ordinal()]).as("[leaked permit] lane %s idle afterwards", p).isZero();
		}
		soft.assertThat(run.breakerStateAfter).as("[leaked permit] no half-open probe left open")
				.isNotEqualTo(BreakerState.HALF_OPEN);
		if (run.callback != Callback.BREAKER_LISTENER && run.reports.size() == 1) {
			long counted = run.reports.get(0).attempts().stream().filter(a -> countsForBreaker(a.outcome())).count();
			soft.assertThat(run.breakerCallsAfter)
					.as("[leaked permit] every attempt settled its breaker permission once (%s)",
							run.reports.get(0).attempts())
					.isEqualTo(counted);
		}
		soft.assertThat(run.nullRequests).as("[wrong error] the upstream function was never called with a null request")
				.hasValue(0);
		soft.assertThat(run.pendingAfter).as("[timer] no task left on the timer after the end").isZero();
		soft.assertThat(run.timer.failedTasks).as("[timer] no timer task threw").isEmpty();
		soft.assertThat(run.fault.undetectedOnNonBlocking)
				.as("[timer] a callback parked on a non-blocking thread without BlockHound noticing").isEmpty();
	}

	static boolean countsForBreaker(Outcome o) {
		return o == Outcome.SUCCESS || o == Outcome.FAILURE || o == Outcome.STALLED || o == Outcome.INCOMPLETE;
	}

	/** A healthy callback: the scenario itself works. */
	void checkControl(SoftAssertions soft, Run run) {
		Summary s = run.summary();
		if (run.callback == Callback.TOKEN_COUNTER_AT_LIMIT) {
			soft.assertThat(run.subscriber.error).as("[scenario] the truncation allowance is used up")
					.isInstanceOf(PromptTooLargeException.class);
			soft.assertThat(s.attempts).as("[scenario] attempts").containsExactly(Outcome.FAILURE, Outcome.CLIENT_ERROR, Outcome.CLIENT_ERROR);
			soft.assertThat(run.fault.invocations).as("[scenario] the scenario reaches the callback").isNotEmpty();
			return;
		}
		soft.assertThat(run.subscriber.error).as("[scenario] the control run completes").isNull();
		switch (run.callback) {
			case FALLBACK_LIGHTWEIGHT:
				soft.assertThat(s.text).as("[scenario] text").isEqualTo("fb");
				soft.assertThat(s.source).as("[scenario] source").isEqualTo(Source.LIGHTWEIGHT);
				break;
			case FALLBACK_MODEL:
				soft.assertThat(s.text).as("[scenario] text").isEqualTo("fb");
				soft.assertThat(s.source).as("[scenario] source").isEqualTo(Source.FALLBACK_MODEL);
				break;
			case NOTICE_FACTORY:
				soft.assertThat(s.text).as("[scenario] text").isEqualTo("ab[cut short]");
				soft.assertThat(s.source).as("[scenario] source").isEqualTo(Source.REALTIME);
				break;
			default:
				soft.assertThat(s.text).as("[scenario] text").isEqualTo("abc");
				soft.assertThat(s.source).as("[scenario] source").isEqualTo(Source.REALTIME);
		}
		soft.assertThat(s.attempts).as("[scenario] one attempt per scripted step").hasSize(script(run.callback).size());
		soft.assertThat(run.fault.invocations).as("[scenario] the scenario reaches the callback").isNotEmpty();
		if (run.callback == Callback.BREAKER_LISTENER) {
			soft.assertThat(run.transitions).as("[scenario] trip, half-open probe, close")
					.containsExactly("CLOSED->OPEN", "OPEN->HALF_OPEN", "HALF_OPEN->CLOSED");
			soft.assertThat(run.breakerStateAfter).as("[scenario] the probe closed the breaker").isEqualTo(BreakerState.CLOSED);
		}
	}

	void checkFailureHandling(SoftAssertions soft, Run run, Run control) {
		Callback c = run.callback;
		Throwable error = run.subscriber.error;
		soft.assertThat(run.fault.invocations).as("[scenario] the failing callback was reached").isNotEmpty();
		boolean blocks = run.failure == Failure.BLOCKS;
		// a callback that blocks on a non-blocking thread is stopped by BlockHound: it then "throws"
		boolean threw = !blocks || !run.fault.detections.isEmpty();
		if (mustBeOvertaken(run) && error != null) {
			soft.assertThat(run.subscriber.blockedAtTerminal)
					.as("[deadline waited] a deadline ended the stream while the callback was still parked")
					.isTrue();
		}
		if (mustBeOvertaken(run)) {
			if (c.role != Role.LADDER && error != null) {
				soft.assertThat(causes(error)).as("[wrong error] ended by maxDuration, got %s", run.summary().terminal)
						.anyMatch(t -> t instanceof StreamStalledException);
			}
			else if (c.role != Role.LADDER) {
				// nothing had reached the subscriber yet: the stalled attempt was retried, and the
				// request may well have succeeded; the deadline still ended that attempt on time
				soft.assertThat(run.reports).as("[deadline waited] the attempt ended STALLED by its deadline")
						.anySatisfy(r -> assertThat(r.attempts()).extracting(GuardReport.Attempt::outcome)
								.contains(Outcome.STALLED));
			}
		}
		switch (c.role) {
			case FUNCTION:
				if (c == Callback.UPSTREAM_FUNCTION && blocks) {
					// declared blocking, it runs on the lane's threads (BlockHound stays quiet); its slowness is
					// the upstream's, so the first-token deadline may end the attempt: answered or STALLED, in time.
					// A retry then waits for the lane thread the first call still blocks; how far virtual time has
					// run when that thread frees up depends on the machine's load, so the retry may also be refused
					// for want of a thread (WAIT_TIMEOUT, never a stall the model caused)
					soft.assertThat(run.fault.detections).as("[deadline waited] no blocking call on a non-blocking thread")
							.isEmpty();
					soft.assertThat(error == null || causes(error).stream().anyMatch(t -> t instanceof StreamStalledException
							|| t instanceof AdmissionRejectedException rejected
									&& rejected.reason() == AdmissionRejectedException.Reason.WAIT_TIMEOUT))
							.as("[wrong error] answered, stalled by the first-token deadline, or refused waiting for a "
									+ "lane thread: %s", run.summary().terminal)
							.isTrue();
				}
				else if (c == Callback.UPSTREAM_FUNCTION && run.failure == Failure.THROWS) {
					// a client may throw what it would otherwise signal: it is the upstream's own failure,
					// classified and retried like one (here not retryable, so it reaches the subscriber)
					soft.assertThat(error).as("[wrong error] the upstream's own error, got %s", run.summary().terminal)
							.isSameAs(run.fault.boom);
				}
				else if (threw) {
					expectCallbackException(soft, run, error);
				}
				else if (!mustBeOvertaken(run)) {
					expectSameAs(soft, run, control, "[outcome changed] a slow callback only delays the answer");
				}
				break;
			case LADDER:
				if (threw || mustBeOvertaken(run)) {
					soft.assertThat(error).as("[wrong error] the ladder moved on to the static step").isNull();
					soft.assertThat(run.summary().text).as("[wrong error] answered by the static step")
							.isEqualTo("static answer");
					soft.assertThat(run.summary().source).as("[wrong error] source").isEqualTo(Source.STATIC);
				}
				else {
					expectSameAs(soft, run, control, "[outcome changed] a slow step only delays the answer");
				}
				break;
			case CLASSIFIER:
				expectSameAs(soft, run, control, "[outcome changed] a failing classifier counts as FAILURE");
				if (run.failure == Failure.THROWS || (blocks && threw)) {
					expectReported(soft, run);
				}
				break;
			case RETRY_DECIDER:
				if (threw) {
					soft.assertThat(error).as("[wrong error] not retried: the upstream's own error, got %s", describe(error))
							.isInstanceOf(ProviderServerException.class);
					expectReported(soft, run);
				}
				else {
					expectSameAs(soft, run, control, "[outcome changed] a slow predicate only delays the answer");
				}
				break;
			case NOTICE:
				if (threw || run.failure == Failure.RETURNS_NULL) {
					soft.assertThat(error).as("[wrong error] failed as MidStreamPolicy.fail(), got %s", describe(error))
							.isInstanceOf(PartialStreamException.class);
					soft.assertThat(error).as("[wrong error] the upstream's error is the cause")
							.hasCauseInstanceOf(ProviderServerException.class);
					if (run.failure != Failure.RETURNS_NULL) {
						expectReported(soft, run);
					}
				}
				else {
					expectSameAs(soft, run, control, "[outcome changed] a slow notice factory only delays the notice");
				}
				break;
			case OBSERVER:
				if (!mustBeOvertaken(run)) {
					expectSameAs(soft, run, control, "[outcome changed] an observer never changes the request");
				}
				if (threw) {
					expectReported(soft, run);
				}
				if (c == Callback.REPORT_LISTENER) {
					soft.assertThat(run.reports).as("[no report] the listener after the failing one still ran")
							.hasSize(1);
				}
				break;
			default:
				throw new IllegalStateException(c.role.name());
		}
		// nothing the callback threw may reach the subscriber undressed
		if (error != null && c.role != Role.FUNCTION) {
			soft.assertThat(causes(error)).as("[wrong error] the callback's failure does not reach the subscriber")
					.noneMatch(t -> t == run.fault.boom || t instanceof BlockingOperationError);
		}
	}

	/**
	 * A callback parked inside an attempt that has a deadline, on a thread that may block: the
	 * deadline must end the request without waiting for it (ARCHITECTURE invariant 1).
	 */
	static boolean mustBeOvertaken(Run run) {
		if (run.failure != Failure.BLOCKS || run.upstream != Upstream.ASYNC) {
			return false;
		}
		switch (run.callback) {
			case INSPECTOR: // inside attempt 2: maxDuration
			case INSPECTOR_FINISH_REASON:
			case SIGNALS: // source() is announced at the first chunk of attempt 2: maxDuration
			case FALLBACK_LIGHTWEIGHT: // the ladder's step timeout
			case FALLBACK_MODEL:
				return true;
			default:
				return false;
		}
	}

	void expectCallbackException(SoftAssertions soft, Run run, Throwable error) {
		Throwable failure = error instanceof PartialStreamException ? error.getCause() : error;
		soft.assertThat(failure).as("[wrong error] a CallbackException (maybe inside PartialStreamException), got %s",
				run.summary().terminal).isInstanceOf(CallbackException.class);
		if (failure instanceof CallbackException) {
			soft.assertThat(((CallbackException) failure).callback().toLowerCase(Locale.ROOT))
					.as("[wrong error] callback() names the callback").contains(run.callback.named.toLowerCase(Locale.ROOT));
			if (run.failure == Failure.THROWS) {
				soft.assertThat(failure.getCause()).as("[wrong error] the cause is what the callback threw")
						.isSameAs(run.fault.boom);
			}
			else if (run.failure == Failure.RETURNS_NULL) {
				soft.assertThat(failure.getMessage()).as("[wrong error] the message says it returned null")
						.contains("null");
			}
			else {
				soft.assertThat(failure.getCause()).as("[wrong error] the cause is BlockHound's detection")
						.isInstanceOf(BlockingOperationError.class);
			}
		}
	}

	void expectSameAs(SoftAssertions soft, Run run, Run control, String what) {
		soft.assertThat(run.summary()).as("%s: %s", what, run.describe()).isEqualTo(control.summary());
	}

	/** The failure went where isolated failures go, and did not vanish. */
	void expectReported(SoftAssertions soft, Run run) {
		List<Throwable> seen = new ArrayList<>(run.dropped);
		if (BREAKER_REPORTS_TO_ITS_LOGGER) {
			seen.addAll(run.breakerLogged);
		}
		Class<? extends Throwable> expected = run.failure == Failure.BLOCKS ? BlockingOperationError.class
				: run.fault.boom.getClass();
		soft.assertThat(seen.stream().flatMap(t -> causes(t).stream()))
				.as("[not reported] the failure reached Hooks.onErrorDropped%s (dropped %s, breaker log %s)",
						BREAKER_REPORTS_TO_ITS_LOGGER ? " or the breaker's logger" : "", run.dropped,
						run.breakerLogged)
				.anyMatch(t -> run.failure == Failure.BLOCKS ? expected.isInstance(t) : t == run.fault.boom);
	}

	static List<Throwable> causes(Throwable t) {
		List<Throwable> chain = new ArrayList<>();
		for (Throwable x = t; x != null && chain.size() < 10 && !chain.contains(x); x = x.getCause()) {
			chain.add(x);
		}
		return chain;
	}

	static String describe(Throwable t) {
		if (t == null) {
			return "complete";
		}
		return causes(t).stream().map(x -> x.getClass().getSimpleName() + "(" + x.getMessage() + ")")
				.collect(Collectors.joining(" <- "));
	}

	/** What a run looked like from outside, for comparing a failing run with its control. */
	record Summary(String text, String terminal, Outcome outcome, Source source, List<Outcome> attempts) {
	}

	// ---- one guarded request ----

	final class Run {

		final Callback callback;
		final Failure failure;
		final Upstream upstream;
		final VirtualTimer timer = new VirtualTimer();
		final Fault fault;
		final Recorder subscriber = new Recorder(this);
		final List<GuardReport> reports = new CopyOnWriteArrayList<>();
		final Queue<Throwable> dropped = new ConcurrentLinkedQueue<>();
		final Queue<Throwable> breakerLogged = new ConcurrentLinkedQueue<>();
		final List<String> transitions = new CopyOnWriteArrayList<>();
		final AtomicInteger attemptsMade = new AtomicInteger();
		/** Calls of the upstream function (call form) with a null request. */
		final AtomicInteger nullRequests = new AtomicInteger();
		/** Upstream publishers subscribed and not yet finished or cancelled. */
		final AtomicInteger active = new AtomicInteger();
		/** Tasks scheduled on Reactor schedulers and not yet run to their end. */
		final AtomicInteger busy = new AtomicInteger();
		final List<Step> steps;
		volatile Thread driver;

		PriorityLanes lanes;
		CircuitBreaker breaker;
		int blockEpisodes;
		String hang = "";
		Duration virtualAtTerminal = Duration.ZERO;
		long realMillis;
		int pendingAfter;
		final int[] inFlightAfter = new int[Priority.values().length];
		BreakerState breakerStateAfter;
		long breakerCallsAfter;

		Run(Callback callback, Failure failure, Upstream upstream) {
			this.callback = callback;
			this.failure = failure;
			this.upstream = upstream;
			this.steps = script(callback);
			this.fault = new Fault(callback, failure, this);
		}

		Run execute() {
			current = this;
			driver = Thread.currentThread();
			try {
				Flux<ChatChunk> guarded = build();
				fault.armed = true;
				guarded.subscribeOn(callerThread).subscribe(subscriber);
				drive();
				settle();
			}
			finally {
				if (lanes != null) {
					lanes.dispose();
				}
				current = null;
			}
			return this;
		}

		Flux<ChatChunk> build() {
			GuardMetrics metrics = callback == Callback.METRICS ? fault.metrics() : GuardMetrics.noop();
			lanes = PriorityLanes.builder().name("matrix").lane(Priority.P0, LaneSpec.of(2))
					.lane(Priority.P1, LaneSpec.of(2)).lane(Priority.P2, LaneSpec.of(2)).timer(timer).metrics(metrics)
					.build();
			BreakerConfig config = callback == Callback.BREAKER_LISTENER
					// trips on the second failure, lets one probe through a second later, closes on its success
					? BreakerConfig.custom().countWindow(2).minimumCalls(2).failureRateThreshold(0.5)
							.openWait(Duration.ofSeconds(1)).openWaitJitter(0).halfOpenProbes(1).successesToClose(1)
							.minimumDwell(Duration.ZERO).build()
					// never trips: its counts show whether every attempt settled its permission
					: BreakerConfig.custom().countWindow(100).minimumCalls(100).build();
			CircuitBreaker.Builder breakerBuilder = CircuitBreaker.builder("matrix").config(config)
					.clock(() -> timer.now(TimeUnit.NANOSECONDS)).metrics(metrics);
			if (callback == Callback.BREAKER_LISTENER) {
				breakerBuilder.listener(fault.breakerListener());
			}
			breakerBuilder.listener(event -> {
				if (event instanceof BreakerEvent.StateTransition t) {
					transitions.add(t.from() + "->" + t.to());
				}
			});
			breaker = breakerBuilder.build();

			GuardPolicy.Builder policy = GuardPolicy.builder("matrix").timer(timer).lanes(lanes).breaker(breaker)
					.metrics(metrics)
					.stall(StallSpec.defaults().firstTokenTimeout(FIRST_TOKEN_TIMEOUT).maxDuration(MAX_DURATION))
					// a fourth attempt for the counter at the limit: maxAttempts would stop the request before it
					.retry(RetryRules.backoff(callback == Callback.TOKEN_COUNTER_AT_LIMIT ? 4 : 3, Duration.ofSeconds(1))
							.jitter(0));
			if (callback == Callback.UPSTREAM_FUNCTION && failure == Failure.BLOCKS) {
				// the documented way to run an upstream that blocks: its calls go to the lane's threads
				policy.blockingUpstream(true);
			}
			if (callback == Callback.REPORT_LISTENER) {
				// the failing listener first: the one after it must still get the report
				policy.onReport(report -> fault.run("onReport"));
			}
			policy.onReport(report -> {
				reports.add(report);
				wake();
			});
			if (callback == Callback.ERROR_CLASSIFIER) {
				policy.errorClassifier(e -> fault.call("errorClassifier", () -> ErrorClassifier.outcomeOf(e)));
			}
			if (callback == Callback.FALLBACK_LIGHTWEIGHT || callback == Callback.FALLBACK_MODEL) {
				Fallback<ChatChunk> step = callback == Callback.FALLBACK_LIGHTWEIGHT
						? Fallback.lightweight(request -> fault.call("Fallback.lightweight", () -> tracked(answer("fb"))),
								false)
						: Fallback.model(request -> fault.call("Fallback.model", () -> tracked(answer("fb"))));
				policy.fallback(FallbackChain.<ChatChunk>builder().step(step)
						.step(Fallback.staticText("static answer")).timeout(STEP_TIMEOUT).timer(timer).build());
			}
			if (callback == Callback.TRUNCATOR || callback == Callback.TOKEN_COUNTER
					|| callback == Callback.TOKEN_COUNTER_AT_LIMIT) {
				TruncationSpec truncation = TruncationSpec.defaults()
						.maxTruncations(callback == Callback.TOKEN_COUNTER_AT_LIMIT ? 1 : 2);
				if (callback == Callback.TRUNCATOR) {
					PromptTruncator fit = PromptTruncator.tokenBudget();
					truncation = truncation.truncator((request, budget, counter) -> fault.call("truncator",
							() -> fit.truncate(request, budget, counter)));
				}
				else {
					TokenCounter estimate = TokenCounter.estimate();
					truncation = truncation.counter(text -> fault.call("counter", () -> estimate.count(text)));
				}
				policy.truncation(truncation);
			}
			if (callback == Callback.RETRY_PREDICATE) {
				policy.retry(RetryRules.backoff(3, Duration.ofSeconds(1)).jitter(0)
						.retryOn(e -> fault.call("RetryRules.retryOn", () -> RetryRules.DEFAULT_RETRYABLE.test(e))));
			}
			if (callback == Callback.NOTICE_FACTORY) {
				policy.midStream(MidStreamPolicy.notice(cause -> fault.call("MidStreamPolicy.notice",
						() -> ChatChunk.token("[cut short]"))));
			}
			if (callback == Callback.CONTINUATION_STRATEGY) {
				ContinuationStrategy goOn = ContinuationStrategy.userContinue("go on");
				policy.midStream(MidStreamPolicy.continueWith((original, partial) -> fault.call("ContinuationStrategy",
						() -> goOn.continuation(original, partial)), 1));
			}
			AiGuard<ChatChunk> guard = callback == Callback.INSPECTOR || callback == Callback.INSPECTOR_FINISH_REASON
					? AiGuard.of(policy.build(), fault.inspector(callback == Callback.INSPECTOR))
					: AiGuard.of(policy.build());

			Flux<ChatChunk> guarded;
			if (callForm(callback)) {
				ChatRequest request = callback == Callback.TRUNCATOR || callback == Callback.TOKEN_COUNTER
						|| callback == Callback.TOKEN_COUNTER_AT_LIMIT
						? longConversation() : ChatRequest.of("m", List.of(ChatMessage.user("hi")));
				guarded = guard.call(request, r -> {
					if (r == null) {
						nullRequests.incrementAndGet();
					}
					return callback == Callback.UPSTREAM_FUNCTION ? fault.call("upstream", this::nextAttempt)
							: nextAttempt();
				});
			}
			else {
				guarded = Flux.defer(this::nextAttempt).transform(guard);
			}
			if (callback == Callback.SIGNALS) {
				GuardSignals signals = GuardSignals.create();
				signals.source().subscribe(fault.signalSubscriber("GuardSignals.source"));
				signals.report().subscribe(fault.signalSubscriber("GuardSignals.report"));
				guarded = guarded.contextWrite(signals::into);
			}
			return guarded;
		}

		/** The publisher of the next attempt, as the script says. */
		Flux<ChatChunk> nextAttempt() {
			int n = attemptsMade.getAndIncrement();
			Step step = steps.get(Math.min(n, steps.size() - 1));
			Flux<ChatChunk> flux;
			switch (step) {
				case SERVER_ERROR:
					flux = Flux.error(new ProviderServerException("matrix", 503, "server_error", null,
							"HTTP 503: attempt " + (n + 1), null));
					break;
				case CONTEXT_LENGTH:
					flux = Flux.error(new ContextLengthExceededException("matrix", 400, "invalid_request_error",
							"context_length_exceeded", "too long", 2048, -1));
					break;
				case REST:
					flux = answer("c");
					break;
				case CUT_SHORT:
					flux = Flux.just(ChatChunk.token("a"), ChatChunk.token("b"))
							.concatWith(Flux.error(new ProviderServerException("matrix", 503, "server_error", null,
									"HTTP 503 mid-stream: attempt " + (n + 1), null)));
					break;
				default:
					flux = answer("a", "b", "c");
			}
			return tracked(flux);
		}

		/** Counts the publisher as active from its subscription until it ends or is cancelled. */
		Flux<ChatChunk> tracked(Flux<ChatChunk> flux) {
			// hide(): subscribeOn over a Callable source (Flux.error is one) disposes its task from the
			// subscribing thread once the source has signalled, which interrupts the upstream thread while
			// the guard may still be running user callbacks on it (a Reactor race, not the guard's)
			Flux<ChatChunk> placed = upstream == Upstream.ASYNC ? flux.hide().subscribeOn(upstreamThread) : flux;
			return Flux.defer(() -> {
				active.incrementAndGet();
				return placed.doFinally(signal -> {
					active.decrementAndGet();
					wake();
				});
			});
		}

		/** No upstream running and no task on any Reactor scheduler: only time can move the request on. */
		boolean idle() {
			return active.get() == 0 && busy.get() == 0;
		}

		void wake() {
			Thread t = driver;
			if (t != null) {
				LockSupport.unpark(t);
			}
		}

		/** Waits, woken by every event of the run, until the condition holds or the time is up. */
		boolean await(BooleanSupplier condition, Duration max) {
			long end = System.nanoTime() + max.toNanos();
			while (!condition.getAsBoolean()) {
				long left = end - System.nanoTime();
				if (left <= 0L) {
					return false;
				}
				// a wake-up may come before we park: never park for long without looking again
				LockSupport.parkNanos(this, Math.min(left, TimeUnit.MILLISECONDS.toNanos(10)));
			}
			return true;
		}

		void advance(Duration d) {
			Mono.fromRunnable(() -> timer.advance(d)).subscribeOn(timerThread).block(Duration.ofSeconds(10));
		}

		/** Moves virtual time on only when the request waits for it, until it terminates. */
		void drive() {
			long start = System.nanoTime();
			long limit = start + REAL_LIMIT.toNanos();
			while (!subscriber.terminated() && System.nanoTime() < limit) {
				// generous: a first run loads classes slowly, and moving time early would fire deadlines early
				await(() -> subscriber.terminated() || fault.parked() > 0 || idle(), Duration.ofMillis(1500));
				if (subscriber.terminated()) {
					break;
				}
				if (fault.parked() > 0) {
					// a callback is parked: let deadlines that should not wait for it fire, then release it
					blockEpisodes++;
					for (Duration spent = Duration.ZERO; spent.compareTo(BLOCKED_HORIZON) < 0 && fault.parked() > 0
							&& !subscriber.terminated(); spent = spent.plus(BLOCKED_STEP)) {
						advance(BLOCKED_STEP);
					}
					// wait for the released callbacks to return, so the next round does not count them again
					Set<CountDownLatch> released = fault.releaseAll();
					await(() -> released.stream().noneMatch(fault.gates::contains), Duration.ofMillis(500));
					continue;
				}
				if (idle() && timer.pending() == 0) {
					// nothing for time to do: the end is on its way, or nothing will ever end the request
					if (!await(() -> subscriber.terminated() || fault.parked() > 0 || !idle() || timer.pending() > 0,
							Duration.ofMillis(500))) {
						hang = "no terminal, no upstream running, no timer task, no callback parked";
						break;
					}
					continue;
				}
				advance(Duration.ofSeconds(1));
			}
			if (!subscriber.terminated() && hang.isEmpty()) {
				hang = "still running after " + REAL_LIMIT;
			}
			if (!hang.isEmpty()) {
				hang += " at virtual " + Duration.ofNanos(timer.nanos());
			}
			realMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
		}

		/** After the end: the report, then everything that must be released, then every deadline. */
		void settle() {
			fault.releaseAll();
			if (subscriber.terminated()) {
				// a report listener may be parked after the terminal signal
				long end = System.nanoTime() + Duration.ofSeconds(2).toNanos();
				while (reports.isEmpty() && System.nanoTime() < end) {
					fault.releaseAll();
					await(() -> !reports.isEmpty(), Duration.ofMillis(50));
				}
				// a cancel after a deadline runs on boundedElastic: give the upstream a moment to see it
				await(() -> active.get() == 0, Duration.ofMillis(500));
			}
			fault.releaseAll();
			pendingAfter = timer.pending();
			for (Priority p : Priority.values()) {
				inFlightAfter[p.ordinal()] = lanes.inFlight(p) + lanes.borrowedInFlight(p) + lanes.queued(p);
			}
			breakerStateAfter = breaker.state();
			breakerCallsAfter = breaker.snapshot().calls();
			// nothing may happen any more, whatever time brings
			advance(Duration.ofMinutes(5));
			fault.releaseAll();
			await(() -> reports.size() > 1 || subscriber.terminals.get() > 1, Duration.ofMillis(20));
		}

		Summary summary() {
			StringBuilder text = new StringBuilder();
			subscriber.chunks.forEach(c -> text.append(c.text()));
			GuardReport r = reports.isEmpty() ? null : reports.get(0);
			return new Summary(text.toString(),
					subscriber.terminated() ? GuardCallbackMatrixTest.describe(subscriber.error) : "no terminal signal", r == null ? null : r.outcome(),
					r == null ? null : r.source(),
					r == null ? List.of() : r.attempts().stream().map(GuardReport.Attempt::outcome).toList());
		}

		String describe() {
			Summary s = summary();
			return "text='" + s.text + "' " + s.terminal + " outcome=" + s.outcome + " source=" + s.source
					+ " attempts=" + s.attempts + " reports=" + reports.size() + " terminals="
					+ subscriber.terminals.get() + " on " + subscriber.terminalThread + " blockedAtTerminal="
					+ subscriber.blockedAtTerminal
					+ " invocations=" + fault.invocations + " parkedOn=" + fault.parkedOn + " blockHound="
					+ fault.detections + " dropped=" + dropped.stream().map(t -> t.getClass().getSimpleName()).toList()
					+ " breakerLog=" + breakerLogged.stream().map(t -> t.getClass().getSimpleName()).toList()
					+ " virtual=" + virtualAtTerminal + " real=" + realMillis + "ms episodes=" + blockEpisodes
					+ " pendingAfter=" + pendingAfter + " breaker=" + breakerStateAfter + "/" + breakerCallsAfter
					+ " transitions=" + transitions + (nullRequests.get() == 0 ? "" : " upstreamCalledWithNull=" + nullRequests)
					+ (hang.isEmpty() ? "" : " HANG: " + hang);
		}
	}

	// ---- the failing callback ----

	/** Makes one callback fail as the cell says, and records where it was called from. */
	static final class Fault {

		final Callback callback;
		final Failure failure;
		final Run run;
		final RuntimeException boom;
		volatile boolean armed;
		final Queue<String> invocations = new ConcurrentLinkedQueue<>();
		final Queue<String> parkedOn = new ConcurrentLinkedQueue<>();
		final Queue<String> detections = new ConcurrentLinkedQueue<>();
		final Queue<String> undetectedOnNonBlocking = new ConcurrentLinkedQueue<>();
		/** Each call site blocks once per thread: enough to show where it runs, without parking hundreds of times. */
		final Set<String> blockedOnce = ConcurrentHashMap.newKeySet();
		final Set<CountDownLatch> gates = ConcurrentHashMap.newKeySet();
		final AtomicInteger parked = new AtomicInteger();

		Fault(Callback callback, Failure failure, Run run) {
			this.callback = callback;
			this.failure = failure;
			this.run = run;
			this.boom = new IllegalStateException("matrix: " + callback + " failed on purpose");
		}

		int parked() {
			return parked.get();
		}

		/** @return the gates it opened */
		Set<CountDownLatch> releaseAll() {
			Set<CountDownLatch> opened = Set.copyOf(gates);
			for (CountDownLatch gate : opened) {
				gate.countDown();
			}
			return opened;
		}

		/** A callback that returns a value. */
		<V> V call(String site, Supplier<V> healthy) {
			if (!armed || (callback == Callback.TOKEN_COUNTER_AT_LIMIT && run.attemptsMade.get() < 3)) {
				return healthy.get();
			}
			invocations.add(site + "@" + threadKind());
			switch (failure) {
				case THROWS:
					throw boom;
				case RETURNS_NULL:
					return null;
				case BLOCKS:
					block(site);
					return healthy.get();
				default:
					return healthy.get();
			}
		}

		/** A callback that returns nothing. */
		void run(String site) {
			call(site, () -> null);
		}

		private void block(String site) {
			String kind = threadKind();
			if (!blockedOnce.add(site + "@" + Thread.currentThread().getName())) {
				return;
			}
			CountDownLatch gate = new CountDownLatch(1);
			boolean nonBlocking = Schedulers.isInNonBlockingThread();
			if (!nonBlocking) {
				parked.incrementAndGet();
				run.wake();
			}
			gates.add(gate);
			try {
				parkedOn.add(site + "@" + kind + (Thread.currentThread().isInterrupted() ? ":already-interrupted" : ""));
				if (!gate.await(BLOCK_CAP.toMillis(), TimeUnit.MILLISECONDS)) {
					parkedOn.add(site + "@" + kind + ":cap");
				}
				if (nonBlocking) {
					undetectedOnNonBlocking.add(site + "@" + kind);
				}
			}
			catch (BlockingOperationError detected) {
				detections.add(site + "@" + kind);
				throw detected;
			}
			catch (InterruptedException e) {
				parkedOn.add(site + "@" + kind + ":interrupted");
				Thread.currentThread().interrupt();
			}
			finally {
				gates.remove(gate);
				if (!nonBlocking) {
					parked.decrementAndGet();
					run.wake();
				}
			}
		}

		static String threadKind() {
			String name = Thread.currentThread().getName();
			if (name.startsWith("matrix-caller")) {
				return "caller";
			}
			if (name.startsWith("matrix-upstream")) {
				return "upstream";
			}
			if (name.startsWith("matrix-timer")) {
				return "timer";
			}
			return name;
		}

		/** @param onFlags fail in flags() at the second token, else in finishReason() at the finish chunk */
		ChunkInspector<ChatChunk> inspector(boolean onFlags) {
			ChunkInspector<ChatChunk> chat = ChatChunk.inspector();
			return new ChunkInspector<>() {
				@Override
				public boolean isContent(ChatChunk chunk) {
					return chat.isContent(chunk);
				}

				@Override
				public boolean isHeartbeat(ChatChunk chunk) {
					return chat.isHeartbeat(chunk);
				}

				@Override
				public boolean isTerminal(ChatChunk chunk) {
					return chat.isTerminal(chunk);
				}

				@Override
				public String finishReason(ChatChunk chunk) {
					// asked only for a chunk whose flags carry FINISH: here, after all three tokens
					return onFlags ? chat.finishReason(chunk)
							: call("ChunkInspector.finishReason", () -> chat.finishReason(chunk));
				}

				@Override
				public int flags(ChatChunk chunk) {
					// fails on the second token, once the first has reached the subscriber
					return onFlags && "b".equals(chunk.text()) ? call("ChunkInspector.flags", () -> chat.flags(chunk))
							: chat.flags(chunk);
				}
			};
		}

		/** Every method of GuardMetrics fails; the same instance goes to the policy, the lanes and the breaker. */
		GuardMetrics metrics() {
			return (GuardMetrics) Proxy.newProxyInstance(GuardMetrics.class.getClassLoader(),
					new Class<?>[] { GuardMetrics.class }, (proxy, method, args) -> {
						switch (method.getName()) {
							case "toString":
								return "failing metrics";
							case "hashCode":
								return System.identityHashCode(proxy);
							case "equals":
								return proxy == args[0];
							default:
								run("GuardMetrics." + method.getName());
								return null;
						}
					});
		}

		BreakerListener breakerListener() {
			return event -> run("BreakerListener." + (event instanceof BreakerEvent.StateTransition t
					? t.from() + "->" + t.to() : event.getClass().getSimpleName()));
		}

		<V> CoreSubscriber<V> signalSubscriber(String site) {
			return new CoreSubscriber<>() {
				@Override
				public void onSubscribe(Subscription s) {
					s.request(Long.MAX_VALUE);
				}

				@Override
				public void onNext(V value) {
					Fault.this.run(site);
				}

				@Override
				public void onError(Throwable t) {
				}

				@Override
				public void onComplete() {
				}
			};
		}
	}

	/** The request's subscriber: counts terminal signals and notes what came after one. */
	static final class Recorder implements CoreSubscriber<ChatChunk> {

		final Run run;
		final List<ChatChunk> chunks = new CopyOnWriteArrayList<>();
		final AtomicInteger terminals = new AtomicInteger();
		final List<String> lateSignals = new CopyOnWriteArrayList<>();
		volatile Throwable error;
		volatile boolean blockedAtTerminal;
		volatile String terminalThread;

		Recorder(Run run) {
			this.run = run;
		}

		boolean terminated() {
			return terminals.get() > 0;
		}

		@Override
		public Context currentContext() {
			return Context.empty();
		}

		@Override
		public void onSubscribe(Subscription s) {
			s.request(Long.MAX_VALUE);
		}

		@Override
		public void onNext(ChatChunk chunk) {
			if (terminated()) {
				lateSignals.add("onNext(" + chunk.text() + ")");
				return;
			}
			chunks.add(chunk);
		}

		@Override
		public void onError(Throwable t) {
			terminal(t, "onError(" + t + ")");
		}

		@Override
		public void onComplete() {
			terminal(null, "onComplete");
		}

		private void terminal(Throwable t, String signal) {
			if (terminals.getAndIncrement() > 0) {
				lateSignals.add(signal);
				return;
			}
			error = t;
			blockedAtTerminal = run.fault.parked() > 0;
			terminalThread = Fault.threadKind();
			run.virtualAtTerminal = Duration.ofNanos(run.timer.nanos());
			run.wake();
		}
	}

	/**
	 * A virtual-time scheduler like {@code TrackingScheduler} (it counts pending tasks), lock-free
	 * so it can be advanced on a non-blocking thread while other threads schedule on it:
	 * {@code VirtualTimeScheduler}'s queue takes a lock, which BlockHound would report there.
	 */
	static final class VirtualTimer implements Scheduler {

		private final ConcurrentSkipListSet<Task> queue = new ConcurrentSkipListSet<>();
		private final AtomicLong sequence = new AtomicLong();
		private final AtomicInteger pending = new AtomicInteger();
		private volatile long nanos;
		final Queue<Throwable> failedTasks = new ConcurrentLinkedQueue<>();

		int pending() {
			return pending.get();
		}

		long nanos() {
			return nanos;
		}

		/** Runs every task due within {@code d}, in time order, tasks scheduled meanwhile included. */
		void advance(Duration d) {
			long target = nanos + d.toNanos();
			for (;;) {
				Task t = queue.pollFirst();
				if (t == null) {
					break;
				}
				if (t.at > target) {
					queue.add(t);
					break;
				}
				if (t.at > nanos) {
					nanos = t.at;
				}
				if (t.claim()) {
					pending.decrementAndGet();
					try {
						t.task.run();
					}
					catch (Throwable e) {
						failedTasks.add(e);
					}
				}
			}
			nanos = target;
		}

		@Override
		public Disposable schedule(Runnable task) {
			return schedule(task, 0L, TimeUnit.NANOSECONDS);
		}

		@Override
		public Disposable schedule(Runnable task, long delay, TimeUnit unit) {
			Task t = new Task(nanos + Math.max(0L, unit.toNanos(delay)), sequence.getAndIncrement(), task);
			pending.incrementAndGet();
			queue.add(t);
			return t;
		}

		@Override
		public long now(TimeUnit unit) {
			return unit.convert(nanos, TimeUnit.NANOSECONDS);
		}

		@Override
		public Worker createWorker() {
			VirtualTimer parent = this;
			return new Worker() {
				final Set<Task> tasks = ConcurrentHashMap.newKeySet();
				volatile boolean disposed;

				@Override
				public Disposable schedule(Runnable task) {
					return schedule(task, 0L, TimeUnit.NANOSECONDS);
				}

				@Override
				public Disposable schedule(Runnable task, long delay, TimeUnit unit) {
					Task t = (Task) parent.schedule(task, delay, unit);
					tasks.add(t);
					if (disposed) {
						t.dispose();
					}
					return t;
				}

				@Override
				public void dispose() {
					disposed = true;
					tasks.forEach(Task::dispose);
				}

				@Override
				public boolean isDisposed() {
					return disposed;
				}
			};
		}

		final class Task implements Disposable, Comparable<Task> {

			final long at;
			final long seq;
			final Runnable task;
			final AtomicInteger state = new AtomicInteger();

			Task(long at, long seq, Runnable task) {
				this.at = at;
				this.seq = seq;
				this.task = task;
			}

			boolean claim() {
				return state.compareAndSet(0, 1);
			}

			@Override
			public void dispose() {
				if (state.compareAndSet(0, 2)) {
					pending.decrementAndGet();
					queue.remove(this);
				}
			}

			@Override
			public boolean isDisposed() {
				return state.get() != 0;
			}

			@Override
			public int compareTo(Task o) {
				int c = Long.compare(at, o.at);
				return c != 0 ? c : Long.compare(seq, o.seq);
			}
		}
	}

}
