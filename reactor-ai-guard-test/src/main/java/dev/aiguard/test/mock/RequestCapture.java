package dev.aiguard.test.mock;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.atomic.AtomicInteger;

import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelPipeline;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.LastHttpContent;
import org.jspecify.annotations.Nullable;
import reactor.netty.NettyPipeline;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * The bounded log of requests the server received. It reads them off the channel pipeline, right
 * after the HTTP codec, so every route (and a request no route takes) is captured without its
 * handler doing anything, and the handler still reads the body as usual.
 */
final class RequestCapture {

	/** The most of a body kept. */
	static final int MAX_BODY_BYTES = 4 * 1024 * 1024;

	private final int limit;
	private final JsonMapper json;
	private final ConcurrentLinkedDeque<CapturedRequest> log = new ConcurrentLinkedDeque<>();
	private final AtomicInteger size = new AtomicInteger();

	RequestCapture(int limit, JsonMapper json) {
		this.limit = limit;
		this.json = json;
	}

	/** Adds a capturing handler to a new connection's pipeline. */
	void install(ChannelPipeline pipeline) {
		if (pipeline.get(NettyPipeline.HttpCodec) != null) {
			pipeline.addAfter(NettyPipeline.HttpCodec, "aiguard.mock.capture", new ChannelCapture());
		}
	}

	List<CapturedRequest> snapshot() {
		return List.copyOf(new ArrayList<>(log));
	}

	@Nullable
	CapturedRequest last() {
		return log.peekLast();
	}

	void clear() {
		while (log.pollFirst() != null) {
			size.decrementAndGet();
		}
	}

	private void record(CapturedRequest request) {
		log.addLast(request);
		// over the limit: drop the oldest (a racing clear() may have emptied the log already)
		if (size.incrementAndGet() > limit && log.pollFirst() != null) {
			size.decrementAndGet();
		}
	}

	@Nullable
	private JsonNode parse(String body) {
		if (body.isBlank()) {
			return null;
		}
		try {
			return json.readTree(body);
		}
		catch (JacksonException notJson) {
			return null;
		}
	}

	/** One per connection: requests on a connection arrive one after the other. */
	private final class ChannelCapture extends ChannelInboundHandlerAdapter {

		@Nullable
		private HttpRequest head;
		@Nullable
		private Instant receivedAt;
		private final ByteArrayOutputStream body = new ByteArrayOutputStream();

		@Override
		public void channelRead(ChannelHandlerContext ctx, Object msg) {
			if (msg instanceof HttpRequest request) {
				head = request;
				receivedAt = Instant.now();
				body.reset();
				if (!HttpUtil.isTransferEncodingChunked(request) && HttpUtil.getContentLength(request, 0L) == 0L) {
					// no body to wait for: record now, before a handler that does not read one can answer
					finish();
				}
			}
			if (msg instanceof HttpContent content && head != null) {
				int room = MAX_BODY_BYTES - body.size();
				int n = Math.min(room, content.content().readableBytes());
				if (n > 0) {
					byte[] bytes = new byte[n];
					content.content().getBytes(content.content().readerIndex(), bytes);
					body.write(bytes, 0, n);
				}
				if (msg instanceof LastHttpContent) {
					finish();
				}
			}
			ctx.fireChannelRead(msg);
		}

		private void finish() {
			HttpRequest request = head;
			Instant at = receivedAt;
			head = null;
			if (request == null || at == null) {
				return;
			}
			Map<String, List<String>> headers = new LinkedHashMap<>();
			for (Map.Entry<String, String> h : request.headers()) {
				headers.computeIfAbsent(h.getKey().toLowerCase(Locale.ROOT), k -> new ArrayList<>()).add(h.getValue());
			}
			headers.replaceAll((name, values) -> List.copyOf(values));
			String text = body.toString(StandardCharsets.UTF_8);
			body.reset();
			record(new CapturedRequest(request.method().name(), request.uri(), headers, text, parse(text), at));
		}
	}
}
