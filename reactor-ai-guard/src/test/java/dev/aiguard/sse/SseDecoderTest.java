package dev.aiguard.sse;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.buffer.UnpooledByteBufAllocator;
import org.junit.jupiter.api.Test;
import org.springframework.core.io.buffer.DataBuffer;
import org.springframework.core.io.buffer.NettyDataBufferFactory;
import reactor.core.publisher.Flux;
import reactor.core.scheduler.Schedulers;
import reactor.test.StepVerifier;
import reactor.test.publisher.TestPublisher;
import reactor.test.subscriber.TestSubscriber;
import reactor.test.util.RaceTestUtils;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class SseDecoderTest {

	static final String OPENAI = """
			data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}

			data: {"choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}]}

			: keep-alive

			data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}

			data: [DONE]

			""";

	static ByteBuffer utf8(String s) {
		return ByteBuffer.wrap(s.getBytes(StandardCharsets.UTF_8));
	}

	static List<SseEvent> decode(String... chunks) {
		return SseDecoder.defaults().decode(Flux.fromArray(chunks).map(SseDecoderTest::utf8)).collectList().block();
	}

	static List<SseEvent> decodeBytes(byte[]... chunks) {
		return SseDecoder.defaults().decode(Flux.fromArray(chunks).map(ByteBuffer::wrap)).collectList().block();
	}

	static SseEvent event(String type, String data, String id) {
		return new SseEvent(type, data, id, null, null);
	}

	@Test
	void decodesAnOpenAiStreamWithAKeepAliveComment() {
		assertThat(decode(OPENAI)).containsExactly(
				SseEvent.message("{\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}"),
				SseEvent.message("{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"},\"finish_reason\":null}]}"),
				SseEvent.comment("keep-alive"),
				SseEvent.message("{\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}"),
				SseEvent.message("[DONE]"));
	}

	@Test
	void acceptsEveryLineEndingAndMixesThem() {
		assertThat(decode("data: a\r\n\r\ndata: b\n\ndata: c\r\rdata: d\r\n\ndata: e\n\r"))
				.extracting(SseEvent::data)
				.containsExactly("a", "b", "c", "d", "e");
	}

	@Test
	void joinsDataLinesWithLineFeed() {
		assertThat(decode("data: one\ndata: two\ndata\ndata:three\n\n"))
				.containsExactly(SseEvent.message("one\ntwo\n\nthree"));
	}

	@Test
	void stripsExactlyOneLeadingSpace() {
		assertThat(decode("data:  two spaces\n\ndata:none\n\n"))
				.extracting(SseEvent::data)
				.containsExactly(" two spaces", "none");
	}

	@Test
	void fieldWithoutColonHasAnEmptyValue() {
		assertThat(decode("data\n\n")).containsExactly(SseEvent.message(""));
	}

	@Test
	void blankLineWithoutDataDispatchesNothingAndResetsTheType() {
		assertThat(decode("event: ping\n\n\n\ndata: x\n\n")).containsExactly(SseEvent.message("x"));
	}

	@Test
	void eventTypeAppliesToOneEventOnly() {
		assertThat(decode("event: content_block_delta\ndata: 1\n\ndata: 2\n\nevent: content_block_delta\ndata: 3\n\n"))
				.containsExactly(SseEvent.of("content_block_delta", "1"), SseEvent.message("2"),
						SseEvent.of("content_block_delta", "3"));
	}

	@Test
	void lastEventIdCarriesOverUntilChanged() {
		assertThat(decode("id: 1\ndata: a\n\ndata: b\n\nid\ndata: c\n\nid: x\u0000y\ndata: d\n\nid: 7\ndata: e\n\n"))
				.containsExactly(event("message", "a", "1"), event("message", "b", "1"), event("message", "c", null),
						event("message", "d", null), event("message", "e", "7"));
	}

	@Test
	void retryTakesDigitsOnlyAndBelongsToTheNextEvent() {
		List<SseEvent> events = decode("retry: 1500\ndata: a\n\nretry: 2s\ndata: b\n\nretry: 30\n\ndata: c\n\n");
		assertThat(events).extracting(SseEvent::retry).containsExactly(1500L, null, 30L);
	}

	@Test
	void unknownFieldsAreIgnored() {
		assertThat(decode("foo: bar\ndata: a\nDATA: b\nevent2: c\n\n")).containsExactly(SseEvent.message("a"));
	}

	@Test
	void commentsAreDeliveredAtOnceWithoutTheirColonAndOneSpace() {
		assertThat(decode(":ping\n:  two\ndata: a\n: inside\n\n")).containsExactly(SseEvent.comment("ping"),
				SseEvent.comment(" two"), SseEvent.comment("inside"), SseEvent.message("a"));
	}

	@Test
	void skipsOneByteOrderMarkAtStreamStartOnly() {
		byte[] bom = { (byte) 0xEF, (byte) 0xBB, (byte) 0xBF };
		byte[] rest = "data: a\n\n".getBytes(StandardCharsets.UTF_8);
		assertThat(decodeBytes(bom, rest)).containsExactly(SseEvent.message("a"));
		// a second BOM is part of the field name, which is then unknown
		assertThat(decodeBytes(bom, bom, rest)).isEmpty();
		// split inside the BOM
		assertThat(decodeBytes(new byte[] { (byte) 0xEF }, new byte[] { (byte) 0xBB, (byte) 0xBF, 'd' },
				"ata: a\n\n".getBytes(StandardCharsets.UTF_8))).containsExactly(SseEvent.message("a"));
	}

	@Test
	void eventCutOffByTheEndOfTheStreamIsDropped() {
		assertThat(decode("data: a\n\ndata: b\n")).containsExactly(SseEvent.message("a"));
		assertThat(decode("data: a\n\ndata: b")).containsExactly(SseEvent.message("a"));
	}

	@Test
	void crLfSplitAcrossChunksIsOneLineEnding() {
		// were the \n taken as a second line ending, "a" would be dispatched alone
		assertThat(decode("data: a\r", "\ndata: b\r", "\n\r", "\n")).containsExactly(SseEvent.message("a\nb"));
	}

	@Test
	void multiByteCharacterSplitAcrossChunksDecodes() {
		byte[] all = "data: h\u00e9\u4e2d\ud83d\ude00!\n\n".getBytes(StandardCharsets.UTF_8);
		for (int cut = 1; cut < all.length; cut++) {
			byte[] a = java.util.Arrays.copyOfRange(all, 0, cut);
			byte[] b = java.util.Arrays.copyOfRange(all, cut, all.length);
			assertThat(decodeBytes(a, b)).as("cut at %d", cut).containsExactly(SseEvent.message("h\u00e9\u4e2d\ud83d\ude00!"));
		}
	}

	@Test
	void everySingleSplitAndOneByteChunksDecodeLikeTheWholeStream() {
		byte[] all = ("\ufeffevent: x\r\ndata: \u00e9t\u00e9\r\n: c\r\nid: 1\rretry: 5\n\ndata\n\n" + OPENAI)
				.getBytes(StandardCharsets.UTF_8);
		List<SseEvent> whole = decodeBytes(all);
		assertThat(whole).hasSize(8);
		for (int cut = 0; cut <= all.length; cut++) {
			assertThat(decodeBytes(java.util.Arrays.copyOfRange(all, 0, cut),
					java.util.Arrays.copyOfRange(all, cut, all.length))).as("cut at %d", cut).isEqualTo(whole);
		}
		byte[][] single = new byte[all.length][];
		for (int i = 0; i < all.length; i++) {
			single[i] = new byte[] { all[i] };
		}
		assertThat(decodeBytes(single)).isEqualTo(whole);
	}

	@Test
	void readsDirectAndSlicedBuffersWithoutMovingTheirPosition() {
		byte[] bytes = "xxdata: a\n\nyy".getBytes(StandardCharsets.UTF_8);
		ByteBuffer sliced = ByteBuffer.wrap(bytes, 2, bytes.length - 4).slice();
		ByteBuffer direct = ByteBuffer.allocateDirect(16).put("data: b\n\n".getBytes(StandardCharsets.UTF_8)).flip();
		List<SseEvent> events = SseDecoder.defaults().decode(Flux.just(sliced, direct)).collectList().block();
		assertThat(events).containsExactly(SseEvent.message("a"), SseEvent.message("b"));
		assertThat(sliced.position()).isZero();
		assertThat(direct.position()).isZero();
	}

	// ---- properties: chunk boundaries do not matter ----

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
		// pieces chosen to hit the edge cases: colons and leading spaces in values, 2-, 3- and
		// 4-byte characters, an honest U+FFFD
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
		Arbitrary<List<Item>> items = Arbitraries.frequencyOf(
				net.jqwik.api.Tuple.of(1, comment), net.jqwik.api.Tuple.of(4, event)).list().ofMaxSize(8);
		Arbitrary<List<Integer>> eolChoices = Arbitraries.integers().between(0, 2).list().ofSize(64);
		return Combinators.combine(items, eolChoices, Arbitraries.of(true, false), Arbitraries.of(true, false))
			.as(SseDecoderTest::serialise);
	}

	/** Writes the items as SSE with varied line endings and spacing, and computes the expected events. */
	static Generated serialise(List<Item> items, List<Integer> eolChoices, boolean bom, boolean spaceAfterColon) {
		StringBuilder out = new StringBuilder(bom ? "\ufeff" : "");
		List<SseEvent> expected = new ArrayList<>();
		int[] eolIndex = { 0 };
		boolean[] lastWasCr = { false };
		java.util.function.Consumer<String> line = l -> {
			String eol = EOLS[eolChoices.get(eolIndex[0]++ % eolChoices.size())];
			// after a lone \r, a blank line written as \n would merge into \r\n: use \r instead
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

	@Property(tries = 500)
	void everySplitDecodesToTheSameEventsAsTheWholeStream(@ForAll("streams") Generated stream,
			@ForAll @Size(max = 12) List<@IntRange(min = 0, max = 4096) Integer> cuts, @ForAll boolean direct) {
		List<SseEvent> whole = SseDecoder.defaults().decode(Flux.just(ByteBuffer.wrap(stream.bytes()))).collectList().block();
		assertThat(whole).isEqualTo(stream.expected());
		List<SseEvent> pieces = SseDecoder.defaults().decode(Flux.fromIterable(split(stream.bytes(), cuts, direct)))
			.collectList().block();
		assertThat(pieces).isEqualTo(whole);
	}

	@Property(tries = 200)
	void oneByteChunksDecodeToTheSameEvents(@ForAll("streams") Generated stream) {
		byte[] b = stream.bytes();
		Flux<ByteBuffer> bytes = Flux.range(0, b.length).map(i -> ByteBuffer.wrap(b, i, 1));
		assertThat(SseDecoder.defaults().decode(bytes).collectList().block()).isEqualTo(stream.expected());
	}

	@Property(tries = 200)
	void malformedInputFailsTheSameWayForEverySplit(@ForAll("streams") Generated stream,
			@ForAll @IntRange(min = 0, max = 4096) int where, @ForAll @Size(max = 8) List<@IntRange(min = 0, max = 4096) Integer> cuts) {
		// a stray continuation byte inside a data value, or a line over the limit
		byte[] tail = "data: x\u00e9\n\n".getBytes(StandardCharsets.UTF_8);
		byte[] corrupt = java.util.Arrays.copyOf(tail, tail.length);
		corrupt[7] = (byte) 0x80;
		byte[] all = new byte[stream.bytes().length + corrupt.length];
		System.arraycopy(stream.bytes(), 0, all, 0, stream.bytes().length);
		System.arraycopy(corrupt, 0, all, stream.bytes().length, corrupt.length);
		SseDecoder decoder = SseDecoder.builder().maxLineBytes(64).build();

		List<Object> whole = signals(decoder, Flux.just(ByteBuffer.wrap(all)));
		List<Object> pieces = signals(decoder, Flux.fromIterable(split(all, cuts, where % 2 == 0)));
		assertThat(pieces).isEqualTo(whole);
		assertThat(whole.get(whole.size() - 1)).asString().startsWith(SseFormatException.class.getName());
	}

	/** Events and the error, as comparable values. */
	static List<Object> signals(SseDecoder decoder, Flux<ByteBuffer> chunks) {
		List<Object> signals = new ArrayList<>();
		decoder.decode(chunks).doOnNext(signals::add)
			.onErrorResume(e -> {
				signals.add(e.getClass().getName() + ": " + e.getMessage());
				return Flux.empty();
			})
			.blockLast();
		return signals;
	}

	// ---- limits and malformed input ----

	@Test
	void endlessLineFailsAtTheLimitAndCancelsUpstream() {
		AtomicLong chunksSent = new AtomicLong();
		AtomicInteger cancelled = new AtomicInteger();
		byte[] noNewline = new byte[1024];
		java.util.Arrays.fill(noNewline, (byte) 'a');
		Flux<ByteBuffer> endless = Flux.<ByteBuffer>generate(sink -> {
			chunksSent.incrementAndGet();
			sink.next(ByteBuffer.wrap(noNewline));
		}).doOnCancel(cancelled::incrementAndGet);

		StepVerifier.create(SseDecoder.builder().maxLineBytes(4096).build().decode(endless))
				.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(SseFormatException.class)
						.hasMessageContaining("maxLineBytes=4096"))
				.verify();
		assertThat(chunksSent.get()).isEqualTo(5);
		assertThat(cancelled.get()).isEqualTo(1);
	}

	@Test
	void lineAtTheLimitPassesOneByteMoreFails() {
		String payload = "x".repeat(100 - "data: ".length());
		SseDecoder decoder = SseDecoder.builder().maxLineBytes(100).build();
		assertThat(decoder.decode(Flux.just(utf8("data: " + payload + "\n\n"))).collectList().block())
				.containsExactly(SseEvent.message(payload));
		StepVerifier.create(decoder.decode(Flux.just(utf8("data: ok\n\n"), utf8("data: " + payload + "y\n\n"))))
				.expectNext(SseEvent.message("ok"))
				.expectErrorSatisfies(e -> assertThat(((SseFormatException) e).offset()).isEqualTo(10))
				.verify();
	}

	@Test
	void eventWhoseDataGrowsPastTheLimitFails() {
		SseDecoder decoder = SseDecoder.builder().maxEventBytes(20).build();
		// 3 lines of 6 bytes + 2 separators = 20: fits
		assertThat(decoder.decode(Flux.just(utf8("data: 123456\ndata: 123456\ndata: 123456\n\n"))).collectList().block())
				.containsExactly(SseEvent.message("123456\n123456\n123456"));
		Flux<ByteBuffer> endless = Flux.generate(sink -> sink.next(utf8("data: 123456\n")));
		StepVerifier.create(decoder.decode(endless))
				.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(SseFormatException.class)
						.hasMessageContaining("maxEventBytes=20"))
				.verify();
	}

	@Test
	void invalidUtf8IsAnErrorNotReplacementCharacters() {
		byte[][] malformed = { { (byte) 0xC3, '(' }, { (byte) 0xED, (byte) 0xA0, (byte) 0x80 }, { (byte) 0xC0, (byte) 0xAF },
				{ (byte) 0xFF }, { (byte) 0xE4, (byte) 0xB8 } };
		for (byte[] bad : malformed) {
			byte[] prefix = "data: ok\n\ndata: a".getBytes(StandardCharsets.UTF_8);
			byte[] suffix = "b\n\n".getBytes(StandardCharsets.UTF_8);
			StepVerifier.create(SseDecoder.defaults().decode(Flux.just(prefix, bad, suffix).map(ByteBuffer::wrap)))
					.expectNext(SseEvent.message("ok"))
					.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(SseFormatException.class)
							.hasMessageContaining("invalid UTF-8"))
					.verify();
		}
		// field values other than data are checked too
		assertThatThrownBy(() -> decodeBytes("event: ".getBytes(StandardCharsets.UTF_8), new byte[] { (byte) 0xED, (byte) 0xA0,
				(byte) 0x80, '\n' }, "data: a\n\n".getBytes(StandardCharsets.UTF_8))).isInstanceOf(SseFormatException.class);
	}

	@Test
	void anHonestReplacementCharacterIsKept() {
		assertThat(decode("data: \ufffd\n\n")).containsExactly(SseEvent.message("\ufffd"));
	}

	@Test
	void builderRejectsNonPositiveLimitsNamingFieldAndValue() {
		assertThatThrownBy(() -> SseDecoder.builder().maxLineBytes(0))
				.isInstanceOf(IllegalArgumentException.class).hasMessage("maxLineBytes must be > 0, was 0");
		assertThatThrownBy(() -> SseDecoder.builder().maxEventBytes(-5))
				.isInstanceOf(IllegalArgumentException.class).hasMessage("maxEventBytes must be > 0, was -5");
	}

	// ---- backpressure and cancellation ----

	@Test
	void emitsNoMoreThanRequestedAndAsksUpstreamForOneChunkAtATime() {
		List<Long> upstreamRequests = new CopyOnWriteArrayList<>();
		Flux<ByteBuffer> source = Flux.just(utf8("data: 1\n\ndata: 2\n\ndata: 3\n\n"), utf8("data: 4\n\n"))
				.doOnRequest(upstreamRequests::add);
		StepVerifier.create(SseDecoder.defaults().decode(source), 0)
				.expectSubscription()
				.expectNoEvent(java.time.Duration.ofMillis(10))
				.then(() -> assertThat(upstreamRequests).isEmpty())
				.thenRequest(1)
				.expectNext(SseEvent.message("1"))
				.then(() -> assertThat(upstreamRequests).containsExactly(1L))
				.thenRequest(2)
				.expectNext(SseEvent.message("2"), SseEvent.message("3"))
				.expectNoEvent(java.time.Duration.ofMillis(10))
				.then(() -> assertThat(upstreamRequests).containsExactly(1L))
				.thenRequest(1)
				.expectNext(SseEvent.message("4"))
				.thenRequest(1)
				.verifyComplete();
	}

	@Test
	void completesWithoutDemandOnceEverythingWasDelivered() {
		StepVerifier.create(SseDecoder.defaults().decode(Flux.just(utf8("data: 1\n\n"))), 1)
				.expectNext(SseEvent.message("1"))
				.verifyComplete();
	}

	@Test
	void cancelPropagatesUpstream() {
		TestPublisher<ByteBuffer> upstream = TestPublisher.create();
		StepVerifier.create(SseDecoder.defaults().decode(upstream))
				.then(() -> upstream.next(utf8("data: 1\n\n")))
				.expectNext(SseEvent.message("1"))
				.thenCancel()
				.verify();
		upstream.assertCancelled();
	}

	@Test
	void malformedInputCancelsUpstreamAfterDeliveringEarlierEvents() {
		TestPublisher<ByteBuffer> upstream = TestPublisher.create();
		StepVerifier.create(SseDecoder.builder().maxLineBytes(8).build().decode(upstream))
				.then(() -> upstream.next(utf8("data: 1\n\ndata: far too long\n\n")))
				.expectNext(SseEvent.message("1"))
				.expectError(SseFormatException.class)
				.verify();
		upstream.assertCancelled();
	}

	@Test
	void eventsArriveInOrderExactlyOnceWhenRequestsRaceChunks() {
		for (int round = 0; round < 200; round++) {
			reactor.core.publisher.Sinks.Many<ByteBuffer> upstream =
					reactor.core.publisher.Sinks.many().unicast().onBackpressureBuffer();
			TestSubscriber<SseEvent> subscriber = TestSubscriber.<SseEvent>builder().initialRequest(0).build();
			SseDecoder.defaults().decode(upstream.asFlux()).subscribe(subscriber);
			subscriber.request(1);
			int base = round * 10;
			RaceTestUtils.race(() -> {
				for (int i = 0; i < 5; i++) {
					upstream.tryEmitNext(utf8("data: " + (base + 2 * i) + "\n\ndata: " + (base + 2 * i + 1) + "\n\n"))
						.orThrow();
				}
			}, () -> {
				for (int i = 0; i < 9; i++) {
					subscriber.request(1);
				}
			});
			upstream.tryEmitComplete().orThrow();
			subscriber.block(java.time.Duration.ofSeconds(5));
			assertThat(subscriber.isTerminatedComplete()).isTrue();
			List<String> expected = new ArrayList<>();
			for (int i = 0; i < 10; i++) {
				expected.add(String.valueOf(base + i));
			}
			assertThat(subscriber.getReceivedOnNext()).extracting(SseEvent::data).isEqualTo(expected);
		}
	}

	@Test
	void deliversOnTheRequestingThreadWhenUpstreamIsAsync() {
		Flux<ByteBuffer> async = Flux.just(utf8("data: 1\n\n"), utf8("data: 2\n\n")).publishOn(Schedulers.single());
		StepVerifier.create(SseDecoder.defaults().decode(async), 0)
				.thenRequest(1)
				.expectNext(SseEvent.message("1"))
				.thenRequest(5)
				.expectNext(SseEvent.message("2"))
				.verifyComplete();
	}

	// ---- Netty and Spring buffers ----

	@Test
	void releasesEveryByteBufOnSuccessErrorAndLateArrival() {
		List<ByteBuf> bufs = List.of(Unpooled.copiedBuffer("data: a\n", StandardCharsets.UTF_8),
				UnpooledByteBufAllocator.DEFAULT.directBuffer().writeBytes("\n".getBytes(StandardCharsets.UTF_8)));
		assertThat(SseDecoder.defaults().decodeByteBufs(Flux.fromIterable(bufs)).collectList().block())
				.containsExactly(SseEvent.message("a"));
		assertThat(bufs).allSatisfy(b -> assertThat(b.refCnt()).isZero());

		// a raw publisher that keeps sending after cancellation, as a racing upstream may
		java.util.concurrent.atomic.AtomicReference<org.reactivestreams.Subscriber<? super ByteBuf>> subscriber =
				new java.util.concurrent.atomic.AtomicReference<>();
		org.reactivestreams.Publisher<ByteBuf> raw = s -> {
			subscriber.set(s);
			s.onSubscribe(new org.reactivestreams.Subscription() {
				@Override
				public void request(long n) {
				}

				@Override
				public void cancel() {
				}
			});
		};
		ByteBuf bad = Unpooled.wrappedBuffer(new byte[] { 'd', 'a', 't', 'a', ':', (byte) 0xFF, '\n', '\n' });
		ByteBuf late = Unpooled.copiedBuffer("data: b\n\n", StandardCharsets.UTF_8);
		StepVerifier.create(SseDecoder.defaults().decodeByteBufs(raw))
				.then(() -> subscriber.get().onNext(bad))
				.expectError(SseFormatException.class)
				.verify();
		subscriber.get().onNext(late);
		assertThat(bad.refCnt()).isZero();
		assertThat(late.refCnt()).isZero();
	}

	@Test
	void releasesDataBuffersAndReadsTheirViews() {
		NettyDataBufferFactory factory = new NettyDataBufferFactory(UnpooledByteBufAllocator.DEFAULT);
		List<DataBuffer> buffers = List.of(factory.wrap("data: h\u00e9".getBytes(StandardCharsets.UTF_8)),
				factory.wrap("llo\n\n".getBytes(StandardCharsets.UTF_8)));
		assertThat(SseDecoder.defaults().decodeDataBuffers(Flux.fromIterable(buffers)).collectList().block())
				.containsExactly(SseEvent.message("h\u00e9llo"));
		assertThat(buffers).allSatisfy(b -> assertThat(((org.springframework.core.io.buffer.NettyDataBuffer) b)
				.getNativeBuffer().refCnt()).isZero());
	}

	@Test
	void decodesByteBuffersWithoutNettyOrSpringOnTheClassPath() throws Exception {
		ClassLoader withoutOptionals = new IsolatingLoader(getClass().getClassLoader());
		Class<?> test = withoutOptionals.loadClass(WithoutOptionalDependencies.class.getName());
		assertThat(test.getClassLoader()).isSameAs(withoutOptionals);
		@SuppressWarnings("unchecked")
		List<String> data = (List<String>) test.getMethod("run").invoke(null);
		assertThat(data).containsExactly("a");
		assertThatThrownBy(() -> withoutOptionals.loadClass("io.netty.buffer.ByteBuf"))
				.isInstanceOf(ClassNotFoundException.class);
	}

	/** Runs inside {@link IsolatingLoader}: Netty and Spring cannot be loaded there. */
	public static final class WithoutOptionalDependencies {

		public static List<String> run() {
			return SseDecoder.builder().maxLineBytes(100).build()
					.decode(Flux.just(ByteBuffer.wrap("data: a\n\n".getBytes(StandardCharsets.UTF_8))))
					.map(SseEvent::data)
					.collectList()
					.block();
		}
	}

	/** Defines {@code dev.aiguard.sse} classes itself and refuses Netty and Spring. */
	static final class IsolatingLoader extends ClassLoader {

		IsolatingLoader(ClassLoader parent) {
			super(parent);
		}

		@Override
		protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
			synchronized (getClassLoadingLock(name)) {
				if (name.startsWith("io.netty.") || name.startsWith("org.springframework.")) {
					throw new ClassNotFoundException(name + " (hidden by the test)");
				}
				if (!name.startsWith("dev.aiguard.sse.")) {
					return super.loadClass(name, resolve);
				}
				Class<?> c = findLoadedClass(name);
				if (c == null) {
					try (InputStream in = getParent().getResourceAsStream(name.replace('.', '/') + ".class")) {
						if (in == null) {
							throw new ClassNotFoundException(name);
						}
						ByteArrayOutputStream out = new ByteArrayOutputStream();
						in.transferTo(out);
						byte[] b = out.toByteArray();
						c = defineClass(name, b, 0, b.length);
					}
					catch (IOException e) {
						throw new ClassNotFoundException(name, e);
					}
				}
				if (resolve) {
					resolveClass(c);
				}
				return c;
			}
		}
	}
}
