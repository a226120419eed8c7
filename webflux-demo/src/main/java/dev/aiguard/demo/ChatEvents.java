package dev.aiguard.demo;

import java.util.List;
import java.util.Locale;

import dev.aiguard.GuardReport;
import dev.aiguard.core.Priority;
import dev.aiguard.core.Source;
import dev.aiguard.core.Tenant;
import dev.aiguard.admission.AdmissionRejectedException;
import dev.aiguard.breaker.BreakerOpenException;
import dev.aiguard.load.LoadAction;
import dev.aiguard.load.LoadLevel;
import dev.aiguard.provider.ContextLengthExceededException;
import dev.aiguard.provider.ProviderClientException;
import dev.aiguard.provider.ProviderConnectionException;
import dev.aiguard.provider.ProviderFormatException;
import dev.aiguard.provider.ProviderOverloadedException;
import dev.aiguard.provider.ProviderServerException;
import dev.aiguard.provider.ProviderStreamException;
import dev.aiguard.provider.RateLimitedException;
import dev.aiguard.retry.PartialStreamException;
import dev.aiguard.sse.SseFormatException;
import dev.aiguard.stall.IncompleteStreamException;
import dev.aiguard.stall.StreamStalledException;
import dev.aiguard.truncation.PromptTooLargeException;
import dev.aiguard.validation.DegenerateOutputException;
import dev.aiguard.validation.InvalidOutputException;
import org.jspecify.annotations.Nullable;
import org.springframework.http.codec.ServerSentEvent;
import reactor.core.Exceptions;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

/**
 * The events of the demo contract ({@code meta}, {@code token}, {@code done}, {@code error}),
 * with their JSON written here so the field order and names are exactly the contract's.
 */
final class ChatEvents {

	private final JsonMapper json;
	private final ClientText text;

	/** Events whose error messages pass through {@link ClientText#PATTERNS} only. */
	ChatEvents(JsonMapper json) {
		this(json, ClientText.PATTERNS);
	}

	/** @param text what an error message may tell the client (no key, no upstream address) */
	ChatEvents(JsonMapper json, ClientText text) {
		this.json = json;
		this.text = text;
	}

	ServerSentEvent<String> meta(String requestId, Priority priority, AnswerClient client, Tenant tenant) {
		return event("meta", json.createObjectNode()
			.put("requestId", requestId)
			.put("priority", priority.name())
			.put("client", client.id())
			.put("tenant", tenant.id()));
	}

	ServerSentEvent<String> token(String text) {
		return event("token", json.createObjectNode().put("text", text));
	}

	/**
	 * @param model the model that gave the answer, or {@code null} when none did (cache, canned, fixed text)
	 * @param load the load governor's level and the action of its rules for the request's priority
	 *        when the request started, or {@code null} without a governor
	 */
	ServerSentEvent<String> done(GuardReport report, @Nullable String model, @Nullable LoadSeen load) {
		ObjectNode done = json.createObjectNode()
			.put("source", report.source().name())
			.put("finishReason", finishReason(report.finishReason()))
			.put("tokens", report.tokens())
			.put("model", model);
		if (load == null) {
			done.putNull("load");
		}
		else {
			done.putObject("load").put("level", load.level().name()).put("action", load.action().name());
		}
		return event("done", done.put("why", why(report, load)));
	}

	/** What the load governor said when a request started: its level and its rules' action for the priority. */
	record LoadSeen(LoadLevel level, LoadAction action) {
	}

	/**
	 * @return why the model's own answer is not the one shown, in a sentence for the page, or
	 *         {@code null} for a {@code REALTIME} answer: the load governor's rules sent the request
	 *         elsewhere first, no attempt reached the model, or the attempts failed
	 */
	@Nullable
	static String why(GuardReport report, @Nullable LoadSeen load) {
		if (report.source() == Source.REALTIME) {
			return null;
		}
		List<GuardReport.Attempt> attempts = report.attempts();
		if (attempts.isEmpty()) {
			if (load != null && load.action() != LoadAction.REALTIME) {
				return "load " + load.level().name() + ": " + report.priority().name() + " requests go "
						+ load.action().name().toLowerCase(Locale.ROOT).replace('_', '-');
			}
			return "no attempt reached the model (its breaker was open or the request was not admitted)";
		}
		GuardReport.Attempt last = attempts.get(attempts.size() - 1);
		return (attempts.size() == 1 ? "the model's attempt ended " : attempts.size() + " attempts, the last ended ")
				+ last.outcome().name();
	}

	/**
	 * @return a finish reason in lower case, as OpenAI writes it, whichever client answered (Spring AI
	 *         writes {@code STOP}); {@code null} when the answer had none
	 */
	@Nullable
	static String finishReason(@Nullable String reported) {
		return reported == null ? null : reported.toLowerCase(Locale.ROOT);
	}

	/** @param partial whether tokens of this answer were already sent */
	ServerSentEvent<String> error(Throwable error, boolean partial) {
		Throwable cause = rootOf(error);
		String type = type(cause);
		// unknown errors may carry anything: say what happened, not what the exception says; the
		// others keep their sentence without the key and the upstream's address (the log has those)
		String message = "internal".equals(type) || cause.getMessage() == null ? "the answer failed unexpectedly"
				: text.of(cause.getMessage());
		return event("error", json.createObjectNode()
			.put("type", type)
			.put("message", message)
			.put("partial", partial));
	}

	/** @return the short, stable name of an error for clients: {@code stalled}, {@code breaker_open}... */
	static String type(Throwable error) {
		Throwable e = rootOf(error);
		if (e instanceof StreamStalledException) {
			return "stalled";
		}
		if (e instanceof IncompleteStreamException) {
			return "incomplete";
		}
		if (e instanceof BreakerOpenException) {
			return "breaker_open";
		}
		if (budgetRefusal(e) != null) {
			// a budget said no after the answer had started: the provider key's wait was too long
			return "budget";
		}
		if (e instanceof AdmissionRejectedException) {
			return "rejected";
		}
		if (e instanceof RateLimitedException) {
			return "rate_limited";
		}
		if (e instanceof ProviderOverloadedException) {
			return "overloaded";
		}
		if (e instanceof ProviderServerException) {
			return "server_error";
		}
		if (e instanceof ContextLengthExceededException) {
			return "context_length";
		}
		if (e instanceof PromptTooLargeException) {
			return "prompt_too_large";
		}
		if (e instanceof ProviderClientException) {
			return "client_error";
		}
		if (e instanceof ProviderConnectionException) {
			return "connection";
		}
		if (e instanceof ProviderStreamException) {
			return "stream_error";
		}
		if (e instanceof ProviderFormatException || e instanceof SseFormatException) {
			// a response the client cannot read: bad JSON, or an event line over the decoder's limit
			return "bad_response";
		}
		if (e instanceof DegenerateOutputException) {
			return "repetition";
		}
		if (e instanceof InvalidOutputException) {
			// the model answered, and an output validator judged the answer INVALID
			return "invalid_output";
		}
		return "internal";
	}

	/** @return the budget's refusal behind {@code error}, or {@code null} when it is something else */
	@Nullable
	static AdmissionRejectedException budgetRefusal(Throwable error) {
		Throwable e = rootOf(error);
		return e instanceof AdmissionRejectedException a && a.reason() == AdmissionRejectedException.Reason.BUDGET ? a
				: null;
	}

	private static Throwable rootOf(Throwable error) {
		Throwable e = Exceptions.unwrap(error);
		return e instanceof PartialStreamException && e.getCause() != null ? e.getCause() : e;
	}

	private ServerSentEvent<String> event(String name, ObjectNode data) {
		return ServerSentEvent.<String>builder().event(name).data(json.writeValueAsString(data)).build();
	}
}
