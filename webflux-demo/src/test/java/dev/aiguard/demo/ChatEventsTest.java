package dev.aiguard.demo;

import java.time.Duration;
import java.util.List;

import dev.aiguard.GuardReport;
import dev.aiguard.core.Outcome;
import dev.aiguard.core.Priority;
import dev.aiguard.core.Source;
import dev.aiguard.load.LoadAction;
import dev.aiguard.load.LoadLevel;
import dev.aiguard.admission.AdmissionRejectedException;
import dev.aiguard.breaker.BreakerOpenException;
import dev.aiguard.breaker.BreakerState;
import dev.aiguard.provider.ContextLengthExceededException;
import dev.aiguard.provider.ProviderClientException;
import dev.aiguard.provider.ProviderConnectionException;
import dev.aiguard.provider.ProviderFormatException;
import dev.aiguard.provider.ProviderOverloadedException;
import dev.aiguard.provider.ProviderServerException;
import dev.aiguard.provider.ProviderStreamException;
import dev.aiguard.provider.RateLimitedException;
import dev.aiguard.provider.RateLimits;
import dev.aiguard.retry.PartialStreamException;
import dev.aiguard.validation.DegenerateOutputException;
import dev.aiguard.validation.InvalidOutputException;
import dev.aiguard.stall.IncompleteStreamException;
import dev.aiguard.core.StallPhase;
import dev.aiguard.stall.StreamStalledException;
import dev.aiguard.truncation.PromptTooLargeException;
import org.junit.jupiter.api.Test;
import org.springframework.http.codec.ServerSentEvent;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import static org.assertj.core.api.Assertions.assertThat;

/** The contract's event bodies, and the stable error types clients switch on. */
class ChatEventsTest {

	private final JsonMapper json = JsonMapper.builder().build();
	private final ChatEvents events = new ChatEvents(json);

	@Test
	void everyLibraryErrorHasItsStableType() {
		assertThat(ChatEvents.type(new StreamStalledException(StallPhase.IDLE, 3, Duration.ofSeconds(2)))).isEqualTo("stalled");
		assertThat(ChatEvents.type(new IncompleteStreamException(9))).isEqualTo("incomplete");
		assertThat(ChatEvents.type(new BreakerOpenException("model", BreakerState.OPEN))).isEqualTo("breaker_open");
		assertThat(ChatEvents.type(new AdmissionRejectedException(Priority.P2, AdmissionRejectedException.Reason.QUEUE_FULL,
				"full"))).isEqualTo("rejected");
		assertThat(ChatEvents.type(new RateLimitedException("openai", 429, "requests", "rate_limit_exceeded", "slow down",
				Duration.ofSeconds(1), RateLimits.UNKNOWN))).isEqualTo("rate_limited");
		assertThat(ChatEvents.type(new ProviderOverloadedException("openai", 529, "overloaded_error", "busy", null)))
			.isEqualTo("overloaded");
		assertThat(ChatEvents.type(new ProviderServerException("openai", 500, "server_error", null, "oops", null)))
			.isEqualTo("server_error");
		assertThat(ChatEvents.type(new ContextLengthExceededException("openai", 400, "invalid_request_error",
				"context_length_exceeded", "too long", 100, 200))).isEqualTo("context_length");
		assertThat(ChatEvents.type(new PromptTooLargeException(36, 80))).isEqualTo("prompt_too_large");
		assertThat(ChatEvents.type(new ProviderClientException("openai", 401, "auth", null, "no key"))).isEqualTo("client_error");
		assertThat(ChatEvents.type(new ProviderConnectionException("openai", "reset", null))).isEqualTo("connection");
		assertThat(ChatEvents.type(new ProviderStreamException("openai", "server_error", null, "boom"))).isEqualTo("stream_error");
		assertThat(ChatEvents.type(new ProviderFormatException("openai", "bad json", null))).isEqualTo("bad_response");
		assertThat(ChatEvents.type(new InvalidOutputException("finish-reason", "finish reason content_filter")))
			.isEqualTo("invalid_output");
		assertThat(ChatEvents.type(new DegenerateOutputException("repetition", 4, 64))).isEqualTo("repetition");
		assertThat(ChatEvents.type(new IllegalStateException("?"))).isEqualTo("internal");
	}

	@Test
	void aPartialFailureIsNamedByWhatCutIt() {
		PartialStreamException partial = new PartialStreamException(new IncompleteStreamException(5), 5);

		JsonNode body = json.readTree(events.error(partial, true).data());

		assertThat(body.propertyNames()).containsExactly("type", "message", "partial");
		assertThat(body.get("type").stringValue()).isEqualTo("incomplete");
		assertThat(body.get("partial").booleanValue()).isTrue();
	}

	@Test
	void anInvalidAnswerCutMidStreamSaysWhichValidatorRejectedIt() {
		InvalidOutputException invalid = new InvalidOutputException("finish-reason", "finish reason content_filter");

		JsonNode body = json.readTree(events.error(new PartialStreamException(invalid, 12), true).data());

		assertThat(body.get("type").stringValue()).isEqualTo("invalid_output");
		assertThat(body.get("message").stringValue()).contains("finish-reason", "content_filter");
		assertThat(body.get("partial").booleanValue()).isTrue();
	}

	@Test
	void unknownErrorsDoNotLeakTheirMessage() {
		ServerSentEvent<String> e = events.error(new IllegalStateException("secret detail sk-123"), false);

		assertThat(e.event()).isEqualTo("error");
		assertThat(e.data()).doesNotContain("secret").contains("\"type\":\"internal\"").contains("\"partial\":false");
	}

	@Test
	void tokenTextIsEscapedJson() {
		ServerSentEvent<String> e = events.token("line \"one\"\nline two");

		assertThat(e.event()).isEqualTo("token");
		assertThat(e.data()).doesNotContain("\n");
		assertThat(json.readTree(e.data()).get("text").stringValue()).isEqualTo("line \"one\"\nline two");
	}

	@Test
	void aNonRealtimeAnswerSaysWhyTheModelsOwnAnswerIsNotShown() {
		ChatEvents.LoadSeen degraded = new ChatEvents.LoadSeen(LoadLevel.DEGRADED, LoadAction.FALLBACK_FIRST);
		ChatEvents.LoadSeen healthy = new ChatEvents.LoadSeen(LoadLevel.HEALTHY, LoadAction.REALTIME);
		GuardReport.Attempt stalled = new GuardReport.Attempt(1, Outcome.STALLED, 0, null, Duration.ofSeconds(1), null, null);
		GuardReport.Attempt failed = new GuardReport.Attempt(2, Outcome.FAILURE, 0, null, Duration.ofSeconds(1), null, null);
		assertThat(ChatEvents.why(report(Source.REALTIME, List.of()), degraded)).isNull();
		assertThat(ChatEvents.why(report(Source.STATIC, List.of()), degraded)).isEqualTo("load DEGRADED: P1 requests go fallback-first");
		assertThat(ChatEvents.why(report(Source.CACHE, List.of()), healthy)).startsWith("no attempt reached the model");
		assertThat(ChatEvents.why(report(Source.CACHE, List.of()), null)).startsWith("no attempt reached the model");
		assertThat(ChatEvents.why(report(Source.STATIC, List.of(stalled)), degraded)).isEqualTo("the model's attempt ended STALLED");
		assertThat(ChatEvents.why(report(Source.STATIC, List.of(stalled, failed)), healthy))
			.isEqualTo("2 attempts, the last ended FAILURE");
	}

	private static GuardReport report(Source source, List<GuardReport.Attempt> attempts) {
		return new GuardReport("chat", Priority.P1, Outcome.SUCCESS, source, attempts, 3, null, Duration.ofSeconds(1),
				"stop", false, null);
	}
}
