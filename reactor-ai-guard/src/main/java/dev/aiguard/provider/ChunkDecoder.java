package dev.aiguard.provider;

import java.util.Objects;
import java.util.function.BiConsumer;
import java.util.function.Supplier;

import dev.aiguard.chat.ChatChunk;
import dev.aiguard.sse.SseEvent;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.SynchronousSink;

/**
 * What the chunk codecs share: one decoder per subscription that counts the events (to name a bad
 * one), turns SSE comments into keep-alives and passes on the chunk the provider's rules make of
 * every other event, if any.
 */
abstract class ChunkDecoder implements BiConsumer<SseEvent, SynchronousSink<ChatChunk>> {

	/** The events seen so far, the current one included. */
	long position;

	/** @return {@code events} decoded by a new decoder from {@code decoder} for each subscription */
	static Flux<ChatChunk> decode(Flux<SseEvent> events, Supplier<? extends ChunkDecoder> decoder) {
		Objects.requireNonNull(events, "events");
		return Flux.defer(() -> events.handle(decoder.get()));
	}

	@Override
	public final void accept(SseEvent event, SynchronousSink<ChatChunk> sink) {
		ChatChunk chunk = decode(event);
		if (chunk != null) {
			sink.next(chunk);
		}
	}

	/** @return the chunk, or {@code null} when the event carries nothing for the caller */
	final @Nullable ChatChunk decode(SseEvent event) {
		position++;
		if (event.isComment()) {
			return ChatChunk.keepAlive();
		}
		return decodeEvent(event);
	}

	/** @return the chunk of an event that is not a comment, or {@code null} when it carries nothing */
	abstract @Nullable ChatChunk decodeEvent(SseEvent event);
}
