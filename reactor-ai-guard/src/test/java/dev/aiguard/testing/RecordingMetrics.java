package dev.aiguard.testing;

import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.function.DoubleSupplier;
import java.util.function.Supplier;
import java.util.function.ToIntFunction;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import dev.aiguard.core.Outcome;
import dev.aiguard.core.Priority;
import dev.aiguard.core.Source;
import dev.aiguard.core.StallPhase;
import dev.aiguard.metrics.GuardMetrics;

/**
 * A {@link GuardMetrics} that records every call so a test can read it back. Lock-free, so one
 * instance can be shared by racing threads and event loops.
 *
 * <p>Each call is kept, in order, as one line: the method's name followed by its words (policy,
 * lanes or breaker name, priority, outcome, phase, source, reason, {@code FROM->TO},
 * {@code hit}/{@code miss}). Numbers are left out of the lines; the typed accessors return them,
 * and the gauges handed to {@code breakerCreated} and {@code lanesCreated}.
 *
 * <pre>{@code
 * RecordingMetrics metrics = new RecordingMetrics();
 * AiGuard<ChatChunk> guard = AiGuard.of(GuardPolicy.builder("chat").metrics(metrics).build());
 * // ... run a request that fails once, then succeeds
 * assertThat(metrics.retried()).containsExactly("ProviderServerException");
 * assertThat(metrics.count("streamEnded chat P1 FAILURE")).isEqualTo(1);
 * }</pre>
 */
public final class RecordingMetrics implements GuardMetrics {

	/** One end of a stream, as {@link GuardMetrics#streamEnded} reported it. */
	public record StreamEnd(String policy, Priority priority, Outcome outcome, long durationNanos,
			long timeToFirstTokenNanos, long tokens) {
	}

	/** One call: which method, its line, and the typed value the accessors read. */
	private record Call(String method, String line, Priority priority, Object value) {
	}

	private final Queue<Call> calls = new ConcurrentLinkedQueue<>();

	private volatile Supplier<Enum<?>> breakerState;
	private volatile DoubleSupplier failureRate;
	private volatile DoubleSupplier slowCallRate;
	private volatile String breakerName;

	private volatile ToIntFunction<Priority> inFlightOwn;
	private volatile ToIntFunction<Priority> inFlightBorrowed;
	private volatile ToIntFunction<Priority> queued;

	private void record(String method, Priority priority, Object value, Object... words) {
		StringBuilder line = new StringBuilder(method);
		for (Object w : words) {
			line.append(' ').append(w);
		}
		calls.add(new Call(method, line.toString(), priority, value));
	}

	private Stream<Call> calls(String method) {
		return calls.stream().filter(c -> c.method.equals(method));
	}

	private <T> List<T> values(String method, Class<T> type) {
		return calls(method).map(c -> type.cast(c.value)).collect(Collectors.toList());
	}

	// ---- streams ----

	@Override
	public void streamEnded(String policy, Priority priority, Outcome outcome, long durationNanos,
			long timeToFirstTokenNanos, long tokens) {
		record("streamEnded", priority,
				new StreamEnd(policy, priority, outcome, durationNanos, timeToFirstTokenNanos, tokens), policy,
				priority, outcome);
	}

	@Override
	public void stalled(String policy, Priority priority, StallPhase phase) {
		record("stalled", priority, phase, policy, priority, phase);
	}

	@Override
	public void outputTruncated(String policy, Priority priority) {
		record("outputTruncated", priority, null, policy, priority);
	}

	// ---- breaker ----

	@Override
	public void breakerCreated(String breaker, Supplier<Enum<?>> state, DoubleSupplier failureRate,
			DoubleSupplier slowCallRate) {
		this.breakerName = breaker;
		this.breakerState = state;
		this.failureRate = failureRate;
		this.slowCallRate = slowCallRate;
		record("breakerCreated", null, null, breaker);
	}

	@Override
	public void breakerTransition(String breaker, Enum<?> from, Enum<?> to) {
		String transition = from + "->" + to;
		record("breakerTransition", null, transition, breaker, transition);
	}

	@Override
	public void breakerRejected(String breaker) {
		record("breakerRejected", null, null, breaker);
	}

	// ---- admission ----

	@Override
	public void lanesCreated(String lanes, ToIntFunction<Priority> inFlightOwn,
			ToIntFunction<Priority> inFlightBorrowed, ToIntFunction<Priority> queued) {
		this.inFlightOwn = inFlightOwn;
		this.inFlightBorrowed = inFlightBorrowed;
		this.queued = queued;
		record("lanesCreated", null, null, lanes);
	}

	@Override
	public void admissionWaited(String lanes, Priority priority, long nanos) {
		record("admissionWaited", priority, nanos, lanes, priority);
	}

	@Override
	public void admissionRejected(String lanes, Priority priority, String reason) {
		record("admissionRejected", priority, priority + " " + reason, lanes, priority, reason);
	}

	@Override
	public void preempted(String lanes, Priority priority) {
		record("preempted", priority, priority, lanes, priority);
	}

	// ---- retry and truncation ----

	@Override
	public void retried(String policy, Priority priority, String reason) {
		record("retried", priority, reason, policy, priority, reason);
	}

	@Override
	public void retryBudgetExhausted(String policy, Priority priority) {
		record("retryBudgetExhausted", priority, null, policy, priority);
	}

	@Override
	public void tokensWasted(String policy, Priority priority, long tokens) {
		record("tokensWasted", priority, tokens, policy, priority);
	}

	@Override
	public void promptTruncated(String policy, Priority priority, long tokensDropped) {
		record("promptTruncated", priority, tokensDropped, policy, priority);
	}

	@Override
	public void continued(String policy, Priority priority) {
		record("continued", priority, null, policy, priority);
	}

	@Override
	public void invalidAnswer(String policy, Priority priority, String validator) {
		record("invalidAnswer", priority, validator, policy, priority, validator);
	}

	// ---- fallback ----

	@Override
	public void answered(String policy, Priority priority, Source source) {
		record("answered", priority, source, policy, priority, source);
	}

	@Override
	public void fallbackStepFailed(String policy, Priority priority, Source source) {
		record("fallbackStepFailed", priority, source, policy, priority, source);
	}

	@Override
	public void fallbackStepTime(String policy, Priority priority, Source source, long nanos) {
		record("fallbackStepTime", priority, nanos, policy, priority, source);
	}

	@Override
	public void cacheLookup(String policy, boolean hit) {
		record("cacheLookup", null, hit, policy, hit ? "hit" : "miss");
	}

	// ---- reading back: every call ----

	/** @return every call so far, in order, one line each (e.g. {@code "answered chat P0 CACHE"}) */
	public List<String> events() {
		return calls.stream().map(Call::line).collect(Collectors.toList());
	}

	/**
	 * @param words the start of a line, whole words only: {@code "answered chat"} counts every
	 * answer of policy {@code chat}, {@code "answered chat P0 CACHE"} only those from the cache at P0
	 * @return how many calls so far have a line starting with {@code words}
	 */
	public long count(String words) {
		return calls.stream().map(Call::line).filter(l -> l.equals(words) || l.startsWith(words + " ")).count();
	}

	// ---- streams ----

	/** @return every stream end, in order */
	public List<StreamEnd> streamsEnded() {
		return values("streamEnded", StreamEnd.class);
	}

	/** @return how many stream ends had this outcome */
	public long ended(Outcome outcome) {
		return streamsEnded().stream().filter(e -> e.outcome() == outcome).count();
	}

	/** @return the phase of every stall, in order */
	public List<StallPhase> stalled() {
		return values("stalled", StallPhase.class);
	}

	// ---- breaker ----

	/** @return the name of the breaker created last, or {@code null} */
	public String breakerName() {
		return breakerName;
	}

	/** @return the state gauge of the breaker created last, or {@code null} */
	public Supplier<Enum<?>> breakerState() {
		return breakerState;
	}

	/** @return the failure-rate gauge of the breaker created last, or {@code null} */
	public DoubleSupplier failureRate() {
		return failureRate;
	}

	/** @return the slow-call-rate gauge of the breaker created last, or {@code null} */
	public DoubleSupplier slowCallRate() {
		return slowCallRate;
	}

	/** @return every breaker transition, in order, as {@code "FROM->TO"} */
	public List<String> transitions() {
		return values("breakerTransition", String.class);
	}

	/** @return how many calls breakers refused */
	public long breakerRejections() {
		return calls("breakerRejected").count();
	}

	// ---- admission ----

	/** @return the own-permits gauge of the lanes created last, or {@code null} */
	public ToIntFunction<Priority> inFlightOwn() {
		return inFlightOwn;
	}

	/** @return the borrowed-permits gauge of the lanes created last, or {@code null} */
	public ToIntFunction<Priority> inFlightBorrowed() {
		return inFlightBorrowed;
	}

	/** @return the queue-length gauge of the lanes created last, or {@code null} */
	public ToIntFunction<Priority> queued() {
		return queued;
	}

	/** @return every admission wait of this priority, in order, in nanoseconds (0: admitted at once) */
	public List<Long> waitedNanos(Priority priority) {
		return calls("admissionWaited").filter(c -> c.priority == priority).map(c -> (Long) c.value)
				.collect(Collectors.toList());
	}

	/** @return the latest admission wait of any priority in nanoseconds, or -1 when none */
	public long lastWaitNanos() {
		return values("admissionWaited", Long.class).stream().reduce((first, second) -> second).orElse(-1L);
	}

	/** @return every admission refusal, in order, as {@code "P1 WAIT_TIMEOUT"} */
	public List<String> admissionRejections() {
		return values("admissionRejected", String.class);
	}

	/** @return the priority of every preempted stream, in order */
	public List<Priority> preempted() {
		return values("preempted", Priority.class);
	}

	// ---- retry and truncation ----

	/** @return the reason of every retry, in order */
	public List<String> retried() {
		return values("retried", String.class);
	}

	/** @return how many retries the budget refused */
	public long retryBudgetExhausted() {
		return calls("retryBudgetExhausted").count();
	}

	/** @return the tokens each failed attempt wasted, in order */
	public List<Long> tokensWasted() {
		return values("tokensWasted", Long.class);
	}

	/** @return the tokens each prompt truncation dropped, in order */
	public List<Long> promptTruncated() {
		return values("promptTruncated", Long.class);
	}

	/** @return how many continuation requests were sent */
	public long continued() {
		return calls("continued").count();
	}

	// ---- fallback ----

	/** @return the source of every answer, in order */
	public List<Source> answered() {
		return values("answered", Source.class);
	}

	/** @return how many answers came from this source */
	public long answered(Source source) {
		return answered().stream().filter(s -> s == source).count();
	}

	/** @return the source of every failed fallback step, in order */
	public List<Source> failedSteps() {
		return values("fallbackStepFailed", Source.class);
	}

	/** @return the time of every fallback step, in order, in nanoseconds */
	public List<Long> stepNanos() {
		return values("fallbackStepTime", Long.class);
	}

	/** @return how many response-cache lookups hit */
	public long cacheHits() {
		return calls("cacheLookup").filter(c -> (Boolean) c.value).count();
	}

	/** @return how many response-cache lookups missed */
	public long cacheMisses() {
		return calls("cacheLookup").filter(c -> !(Boolean) c.value).count();
	}
}
