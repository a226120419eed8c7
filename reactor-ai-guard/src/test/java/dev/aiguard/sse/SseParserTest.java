package dev.aiguard.sse;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.Consumer;

import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.Tuple;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;
import reactor.core.publisher.Flux;
import reactor.test.subscriber.TestSubscriber;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Properties of the state machine: where chunk boundaries fall never changes the events, nor
 * how malformed input fails. Streams are generated from a model, so the expected events are
 * known independently of the decoder.
 */
class SseParserTest {

	/** One item of a generated stream: a comment or an event. */
	record Item(String comment, String type, List<String> dataLines, String id, Long retry) {
	}

	/** A generated stream: its bytes and the events a correct decoder must produce. */
	record Generated(byte[] bytes, List<SseEvent> expected) {
		@Override
		public String toString() {
			return new String(bytes, StandardCharsets.UTF_8).replace("\r", "\\r").replace("\n", "\\n\n");
		}
	}

	static final String[] EOLS = { "\n", "\r", "\r\n" };

	@Provide
	Arbitrary<Generated> streams() {
		// pieces chosen for the edge cases: colons and leading spaces in values, 2-, 3- and 4-byte
		// characters, an honest U+FFFD, a field name inside a value
		Arbitrary<String> text = Arbitraries.of("a", "Z", " ", ":", "{\"k\":1}", "\u00e9", "\u4e2d", "\ud83d\ude00", "\ufffd", "data")
			.list().ofMaxSize(6).map(l -> String.join("", l));
		Arbitrary<String> nonEmpty = text.filter(t -> !t.isEmpty());
		Arbitrary<Item> comment = text.map(t -> new Item(t, null, null, null, null));
		Arbitrary<Item> event = Combinators.combine(
				Arbitraries.oneOf(Arbitraries.just((String) null), Arbitraries.of("message", "content_block_delta", "ping", "\u00e9v")),
				text.list().ofMinSize(1).ofMaxSize(3),
				Arbitraries.oneOf(Arbitraries.just((String) null), nonEmpty),
				Arbitraries.oneOf(Arbitraries.just((Long) null), Arbitraries.longs().between(0, 100_000)))
			.as((type, data, id, retry) -> new Item(null, type, data, id, retry));
		Arbitrary<List<Item>> items = Arbitraries.frequencyOf(Tuple.of(1, comment), Tuple.of(4, event)).list().ofMaxSize(8);
		Arbitrary<List<Integer>> eolChoices = Arbitraries.integers().between(0, 2).list().ofSize(64);
		return Combinators.combine(items, eolChoices, Arbitraries.of(true, false), Arbitraries.of(true, false))
			.as(SseParserTest::serialise);
	}

	/** Writes the items as SSE with varied line endings and spacing, and computes the expected events. */
	static Generated serialise(List<Item> items, List<Integer> eolChoices, boolean bom, boolean spaceAfterColon) {
		StringBuilder out = new StringBuilder(bom ? "\ufeff" : "");
		List<SseEvent> expected = new ArrayList<>();
		int[] eolIndex = { 0 };
		boolean[] lastWasCr = { false };
		Consumer<String> line = l -> {
			String eol = EOLS[eolChoices.get(eolIndex[0]++ % eolChoices.size())];
			// after a lone \r, a blank line written as \n would merge into one \r\n: use \r instead
			if (l.isEmpty() && lastWasCr[0] && eol.equals("\n")) {
				eol = "\r";
			}
			out.append(l).append(eol);
			lastWasCr[0] = eol.equals("\r");
		};
		String sep = spaceAfterColon ? ": " : ":";
		String lastId = null;
		for (Item item : items) {
			if (item.comment() != null) {
				line.accept(":" + (item.comment().startsWith(" ") || spaceAfterColon ? " " : "") + item.comment());
				expected.add(SseEvent.comment(item.comment()));
				continue;
			}
			if (item.type() != null) {
				line.accept("event: " + item.type());
			}
			if (item.id() != null) {
				line.accept("id: " + item.id());
				lastId = item.id();
			}
			if (item.retry() != null) {
				line.accept("retry" + sep + item.retry());
			}
			for (String d : item.dataLines()) {
				// a value that starts with a space needs the separating space written out
				line.accept(d.isEmpty() && !spaceAfterColon ? "data" : "data" + (d.startsWith(" ") ? ": " : sep) + d);
			}
			line.accept("");
			expected.add(new SseEvent(item.type(), String.join("\n", item.dataLines()), lastId, item.retry(), null));
		}
		return new Generated(out.toString().getBytes(StandardCharsets.UTF_8), List.copyOf(expected));
	}

	static List<ByteBuffer> split(byte[] bytes, List<Integer> cuts, boolean direct) {
		int[] points = cuts.stream().mapToInt(c -> Math.floorMod(c, bytes.length + 1)).sorted().distinct().toArray();
		List<ByteBuffer> chunks = new ArrayList<>();
		int from = 0;
		for (int p : points) {
			chunks.add(slice(bytes, from, p, direct && chunks.size() % 2 == 0));
			from = p;
		}
		chunks.add(slice(bytes, from, bytes.length, direct && chunks.size() % 2 == 0));
		return chunks;
	}

	static ByteBuffer slice(byte[] bytes, int from, int to, boolean direct) {
		if (direct) {
			return ByteBuffer.allocateDirect(to - from).put(bytes, from, to - from).flip();
		}
		// a slice of a larger array, so array offsets are exercised too
		return ByteBuffer.wrap(bytes, from, to - from).slice();
	}

	/** Feeds the chunks to a parser; the events, then the error as text if one was thrown. */
	static List<Object> parse(List<ByteBuffer> chunks, int maxLineBytes) {
		List<Object> signals = new ArrayList<>();
		SseParser parser = new SseParser(maxLineBytes, 1 << 20, signals::add);
		try {
			for (ByteBuffer chunk : chunks) {
				parser.feed(chunk);
			}
			parser.finish();
		}
		catch (SseFormatException e) {
			signals.add(e.getClass().getName() + ": " + e.getMessage());
		}
		return signals;
	}

	@Property(tries = 500)
	void everySplitParsesToTheModelsEvents(@ForAll("streams") Generated stream,
			@ForAll @Size(max = 12) List<@IntRange(min = 0, max = 4096) Integer> cuts, @ForAll boolean direct) {
		assertThat(parse(List.of(ByteBuffer.wrap(stream.bytes())), 1 << 20)).isEqualTo(stream.expected());
		assertThat(parse(split(stream.bytes(), cuts, direct), 1 << 20)).isEqualTo(stream.expected());
	}

	@Property(tries = 200)
	void oneByteChunksThroughTheOperatorGiveTheModelsEvents(@ForAll("streams") Generated stream) {
		byte[] b = stream.bytes();
		Flux<ByteBuffer> bytes = Flux.range(0, b.length).map(i -> ByteBuffer.wrap(b, i, 1));
		assertThat(SseDecoder.defaults().decode(bytes).collectList().block()).isEqualTo(stream.expected());
	}

	@Property(tries = 200)
	void anyRequestPatternGetsTheEventsInOrderAndNeverMoreThanRequested(@ForAll("streams") Generated stream,
			@ForAll @Size(max = 8) List<@IntRange(min = 0, max = 4096) Integer> cuts,
			@ForAll @Size(min = 1, max = 20) List<@IntRange(min = 1, max = 3) Integer> requests) {
		TestSubscriber<SseEvent> subscriber = TestSubscriber.<SseEvent>builder().initialRequest(0).build();
		SseDecoder.defaults().decode(Flux.fromIterable(split(stream.bytes(), cuts, false))).subscribe(subscriber);
		long requested = 0;
		for (int n : requests) {
			subscriber.request(n);
			requested += n;
			assertThat(subscriber.getReceivedOnNext()).hasSizeLessThanOrEqualTo((int) requested);
		}
		subscriber.request(Long.MAX_VALUE);
		assertThat(subscriber.isTerminatedComplete()).isTrue();
		assertThat(subscriber.getReceivedOnNext()).isEqualTo(stream.expected());
	}

	@Property(tries = 300)
	void malformedInputFailsTheSameWayForEverySplit(@ForAll("streams") Generated stream, @ForAll boolean direct,
			@ForAll @Size(max = 8) List<@IntRange(min = 0, max = 4096) Integer> cuts) {
		// a stray continuation byte inside a data value at the end, and lines over 64 bytes anywhere
		byte[] corrupt = "data: x\u00e9\n\n".getBytes(StandardCharsets.UTF_8);
		corrupt[7] = (byte) 0x80;
		byte[] all = Arrays.copyOf(stream.bytes(), stream.bytes().length + corrupt.length);
		System.arraycopy(corrupt, 0, all, stream.bytes().length, corrupt.length);

		List<Object> whole = parse(List.of(ByteBuffer.wrap(all)), 64);
		assertThat(whole.get(whole.size() - 1)).asString().startsWith(SseFormatException.class.getName());
		assertThat(parse(split(all, cuts, direct), 64)).isEqualTo(whole);
	}
}
