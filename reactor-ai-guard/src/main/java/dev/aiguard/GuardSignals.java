package dev.aiguard;

import java.util.Objects;

import dev.aiguard.core.Source;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.util.context.Context;
import reactor.util.context.ContextView;

import org.jspecify.annotations.Nullable;

/**
 * Lets the code that subscribes a guarded stream see, while it streams, where the answer comes
 * from and, at the end, the request's {@link GuardReport}. Create one per request and put it in
 * the context of the guarded stream:
 *
 * <pre>{@code
 * GuardSignals signals = GuardSignals.create();
 * Flux<ServerSentEvent<String>> body = Flux.concat(
 *         client.stream(request).transform(guard).map(this::tokenEvent),
 *         signals.report().map(r -> doneEvent(r.source(), r.finishReason(), r.tokens())))
 *     .contextWrite(signals::into);
 * }</pre>
 *
 * {@link #source()} emits as soon as the guard knows which source will answer (before that
 * source's first chunk reaches the subscriber); {@link #report()} emits the report once the
 * request has ended. Both are replayed to late subscribers. A stream guarded more than once under
 * the same signals reports its first request.
 */
public final class GuardSignals {

	/** The context key under which the guard looks for a {@link GuardSignals}. */
	public static final Object CONTEXT_KEY = GuardSignals.class.getName();

	private final Sinks.One<Source> source = Sinks.one();
	private final Sinks.One<GuardReport> report = Sinks.one();

	private GuardSignals() {
	}

	public static GuardSignals create() {
		return new GuardSignals();
	}

	/** @return {@code context} with these signals added, for {@code contextWrite(signals::into)} */
	public Context into(Context context) {
		return Objects.requireNonNull(context, "context").put(CONTEXT_KEY, this);
	}

	/** @return the source that answers, once chosen; empty if the request ends before any is */
	public Mono<Source> source() {
		return source.asMono();
	}

	/** @return the request's report, once the request has ended */
	public Mono<GuardReport> report() {
		return report.asMono();
	}

	/** @return the signals found in {@code context}, or {@code null} */
	static @Nullable GuardSignals from(ContextView context) {
		Object o = context.getOrDefault(CONTEXT_KEY, null);
		return o instanceof GuardSignals ? (GuardSignals) o : null;
	}

	void sourceChosen(Source chosen) {
		source.tryEmitValue(chosen);
	}

	void ended(GuardReport finalReport) {
		source.tryEmitEmpty();
		report.tryEmitValue(finalReport);
	}
}
