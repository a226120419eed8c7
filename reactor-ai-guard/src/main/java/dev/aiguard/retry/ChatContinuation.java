package dev.aiguard.retry;

import dev.aiguard.chat.ChatChunk;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;
import dev.aiguard.retry.splice.OverlapSplicer;

/** {@link ContinuationSupport} for {@link ChatChunk}: the transcript is the text deltas. */
final class ChatContinuation implements ContinuationSupport<ChatChunk> {

	static final ChatContinuation INSTANCE = new ChatContinuation();

	private ChatContinuation() {
	}

	@Override
	public Class<ChatChunk> chunkType() {
		return ChatChunk.class;
	}

	@Override
	public Transcript<ChatChunk> transcript() {
		return new ChatTranscript();
	}

	@Override
	public Publisher<ChatChunk> splice(Publisher<? extends ChatChunk> continuation, Transcript<ChatChunk> delivered) {
		String before = delivered.text();
		return Flux.defer(() -> {
			OverlapSplicer splicer = OverlapSplicer.of(before);
			return Flux.<ChatChunk>from(continuation).handle((chunk, sink) -> {
				boolean closing = chunk.finishReason() != null || chunk.terminal();
				String text = chunk.text().isEmpty() ? "" : splicer.accept(chunk.text());
				if (closing) {
					text = text + splicer.finish();
				}
				if (text.equals(chunk.text())) {
					sink.next(chunk);
				}
				else if (!text.isEmpty() || !chunk.toolCalls().isEmpty() || closing || chunk.usage() != null
						|| chunk.heartbeat()) {
					sink.next(new ChatChunk(text, chunk.role(), chunk.finishReason(), chunk.usage(), chunk.toolCalls(),
							chunk.heartbeat(), chunk.terminal()));
				}
			});
		});
	}

	@Override
	public String toString() {
		return "ContinuationSupport.chatChunks()";
	}

	static final class ChatTranscript implements Transcript<ChatChunk> {

		final StringBuilder text = new StringBuilder();
		boolean toolCalls;

		@Override
		public void record(ChatChunk chunk) {
			text.append(chunk.text());
			if (!chunk.toolCalls().isEmpty()) {
				toolCalls = true;
			}
		}

		@Override
		public String text() {
			return text.toString();
		}

		@Override
		public boolean continuable() {
			return !toolCalls;
		}
	}
}
