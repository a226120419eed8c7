package dev.aiguard.test.mock;

import java.util.List;

import org.junit.jupiter.api.Test;
import tools.jackson.databind.node.ObjectNode;

import static dev.aiguard.test.mock.OpenAiErrors.JSON;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ContentEventsTest {

	private static ObjectNode chunk(String content) {
		ObjectNode chunk = JSON.createObjectNode()
			.put("id", "chatcmpl-mock-7")
			.put("object", "chat.completion.chunk")
			.put("created", 1_700_000_000L)
			.put("model", "mock-\"1\"");
		ObjectNode choice = chunk.putArray("choices").addObject().put("index", 0);
		choice.putObject("delta").put("content", content);
		choice.put("finish_reason", (String) null);
		chunk.putNull("usage");
		return chunk;
	}

	@Test
	void eachEventIsByteForByteTheSerialisedChunk() {
		List<String> tokens = List.of("plain ", "\"quoted\" ", "back\\slash ", "line\nbreak\t", "é→😀 ", "</script> ",
				"\u0001control", "", MockAnswers.text("Why?"));
		OpenAiEndpoint.ContentEvents events =
				new OpenAiEndpoint.ContentEvents(chunk(OpenAiEndpoint.ContentEvents.MARKER), tokens);

		for (int i = 0; i < tokens.size(); i++) {
			assertThat(events.event(i)).isEqualTo(OpenAiEndpoint.event(chunk(tokens.get(i))));
		}
		assertThat(events.event(0)).startsWith("data: {\"id\":\"chatcmpl-mock-7\"").endsWith("}\n\n");
	}

	@Test
	void refusesATemplateWithoutTheMarker() {
		assertThatThrownBy(() -> new OpenAiEndpoint.ContentEvents(chunk("no marker"), List.of("a")))
			.isInstanceOf(IllegalArgumentException.class)
			.hasMessageContaining(OpenAiEndpoint.ContentEvents.MARKER);
	}
}
