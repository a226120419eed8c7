package dev.aiguard.provider;

import java.io.Reader;

import tools.jackson.core.JsonParser;

import org.jspecify.annotations.Nullable;

/**
 * One thread's parser, and the {@link Reader} it reads event data through: each event's data is
 * handed to the same parser as the next root-level value of one endless document, so the parser,
 * its buffers and its name table are made once per thread, not once per event. The reader ends
 * (returns -1) when the current data is used up, so data cut short is an unexpected end of input,
 * as it would be for a parser of its own; the parser is retired then, and made anew for the next
 * event.
 */
final class EventParser extends Reader {

	private @Nullable JsonParser parser;
	private String data = "";
	private int position;
	/** The characters handed to the parser so far. */
	private long handed;
	private long dataStart;

	/** @return the thread's parser, about to read {@code data} */
	JsonParser start(String data) {
		this.data = data;
		position = 0;
		dataStart = handed;
		JsonParser current = parser;
		if (current == null) {
			current = EventJson.FACTORY.createParser(this);
			parser = current;
		}
		return current;
	}

	/** @return the parser's character offset of the current data's first character */
	long dataStart() {
		return dataStart;
	}

	/**
	 * @param parser on the end of the root object
	 * @return whether only whitespace follows the object in the data (it is ignored, as any
	 *         trailing content of an event's data is); anything else would be read as the next
	 *         event's beginning, so the parser must be retired
	 */
	boolean endsCleanly(JsonParser parser) {
		for (long i = parser.currentLocation().getCharOffset() - dataStart; i < data.length(); i++) {
			char c = data.charAt((int) i);
			if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
				return false;
			}
		}
		return true;
	}

	/** Drops the parser after a failure or a trailing value; the next event gets a new one. */
	void retire() {
		JsonParser current = parser;
		parser = null;
		data = "";
		position = 0;
		handed = 0;
		if (current != null) {
			current.close();
		}
	}

	@Override
	public int read(char[] buffer, int offset, int length) {
		int n = Math.min(length, data.length() - position);
		if (n <= 0) {
			return -1;
		}
		data.getChars(position, position + n, buffer, offset);
		position += n;
		handed += n;
		return n;
	}

	@Override
	public void close() {
		// the data are strings; nothing to release
	}
}
