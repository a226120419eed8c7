package dev.aiguard.sse;

import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * One server-sent event, or one comment line.
 *
 * <p>A dispatched event has a non-null {@link #event() type} (default {@code "message"}) and
 * non-null {@link #data() data}; its {@link #comment() comment} is {@code null}. A comment line
 * ({@code : keep-alive}) is delivered as its own {@code SseEvent} the moment it is read, with
 * {@link #isComment()} true, the text after the colon in {@link #comment()} and every other
 * component {@code null}: providers send comments as keep-alives, and a codec can map them to
 * heartbeats.
 *
 * <pre>{@code
 * SseDecoder.decode(bytes)
 *     .filter(e -> !e.isComment())
 *     .map(SseEvent::data)
 *     .subscribe(System.out::println);
 * }</pre>
 *
 * @param event the event type ({@code event:} field), {@code "message"} when the event named none;
 *        {@code null} for a comment
 * @param data the {@code data:} lines joined with {@code \n}; {@code null} for a comment
 * @param id the last event id as of this event (WHATWG semantics: it carries over from earlier
 *        events until an {@code id:} field changes it), or {@code null} when none is set
 * @param retry the reconnection time in milliseconds from a {@code retry:} field of this event, or
 *        {@code null}
 * @param comment the comment text without the leading colon and one leading space, or
 *        {@code null} for an event
 */
public record SseEvent(@Nullable String event, @Nullable String data, @Nullable String id, @Nullable Long retry,
		@Nullable String comment) {

	/** The type of an event that has no {@code event:} field. */
	public static final String DEFAULT_TYPE = "message";

	public SseEvent {
		if (comment == null) {
			Objects.requireNonNull(data, "data");
			event = event == null || event.isEmpty() ? DEFAULT_TYPE : event;
		}
		else if (event != null || data != null || id != null || retry != null) {
			throw new IllegalArgumentException("a comment carries no event, data, id or retry, was event=" + event
					+ ", data=" + data + ", id=" + id + ", retry=" + retry);
		}
	}

	/** @return a {@code message} event with this data and no id or retry. */
	public static SseEvent message(String data) {
		return new SseEvent(DEFAULT_TYPE, data, null, null, null);
	}

	/** @return an event of this type with this data and no id or retry. */
	public static SseEvent of(String event, String data) {
		return new SseEvent(event, data, null, null, null);
	}

	/** @return a comment line with this text (without the leading colon). */
	public static SseEvent comment(String text) {
		return new SseEvent(null, null, null, null, Objects.requireNonNull(text, "comment"));
	}

	/** @return whether this is a comment line rather than a dispatched event. */
	public boolean isComment() {
		return comment != null;
	}
}
