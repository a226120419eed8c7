package dev.aiguard.test.mock;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import dev.aiguard.chat.ChatMessage;
import dev.aiguard.truncation.TokenCounter;
import io.netty.buffer.ByteBufUtil;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpResponseStatus;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.netty.http.server.HttpServerRequest;
import reactor.netty.http.server.HttpServerResponse;
import tools.jackson.core.JacksonException;
import tools.jackson.core.io.JsonStringEncoder;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ObjectNode;

import static dev.aiguard.test.mock.OpenAiErrors.JSON;
import static dev.aiguard.test.mock.OpenAiErrors.write;

/**
 * {@code POST /v1/chat/completions} the way OpenAI answers it, streamed ({@code "stream": true})
 * or whole, with the faults of the profile the request took.
 */
final class OpenAiEndpoint {

	private static final TokenCounter COUNTER = TokenCounter.estimate();

	/*
	 * A profile whose error body holds KEY_PLACEHOLDER, or whose in-band error type is INVALID_API_KEY,
	 * echoes the request's key as a careless provider does: in the body, in the in-band event and in
	 * the ECHO_HEADER response header. Tests of scrubbing use it.
	 */

	/** In a profile's error body: replaced by the request's API key (see {@link #echoing}). */
	static final String KEY_PLACEHOLDER = "{api_key}";

	/** The in-band error type whose message echoes the request's API key. */
	static final String INVALID_API_KEY = "invalid_api_key";

	/** The response header that echoes the key when a profile asks for it. */
	static final String ECHO_HEADER = "x-echo-api-key";

	private final MockModelServer server;

	OpenAiEndpoint(MockModelServer server) {
		this.server = server;
	}

	Publisher<Void> chat(HttpServerRequest request, HttpServerResponse response) {
		FaultProfile profile = server.takeProfile();
		long number = server.chatRequests.incrementAndGet();
		return request.receive().aggregate().asString(StandardCharsets.UTF_8).defaultIfEmpty("")
			.flatMap(body -> {
				String echoed = echoedKey(profile, request, response);
				FaultProfile p = echoed == null || profile.errorBody() == null ? profile
						: profile.withErrorBody(profile.errorBody().replace(KEY_PLACEHOLDER, echoed));
				return answer(number, body, p, echoed, response);
			})
			.doOnSubscribe(s -> server.inProgress.incrementAndGet())
			.doFinally(signal -> server.inProgress.decrementAndGet());
	}

	/**
	 * A profile whose error body holds {@value #KEY_PLACEHOLDER}, or whose in-band error type is
	 * {@value #INVALID_API_KEY}, echoes the request's key as a careless provider does: in the body, in
	 * the in-band event and in the {@value #ECHO_HEADER} response header. Tests of scrubbing use it.
	 */
	private static @Nullable String echoedKey(FaultProfile profile, HttpServerRequest request,
			HttpServerResponse response) {
		String errorBody = profile.errorBody();
		if (!INVALID_API_KEY.equals(profile.inBandErrorType())
				&& (errorBody == null || !errorBody.contains(KEY_PLACEHOLDER))) {
			return null;
		}
		String key = credential(request);
		response.header(ECHO_HEADER, key);
		return key;
	}

	private static String credential(HttpServerRequest request) {
		String authorization = request.requestHeaders().get(HttpHeaderNames.AUTHORIZATION, "");
		if (authorization.regionMatches(true, 0, "Bearer ", 0, 7)) {
			return authorization.substring(7).trim();
		}
		String apiKey = request.requestHeaders().get("x-api-key");
		return apiKey != null ? apiKey : authorization;
	}

	private Mono<Void> answer(long number, String body, FaultProfile taken, @Nullable String echoed,
			HttpServerResponse response) {
		if (taken.providerRateLimit() == null) {
			// with a provider rate limit its window's live headers are sent instead
			OpenAiErrors.rateLimitHeaders(response, taken.rateLimits());
		}
		Parsed request;
		try {
			request = parse(body);
		}
		catch (BadRequest e) {
			return send(response, 400, write(OpenAiErrors.error("invalid_request_error", null, e.param, e.getMessage())), 0);
		}
		ProviderRateLimit rateLimit = taken.providerRateLimit();
		if (rateLimit != null) {
			ProviderWindow.Verdict verdict = server.providerWindow.take(rateLimit, windowTokens(taken, request));
			OpenAiErrors.rateLimitHeaders(response, verdict.headers());
			if (!verdict.admitted()) {
				server.rateLimitRefusals.incrementAndGet();
				return send(response, 429, write(OpenAiErrors.forStatus(429)), verdict.retryAfterSeconds());
			}
		}
		FaultProfile profile = server.underLoad(taken);
		if (profile.failsModel(request.model)
				|| profile.errorRate() > 0 && server.random.getAsDouble() < profile.errorRate()) {
			server.injectedErrors.incrementAndGet();
			String error = profile.errorBody() != null ? profile.errorBody()
					: write(OpenAiErrors.forStatus(profile.errorStatus()));
			return send(response, profile.errorStatus(), error, profile.retryAfterSeconds());
		}
		int promptTokens = COUNTER.count(request.messages);
		Integer limit = profile.contextLimitTokens();
		if (limit != null && promptTokens > limit) {
			server.contextRejections.incrementAndGet();
			return send(response, 400, write(OpenAiErrors.error("invalid_request_error", "context_length_exceeded",
					"messages", "This model's maximum context length is " + limit + " tokens. However, your messages "
							+ "resulted in " + promptTokens + " tokens. Please reduce the length of the messages.")), 0);
		}
		List<String> tokens = content(profile, lastUserText(request.messages));
		String finishReason = "stop";
		if (request.maxTokens != null && request.maxTokens < tokens.size()) {
			tokens = tokens.subList(0, request.maxTokens);
			finishReason = "length";
		}
		if (profile.finishReason() != null) {
			finishReason = profile.finishReason();
		}
		Answer answer = new Answer("chatcmpl-mock-" + number, System.currentTimeMillis() / 1000, request.model,
				tokens, finishReason, promptTokens, request.includeUsage);
		Ending ending = Ending.of(profile, tokens.size());
		return request.stream ? stream(response, answer, ending, profile, echoed)
				: whole(response, answer, ending, profile, echoed);
	}

	/**
	 * @return what a request costs in the provider rate limit's window: its prompt (estimated) and the
	 *         content tokens of the answer it would get, cut at {@code max_tokens}
	 */
	private static long windowTokens(FaultProfile profile, Parsed request) {
		int answer = content(profile, lastUserText(request.messages)).size();
		if (request.maxTokens != null) {
			answer = Math.min(answer, request.maxTokens);
		}
		return (long) COUNTER.count(request.messages) + answer;
	}

	/** @return the content tokens of the answer: none, the loop, or the answer to the question */
	private static List<String> content(FaultProfile profile, String question) {
		if (profile.emptyAnswer()) {
			return List.of();
		}
		if (profile.loopingAnswer()) {
			return MockAnswers.loop(FaultProfile.LOOP_PHRASE, FaultProfile.LOOP_REPEATS);
		}
		return MockAnswers.tokens(question);
	}

	// --- streamed answers ---

	private Mono<Void> stream(HttpServerResponse response, Answer answer, Ending ending, FaultProfile profile,
			@Nullable String echoed) {
		return response.status(HttpResponseStatus.OK)
			.header(HttpHeaderNames.CONTENT_TYPE, "text/event-stream")
			.header(HttpHeaderNames.CACHE_CONTROL, "no-cache")
			// flush every event as it is written, like a model server does (and so a drop cuts after it)
			.send(events(response, answer, ending, profile, echoed).map(event -> ByteBufUtil.writeUtf8(response.alloc(), event)),
					buffer -> true)
			.then();
	}

	private Flux<String> events(HttpServerResponse response, Answer answer, Ending ending, FaultProfile profile,
			@Nullable String echoed) {
		Duration first = Duration.ofMillis(profile.firstTokenDelayMs());
		Duration interval = Duration.ofMillis(profile.tokenIntervalMs());
		Flux<String> content = server.paced(response, ending.tokens, profile)
			.map(new ContentEvents(answer.chunk(null, ContentEvents.MARKER, null), answer.tokens)::event);
		Flux<String> end = switch (ending.cut) {
			case STALL -> Flux.<String>never().doOnSubscribe(s -> server.stalled.incrementAndGet());
			case DROP -> drop(response);
			case IN_BAND -> Mono.delay(ending.tokens == 0 ? first : interval)
				.map(tick -> event(OpenAiErrors.inBand(profile.inBandErrorType(), echoed)))
				.doOnNext(e -> server.inBandErrors.incrementAndGet())
				.flux();
			case NONE -> profile.omitTerminal() ? Flux.<String>empty() : terminal(answer);
		};
		return Flux.concat(Mono.fromCallable(() -> event(answer.chunk("assistant", "", null))), content, end)
			.doOnComplete(server.completed::incrementAndGet)
			.doOnCancel(ending.cut == Cut.DROP ? () -> { } : server.cancelled::incrementAndGet);
	}

	private Flux<String> terminal(Answer answer) {
		Flux<String> stop = Flux.just(event(answer.chunk(null, null, answer.finishReason)));
		if (answer.includeUsage) {
			ObjectNode usage = answer.header("chat.completion.chunk");
			usage.putArray("choices");
			usage.set("usage", answer.usage());
			stop = stop.concatWithValues(event(usage));
		}
		return stop.concatWithValues("data: [DONE]\n\n");
	}

	/** Closes the socket under the pending body: the client sees a premature close. */
	private <T> Flux<T> drop(HttpServerResponse response) {
		return Flux.defer(() -> {
			server.dropped.incrementAndGet();
			response.withConnection(connection -> connection.channel().close());
			return Flux.never();
		});
	}

	/**
	 * The content events of one answer: the chunk's JSON is the same for every token but the text,
	 * so it is written once with a marker and each event is the text, quoted, between the two halves
	 * (byte for byte what serialising each chunk would give, at a fraction of the cost).
	 */
	static final class ContentEvents {

		/** The text of the template chunk, where each token's text goes. */
		static final String MARKER = "@@aiguard-token@@";
		private static final String QUOTED_MARKER = '"' + MARKER + '"';

		private final List<String> tokens;
		private final String before;
		private final String after;

		/**
		 * @param template a content chunk whose text is {@link #MARKER}
		 * @param tokens the texts of the events, by index
		 */
		ContentEvents(JsonNode template, List<String> tokens) {
			this.tokens = tokens;
			String text = OpenAiEndpoint.event(template);
			int at = text.indexOf(QUOTED_MARKER);
			if (at < 0) {
				throw new IllegalArgumentException("the template chunk has no text " + QUOTED_MARKER);
			}
			this.before = text.substring(0, at);
			this.after = text.substring(at + QUOTED_MARKER.length());
		}

		/** @return the event of the token at {@code index}: {@code data: <chunk JSON>} and a blank line */
		String event(int index) {
			String token = tokens.get(index);
			StringBuilder event = new StringBuilder(before.length() + token.length() + 8 + after.length())
				.append(before).append('"');
			JsonStringEncoder.getInstance().quoteAsString(token, event);
			return event.append('"').append(after).toString();
		}
	}

	static String event(JsonNode node) {
		return "data: " + write(node) + "\n\n";
	}

	// --- whole answers ("stream": false) ---

	private Mono<Void> whole(HttpServerResponse response, Answer answer, Ending ending, FaultProfile profile,
			@Nullable String echoed) {
		Duration untilCut = generation(profile, ending.tokens);
		Mono<Void> reply = switch (ending.cut) {
			case STALL -> Mono.delay(untilCut)
				.then(Mono.<Void>never().doOnSubscribe(s -> server.stalled.incrementAndGet()));
			case DROP -> Mono.delay(untilCut).thenMany(drop(response)).then();
			case IN_BAND -> Mono.delay(untilCut.plusMillis(ending.tokens == 0 ? profile.firstTokenDelayMs()
					: profile.tokenIntervalMs()))
				.flatMap(tick -> {
					server.inBandErrors.incrementAndGet();
					// an answer that fails while being generated comes back as a server error
					return send(response, 500, write(OpenAiErrors.inBand(profile.inBandErrorType(), echoed)), 0);
				});
			// "omit terminal" on a whole answer: the text is all there, the finish reason is not
			case NONE -> Mono.delay(untilCut)
				.flatMap(tick -> send(response, 200, write(answer.completion(!profile.omitTerminal())), 0));
		};
		return reply
			.doOnSuccess(done -> server.completed.incrementAndGet())
			.doOnCancel(ending.cut == Cut.DROP ? () -> { } : server.cancelled::incrementAndGet);
	}

	/** @return the time the mock takes to generate {@code tokens} tokens at the profile's pace */
	private static Duration generation(FaultProfile profile, int tokens) {
		return tokens == 0 ? Duration.ZERO
				: Duration.ofMillis(profile.firstTokenDelayMs() + (tokens - 1L) * profile.tokenIntervalMs());
	}

	static Mono<Void> send(HttpServerResponse response, int status, String body, int retryAfterSeconds) {
		HttpServerResponse r = OpenAiErrors.json(response, status);
		if (retryAfterSeconds > 0) {
			r = r.header(HttpHeaderNames.RETRY_AFTER, Integer.toString(retryAfterSeconds));
		}
		return r.sendString(Mono.just(body), StandardCharsets.UTF_8).then();
	}

	// --- what the answer is ---

	/** Where the answer is cut, and how. */
	private enum Cut {
		NONE, STALL, DROP, IN_BAND
	}

	/** @param tokens content chunks sent before the cut (all of them when there is none) */
	private record Ending(Cut cut, int tokens) {

		static Ending of(FaultProfile profile, int size) {
			Cut cut = Cut.NONE;
			int at = size;
			Integer stall = profile.stallAfterTokens();
			Integer drop = profile.dropAfterTokens();
			Integer inBand = profile.inBandErrorAfterTokens();
			if (stall != null && stall < at) {
				cut = Cut.STALL;
				at = stall;
			}
			if (drop != null && drop < at) {
				cut = Cut.DROP;
				at = drop;
			}
			if (inBand != null && (cut == Cut.NONE || inBand < at)) {
				cut = Cut.IN_BAND;
				at = Math.min(inBand, at);
			}
			return new Ending(cut, at);
		}
	}

	private record Answer(String id, long created, String model, List<String> tokens, String finishReason,
			int promptTokens, boolean includeUsage) {

		ObjectNode header(String object) {
			return JSON.createObjectNode()
				.put("id", id)
				.put("object", object)
				.put("created", created)
				.put("model", model);
		}

		ObjectNode chunk(@Nullable String role, @Nullable String content, @Nullable String finish) {
			ObjectNode chunk = header("chat.completion.chunk");
			ObjectNode choice = chunk.putArray("choices").addObject().put("index", 0);
			ObjectNode delta = choice.putObject("delta");
			if (role != null) {
				delta.put("role", role);
			}
			if (content != null) {
				delta.put("content", content);
			}
			choice.put("finish_reason", finish);
			if (includeUsage) {
				// with include_usage every chunk carries the field, null until the usage chunk
				chunk.putNull("usage");
			}
			return chunk;
		}

		ObjectNode usage() {
			return JSON.createObjectNode()
				.put("prompt_tokens", promptTokens)
				.put("completion_tokens", tokens.size())
				.put("total_tokens", promptTokens + tokens.size());
		}

		ObjectNode completion(boolean withFinishReason) {
			ObjectNode root = header("chat.completion");
			ObjectNode choice = root.putArray("choices").addObject().put("index", 0);
			ObjectNode message = choice.putObject("message").put("role", "assistant").put("content", String.join("", tokens));
			message.putNull("refusal");
			choice.putNull("logprobs");
			choice.put("finish_reason", withFinishReason ? finishReason : null);
			root.set("usage", usage());
			return root;
		}
	}

	// --- reading the request ---

	/** A request OpenAI would refuse with 400, naming the parameter at fault. */
	static final class BadRequest extends IllegalArgumentException {

		private static final long serialVersionUID = 1L;

		@Nullable
		final String param;

		BadRequest(@Nullable String param, String message) {
			super(message);
			this.param = param;
		}
	}

	private record Parsed(List<ChatMessage> messages, String model, boolean stream, boolean includeUsage,
			@Nullable Integer maxTokens) {
	}

	private static Parsed parse(String body) {
		JsonNode root;
		try {
			root = JSON.readTree(body);
		}
		catch (JacksonException e) {
			throw new BadRequest(null, "We could not parse the JSON body of your request: " + e.getOriginalMessage());
		}
		if (root == null || !root.isObject()) {
			throw new BadRequest(null, "The request body must be a JSON object.");
		}
		List<ChatMessage> messages = messages(root.path("messages"));
		JsonNode modelNode = root.get("model");
		String model = MockModelServer.MODEL;
		if (modelNode != null && !modelNode.isNull()) {
			if (!modelNode.isString() || modelNode.stringValue().isBlank()) {
				throw new BadRequest("model", "Invalid value for 'model': expected a model name, got " + modelNode + ".");
			}
			model = modelNode.stringValue();
		}
		boolean stream = flag(root.get("stream"), "stream");
		boolean includeUsage = false;
		JsonNode options = root.get("stream_options");
		if (options != null && !options.isNull()) {
			if (!stream) {
				throw new BadRequest("stream_options",
						"The 'stream_options' parameter is only allowed when 'stream' is enabled.");
			}
			if (!options.isObject()) {
				throw new BadRequest("stream_options", "Invalid type for 'stream_options': expected an object, got "
						+ options + ".");
			}
			includeUsage = flag(options.get("include_usage"), "stream_options.include_usage");
		}
		Integer maxTokens = positive(root.get("max_completion_tokens"), "max_completion_tokens");
		if (maxTokens == null) {
			maxTokens = positive(root.get("max_tokens"), "max_tokens");
		}
		return new Parsed(messages, model, stream, includeUsage, maxTokens);
	}

	private static boolean flag(@Nullable JsonNode node, String param) {
		if (node == null || node.isNull()) {
			return false;
		}
		if (!node.isBoolean()) {
			throw new BadRequest(param, "Invalid type for '" + param + "': expected a boolean, got " + node + ".");
		}
		return node.booleanValue();
	}

	@Nullable
	private static Integer positive(@Nullable JsonNode node, String param) {
		if (node == null || node.isNull()) {
			return null;
		}
		if (!node.isIntegralNumber() || !node.canConvertToInt() || node.intValue() < 1) {
			throw new BadRequest(param, "Invalid value for '" + param + "': expected an integer >= 1, got " + node + ".");
		}
		return node.intValue();
	}

	/**
	 * Reads OpenAI's {@code messages}: {@code developer} counts as {@code system}; content may be a
	 * string, {@code null} or an array of parts whose {@code text} parts are concatenated.
	 *
	 * @throws BadRequest naming the message and field that cannot be read
	 */
	static List<ChatMessage> messages(JsonNode array) {
		if (!array.isArray() || array.isEmpty()) {
			throw new BadRequest("messages", "'messages' must be a non-empty array, got " + array + ".");
		}
		List<ChatMessage> messages = new ArrayList<>(array.size());
		for (int i = 0; i < array.size(); i++) {
			String where = "messages[" + i + "]";
			JsonNode m = array.get(i);
			if (!m.isObject()) {
				throw new BadRequest(where, "Invalid type for '" + where + "': expected an object, got " + m + ".");
			}
			ChatMessage.Role role = role(m.get("role"), where + ".role");
			String content = content(m.get("content"), where + ".content");
			messages.add(role == ChatMessage.Role.TOOL
					? ChatMessage.tool(m.path("tool_call_id").asString("call"), content)
					: new ChatMessage(role, content, List.of(), null));
		}
		return messages;
	}

	private static ChatMessage.Role role(@Nullable JsonNode node, String where) {
		String name = node != null && node.isString() ? node.stringValue() : null;
		if ("developer".equals(name)) {
			return ChatMessage.Role.SYSTEM;
		}
		for (ChatMessage.Role r : ChatMessage.Role.values()) {
			if (r.wireName().equals(name)) {
				return r;
			}
		}
		throw new BadRequest(where, "Invalid value for '" + where + "': " + (node == null ? "missing" : node.toString())
				+ ". Supported values are: 'system', 'developer', 'user', 'assistant' and 'tool'.");
	}

	private static String content(@Nullable JsonNode content, String where) {
		if (content == null || content.isNull()) {
			return "";
		}
		if (content.isString()) {
			return content.stringValue();
		}
		if (!content.isArray()) {
			throw new BadRequest(where, "Invalid type for '" + where + "': expected a string or an array of content "
					+ "parts, got " + content + ".");
		}
		StringBuilder text = new StringBuilder();
		for (int j = 0; j < content.size(); j++) {
			JsonNode part = content.get(j);
			String at = where + "[" + j + "]";
			if (!part.isObject()) {
				throw new BadRequest(at, "Invalid type for '" + at + "': expected a content part object, got " + part + ".");
			}
			if ("text".equals(part.path("type").asString(""))) {
				JsonNode t = part.get("text");
				if (t == null || !t.isString()) {
					throw new BadRequest(at + ".text", "Invalid type for '" + at + ".text': expected a string.");
				}
				text.append(t.stringValue());
			}
			// image, audio, file and refusal parts carry nothing the mock answers to
		}
		return text.toString();
	}

	private static String lastUserText(List<ChatMessage> messages) {
		for (int i = messages.size() - 1; i >= 0; i--) {
			if (messages.get(i).role() == ChatMessage.Role.USER) {
				return messages.get(i).content();
			}
		}
		return messages.get(messages.size() - 1).content();
	}
}
