package dev.aiguard.provider;

import java.util.Objects;

import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import dev.aiguard.sse.SseEvent;

import org.jspecify.annotations.Nullable;

/** JSON helpers shared by the codecs. */
final class EventJson {

	private static final int DATA_EXCERPT = 120;

	private EventJson() {
	}

	/**
	 * Parses the event's data as a JSON object.
	 *
	 * @param position the event's 1-based position in the stream, named in the error
	 * @throws ProviderFormatException naming the event when the data is not a JSON object
	 */
	static JsonNode object(String provider, SseEvent event, long position) {
		JsonNode node;
		try {
			node = Json.MAPPER.readTree(event.data());
		}
		catch (JacksonException e) {
			throw malformed(provider, event, position, "malformed JSON (" + e.getOriginalMessage() + ")", e);
		}
		if (node == null || !node.isObject()) {
			throw malformed(provider, event, position, "not a JSON object", null);
		}
		return node;
	}

	private static ProviderFormatException malformed(String provider, SseEvent event, long position, String what,
			@Nullable Throwable cause) {
		String data = Objects.requireNonNullElse(event.data(), "");
		String excerpt = data.length() <= DATA_EXCERPT ? data : data.substring(0, DATA_EXCERPT) + "...";
		return new ProviderFormatException(provider, provider + " event #" + position + " (event: " + event.event()
				+ (event.id() != null ? ", id: " + event.id() : "") + ") is " + what + ": " + excerpt, cause);
	}

	/** @return the node's text, or {@code null} when absent, null or not a scalar */
	static @Nullable String text(JsonNode node) {
		if (node == null || node.isNull() || node.isMissingNode() || node.isContainer()) {
			return null;
		}
		return node.asString();
	}

	/** @return the node's int, or -1 when absent or not a number */
	static int count(JsonNode node) {
		return node != null && node.isNumber() ? node.asInt(-1) : -1;
	}

	/** Turns an error object of either provider into the typed exception. */
	static ProviderException inBandError(String provider, JsonNode error) {
		ErrorBodies.Parsed p = ErrorBodies.fromErrorNode(error, error.toString());
		return ProviderErrors.inBand(provider, p.type(), p.code(), p.message());
	}
}
