package dev.aiguard.stall;

import java.util.Objects;
import java.util.function.Function;

import dev.aiguard.core.ChunkInspector;
import dev.aiguard.internal.TimeSource;
import reactor.core.CoreSubscriber;
import reactor.core.publisher.Flux;
import reactor.core.publisher.FluxOperator;
import dev.aiguard.stall.watch.StallWatch;

import org.jspecify.annotations.Nullable;

/**
 * Stall and completeness detection as an operator of its own.
 *
 * <pre>{@code
 * Flux<ChatChunk> watched = client.stream(request)
 *     .transform(Stall.detect(StallSpec.defaults()
 *             .firstTokenTimeout(Duration.ofSeconds(10))
 *             .idleTimeout(Duration.ofSeconds(30)),
 *         ChatChunk.inspector()));
 * }</pre>
 *
 * A passed deadline cancels the upstream and fails with {@link StreamStalledException}; an
 * upstream that completes without a terminal chunk or finish reason fails with
 * {@link IncompleteStreamException} (unless {@link StallSpec#requireTerminal(boolean)} is off).
 * {@code AiGuard} includes this; use it alone when you need nothing else.
 */
public final class Stall {

	private Stall() {
	}

	/**
	 * @param spec the deadlines
	 * @param inspector tells content from heartbeats and terminal chunks
	 * @return an operator for {@code transform} / {@code transformDeferred}
	 */
	public static <T> Function<Flux<T>, Flux<T>> detect(StallSpec spec, ChunkInspector<T> inspector) {
		Objects.requireNonNull(spec, "spec");
		Objects.requireNonNull(inspector, "inspector");
		return source -> new FluxStallDetect<>(source, spec, inspector);
	}

	static final class FluxStallDetect<T> extends FluxOperator<T, T> {

		private final StallSpec spec;
		private final ChunkInspector<T> inspector;

		FluxStallDetect(Flux<? extends T> source, StallSpec spec, ChunkInspector<T> inspector) {
			super(source);
			this.spec = spec;
			this.inspector = inspector;
		}

		/** The clock of the last scheduler seen; immutable, so a racy update only costs a lookup. */
		private @Nullable TimeSource lastClock;

		@Override
		public void subscribe(CoreSubscriber<? super T> actual) {
			TimeSource clock = TimeSource.reuse(lastClock, spec.scheduler());
			lastClock = clock;
			source.subscribe(new StallWatch<T>(actual, spec, clock, inspector, StallWatch.toSubscriber(), true));
		}
	}
}
