package dev.aiguard.provider;

import java.util.Objects;

import dev.aiguard.sse.SseEvent;
import tools.jackson.core.JacksonException;
import tools.jackson.core.JsonParser;
import tools.jackson.core.JsonToken;
import tools.jackson.core.json.JsonFactory;

import org.jspecify.annotations.Nullable;

/**
 * The streaming JSON reading the codecs share, and value readers that look at the parser's
 * current token. A value the codec does not want is skipped without being turned into a string:
 * {@link JsonParser#skipChildren()} for objects and arrays, {@link JsonParser#nextToken()} past an
 * unread string.
 *
 * <p>Each thread keeps one parser ({@link EventParser}) and hands it event after event, as one
 * stream of root-level JSON values: a parser and its buffers cost about 570 bytes to open, several
 * times what the rest of an event's decoding allocates. Reading an event never calls out of the
 * codec, so the parser is never in use twice on a thread; an event that fails, or leaves
 * anything but whitespace after its object, retires the thread's parser.
 */
final class EventJson {

	/** Thread-safe and stateless once built; parsers it creates share its name table. */
	static final JsonFactory FACTORY = new JsonFactory();

	private static final ThreadLocal<EventParser> PARSERS = ThreadLocal.withInitial(EventParser::new);

	private static final int DATA_EXCERPT = 120;

	private EventJson() {
	}

	/** What a codec reads out of the root object of an event. */
	interface ObjectReader<T> {

		/**
		 * @param parser on the root object's {@code START_OBJECT}; left on its {@code END_OBJECT}
		 * @param data the event's data
		 * @param dataStart the parser's character offset of the data's first character
		 */
		@Nullable T readObject(JsonParser parser, String data, long dataStart);
	}

	/**
	 * Reads the event's data, which must be one JSON object, with the thread's parser.
	 *
	 * @param position the event's 1-based position in the stream, named in the error
	 * @throws ProviderFormatException naming the event when the data is not a JSON object
	 */
	static <T> @Nullable T read(String provider, SseEvent event, long position, ObjectReader<T> reader) {
		String data = Objects.requireNonNull(event.data(), "data");
		EventParser events = PARSERS.get();
		JsonParser parser = events.start(data);
		boolean clean = false;
		try {
			if (parser.nextToken() != JsonToken.START_OBJECT) {
				throw malformed(provider, event, position, "not a JSON object", null);
			}
			T result = reader.readObject(parser, data, events.dataStart());
			clean = events.endsCleanly(parser);
			return result;
		}
		catch (JacksonException e) {
			throw malformed(provider, event, position, e);
		}
		finally {
			if (!clean) {
				events.retire();
			}
		}
	}

	private static ProviderFormatException malformed(String provider, SseEvent event, long position, JacksonException e) {
		return malformed(provider, event, position, "malformed JSON (" + e.getOriginalMessage() + ")", e);
	}

	private static ProviderFormatException malformed(String provider, SseEvent event, long position, String what,
			@Nullable Throwable cause) {
		String data = Objects.requireNonNullElse(event.data(), "");
		String excerpt = data.length() <= DATA_EXCERPT ? data : data.substring(0, DATA_EXCERPT) + "...";
		return new ProviderFormatException(provider, provider + " event #" + position + " (event: " + event.event()
				+ (event.id() != null ? ", id: " + event.id() : "") + ") is " + what + ": " + excerpt, cause);
	}

	/**
	 * Moves to the next property of the object being read and onto its value.
	 *
	 * @return the property's name, or {@code null} at the end of the object
	 */
	static @Nullable String nextProperty(JsonParser parser) {
		String name = parser.nextName();
		if (name != null) {
			parser.nextToken();
		}
		return name;
	}

	/** @return whether the current token starts an object; any other value is skipped */
	static boolean enterObject(JsonParser parser) {
		if (parser.currentToken() == JsonToken.START_OBJECT) {
			return true;
		}
		parser.skipChildren();
		return false;
	}

	/** @return the current scalar as text (numbers and booleans as written), {@code null} for null, objects and arrays */
	static @Nullable String text(JsonParser parser) {
		JsonToken token = parser.currentToken();
		if (token == JsonToken.VALUE_NULL) {
			return null;
		}
		if (token.isStructStart()) {
			parser.skipChildren();
			return null;
		}
		return parser.getString();
	}

	/** @return whether the current value is a scalar other than null, without reading it */
	static boolean present(JsonParser parser) {
		JsonToken token = parser.currentToken();
		if (token.isStructStart()) {
			parser.skipChildren();
			return false;
		}
		return token != JsonToken.VALUE_NULL;
	}

	/** @return the current number as an int (a fraction truncated), or -1 when it is not a number */
	static int count(JsonParser parser) {
		JsonToken token = parser.currentToken();
		if (token == JsonToken.VALUE_NUMBER_INT) {
			return parser.getNumberType() == JsonParser.NumberType.INT ? parser.getIntValue() : -1;
		}
		if (token == JsonToken.VALUE_NUMBER_FLOAT) {
			return (int) parser.getDoubleValue();
		}
		parser.skipChildren();
		return -1;
	}

	/** @return the current int, or {@code otherwise} when it is not an int-sized whole number */
	static int intOr(JsonParser parser, int otherwise) {
		if (parser.currentToken() == JsonToken.VALUE_NUMBER_INT && parser.getNumberType() == JsonParser.NumberType.INT) {
			return parser.getIntValue();
		}
		parser.skipChildren();
		return otherwise;
	}

	/**
	 * @return the current value as an int the lenient way: a number (truncated), a string holding
	 *         an int, true as 1, false as 0; {@code otherwise} for anything else
	 */
	static int asInt(JsonParser parser, int otherwise) {
		JsonToken token = parser.currentToken();
		if (token.isStructStart()) {
			parser.skipChildren();
			return otherwise;
		}
		if (token == JsonToken.VALUE_NULL) {
			return otherwise;
		}
		if (token == JsonToken.VALUE_NUMBER_INT && parser.getNumberType() != JsonParser.NumberType.INT) {
			return (int) parser.getLongValue();
		}
		return parser.getValueAsInt(otherwise);
	}

	/**
	 * Reads a type-like value: a string equal to one of the names is that name, with no new string
	 * made; any other scalar is its text.
	 *
	 * @return the name, the text, or {@code null} for null, objects and arrays
	 */
	static @Nullable String oneOf(JsonParser parser, String[] names) {
		if (parser.currentToken() == JsonToken.VALUE_STRING) {
			char[] chars = parser.getStringCharacters();
			int offset = parser.getStringOffset();
			int length = parser.getStringLength();
			for (String name : names) {
				if (name.length() == length && equal(name, chars, offset)) {
					return name;
				}
			}
		}
		return text(parser);
	}

	private static boolean equal(String name, char[] chars, int offset) {
		for (int i = 0; i < name.length(); i++) {
			if (name.charAt(i) != chars[offset + i]) {
				return false;
			}
		}
		return true;
	}
}
