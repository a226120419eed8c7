package dev.aiguard.provider;

import tools.jackson.core.JacksonException;
import tools.jackson.core.JsonParser;
import tools.jackson.core.JsonToken;

import org.jspecify.annotations.Nullable;

/** Reads the error object out of either provider's error body, with Jackson's streaming parser. */
final class ErrorBodies {

	/**
	 * @param message the provider's message, or the body's text when it is not JSON
	 * @param type the error type, or {@code null}
	 * @param code the error code, or {@code null}
	 */
	record Parsed(String message, @Nullable String type, @Nullable String code) {
	}

	private ErrorBodies() {
	}

	/** @return the body's {@code error} as read by {@link #read}; the whole body as the message when it has none */
	static Parsed parse(String body) {
		String trimmed = body.strip();
		if (!trimmed.startsWith("{")) {
			return new Parsed(trimmed, null, null);
		}
		try (JsonParser parser = EventJson.FACTORY.createParser(trimmed)) {
			parser.nextToken();
			Parsed found = null;
			String name;
			while ((name = EventJson.nextProperty(parser)) != null) {
				JsonToken token = parser.currentToken();
				if (name.equals("error") && (token == JsonToken.VALUE_STRING || token == JsonToken.START_OBJECT)) {
					found = read(parser, trimmed, 0);
				}
				else {
					found = name.equals("error") ? null : found;
					parser.skipChildren();
				}
			}
			return found != null ? found : new Parsed(trimmed, null, null);
		}
		catch (JacksonException notJson) {
			return new Parsed(trimmed, null, null);
		}
	}

	/**
	 * Reads the error value the parser is on, in both shapes: OpenAI
	 * {@code {"error":{"message","type","code"}}}, Anthropic
	 * {@code {"type":"error","error":{"type","message"}}}; some servers send {@code "error":"text"}.
	 * An object without a message, and any other value, gives its JSON text as the message.
	 *
	 * @param source the text the parser reads, for the JSON text of an object or array
	 * @param sourceStart the parser's character offset of the source's first character
	 */
	static Parsed read(JsonParser parser, String source, long sourceStart) {
		JsonToken token = parser.currentToken();
		if (token == JsonToken.VALUE_STRING) {
			return new Parsed(parser.getString(), null, null);
		}
		if (token != JsonToken.START_OBJECT) {
			return new Parsed(valueText(parser, source, sourceStart), null, null);
		}
		int start = (int) (parser.currentTokenLocation().getCharOffset() - sourceStart);
		String message = null;
		String type = null;
		String code = null;
		String name;
		while ((name = EventJson.nextProperty(parser)) != null) {
			switch (name) {
				case "message" -> message = EventJson.text(parser);
				case "type" -> type = EventJson.text(parser);
				case "code" -> code = EventJson.text(parser);
				default -> parser.skipChildren();
			}
		}
		return new Parsed(message != null ? message : textUpTo(parser, source, sourceStart, start), type, code);
	}

	/** @return an array's JSON text, or a scalar's text ({@code null} as {@code "null"}) */
	private static String valueText(JsonParser parser, String source, long sourceStart) {
		if (parser.currentToken() == JsonToken.START_ARRAY) {
			int start = (int) (parser.currentTokenLocation().getCharOffset() - sourceStart);
			parser.skipChildren();
			return textUpTo(parser, source, sourceStart, start);
		}
		return parser.getString();
	}

	/** @return the source from {@code start} to just after the token the parser is on */
	private static String textUpTo(JsonParser parser, String source, long sourceStart, int start) {
		return source.substring(start, (int) (parser.currentLocation().getCharOffset() - sourceStart));
	}
}
