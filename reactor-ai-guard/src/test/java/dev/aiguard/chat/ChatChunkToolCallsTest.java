package dev.aiguard.chat;

import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** {@link ChatChunk#hasToolCalls()} answers from one field comparison, whatever empty list the chunk was built with. */
class ChatChunkToolCallsTest {

	@Test
	void onlyAChunkWithDeltasHasToolCalls() {
		ChatChunk call = new ChatChunk("", null, null, null, List.of(new ToolCallDelta(0, "c1", "lookup", "{}")), false,
				false);
		assertThat(call.hasToolCalls()).isTrue();
		assertThat(ChatChunk.token("hi").hasToolCalls()).isFalse();
		assertThat(ChatChunk.done().hasToolCalls()).isFalse();
		assertThat(new ChatChunk("a", null, null, null, null, false, false).hasToolCalls()).isFalse();
		assertThat(new ChatChunk("a", null, null, null, new ArrayList<>(), false, false).hasToolCalls()).isFalse();
	}

	@Test
	void chunksBuiltWithAnyEmptyListAreEqual() {
		ChatChunk fromMutable = new ChatChunk("a", null, null, null, new ArrayList<>(), false, false);
		assertThat(fromMutable).isEqualTo(ChatChunk.token("a")).hasSameHashCodeAs(ChatChunk.token("a"));
		assertThat(fromMutable.toolCalls()).isEmpty();
	}
}
