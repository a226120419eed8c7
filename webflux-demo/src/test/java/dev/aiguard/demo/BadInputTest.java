package dev.aiguard.demo;

import java.util.List;

import org.junit.jupiter.api.Test;
import org.springframework.http.MediaType;
import org.springframework.http.codec.ServerSentEvent;

import static org.assertj.core.api.Assertions.assertThat;

/** Refused input: a JSON error body with a stable code, never a stream, never an upstream call. */
class BadInputTest extends DemoTestSupport {

	private void refused(String body, int status, String code, String messagePart) {
		refused(body, null, status, code, messagePart);
	}

	private void refused(String body, String priorityHeader, int status, String code, String messagePart) {
		long calls = mockRequests();
		client.post().uri("/api/chat")
			.contentType(MediaType.APPLICATION_JSON)
			.headers(h -> {
				if (priorityHeader != null) {
					h.set("X-Priority", priorityHeader);
				}
			})
			.bodyValue(body)
			.exchange()
			.expectStatus().isEqualTo(status)
			.expectHeader().contentTypeCompatibleWith(MediaType.APPLICATION_JSON)
			.expectBody()
			.jsonPath("$.error").isEqualTo(code)
			.jsonPath("$.message").value(m -> assertThat((String) m).contains(messagePart));
		assertThat(mockRequests()).as("no upstream call for refused input").isEqualTo(calls);
	}

	@Test
	void malformedJsonIs400() {
		refused("{\"messages\": [", 400, "malformed_json", "not valid JSON");
		refused("", 400, "malformed_json", "empty");
		refused("[1, 2]", 400, "malformed_json", "JSON object");
	}

	@Test
	void missingOrEmptyMessagesAre400() {
		refused("{\"messages\": []}", 400, "empty_messages", "must not be empty");
		refused("{\"priority\": \"P1\"}", 400, "empty_messages", "missing");
		refused("{\"messages\": \"hello\"}", 400, "invalid_messages", "must be an array");
		refused("{\"messages\": [{\"role\": \"user\"}]}", 400, "invalid_messages", "messages[0].content");
		refused("{\"messages\": [{\"role\": \"user\", \"content\": \"a\"}, 7]}", 400, "invalid_messages", "messages[1]");
	}

	@Test
	void unknownRoleIs400NamingTheMessageAndRole() {
		refused("{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}, {\"role\": \"robot\", \"content\": \"x\"}]}",
				400, "unknown_role", "messages[1].role 'robot'");
		refused("{\"messages\": [{\"role\": \"tool\", \"content\": \"x\"}]}", 400, "unknown_role", "'tool'");
	}

	@Test
	void unknownPriorityInBodyOrHeaderIs400() {
		refused("{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"priority\": \"P7\"}", 400,
				"unknown_priority", "priority 'P7'");
		refused("{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"priority\": 0}", 400,
				"unknown_priority", "must be a string");
		refused(ask("hi"), "urgent", 400, "unknown_priority", "X-Priority 'urgent'");
	}

	@Test
	void unknownClientInBodyOrQueryIs400() {
		refused("{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"client\": \"langchain\"}", 400,
				"unknown_client", "client 'langchain' is not one of library, spring-ai");
		refused("{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"client\": 1}", 400,
				"unknown_client", "must be a string");
		long calls = mockRequests();
		client.post().uri("/api/chat?client=openai").contentType(MediaType.APPLICATION_JSON).bodyValue(ask("hi"))
			.exchange()
			.expectStatus().isBadRequest()
			.expectBody()
			.jsonPath("$.error").isEqualTo("unknown_client")
			.jsonPath("$.message").isEqualTo("query parameter client 'openai' is not one of library, spring-ai");
		assertThat(mockRequests()).isEqualTo(calls);
	}

	@Test
	void bodyOverTheLimitIs413() {
		String huge = ask("x".repeat(1024 * 1024));
		refused(huge, 413, "body_too_large", "larger than 1048576 bytes");
	}

	@Test
	void bodyJustUnderTheLimitIsAccepted() {
		String question = "y".repeat(1024 * 1024 - ask("").length());
		assertThat(ask(question).length()).isEqualTo(1024 * 1024);
		// read to the end: an answer still streaming would reach the mock during the next test's count
		List<ServerSentEvent<String>> events = chatToEnd(ask(question));
		assertThat(events.get(0).event()).isEqualTo("meta");
		// the mock echoes the question: its first event's line is longer than the SSE decoder takes
		assertThat(data(last(events)).get("type").stringValue()).isEqualTo("bad_response");
	}
}
