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
import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.netty.http.server.HttpServerRequest;
import reactor.netty.http.server.HttpServerResponse;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

/**
 * The mock's Anthropic Messages route, {@code POST /v1/messages}: the same answers
 * ({@link MockAnswers}) and the same {@link FaultProfile} as the OpenAI route, in Anthropic's
 * wire format, counted into the server's {@link MockModelServer.Stats}.
 *
 * <ul>
 * <li>{@code stream: true}: {@code message_start} (input tokens), {@code content_block_start},
 * {@code ping}, one {@code content_block_delta} {@code text_delta} per token at the profile's pace,
 * {@code content_block_stop}, {@code message_delta} ({@code stop_reason}, output tokens),
 * {@code message_stop}.</li>
 * <li>{@code stream} false or absent (the API's default): one {@code message} object, sent once
 * the whole answer would have streamed.</li>
 * <li>{@code max_tokens} is required, as the API requires it; an answer longer than it is cut there
 * with {@code stop_reason: max_tokens}, otherwise {@code end_turn}. The {@code anthropic-version}
 * header is required too. A request the API would refuse (no messages, a role other than
 * {@code user} / {@code assistant}) gets 400 {@code invalid_request_error}.</li>
 * <li>Faults: a stall keeps the socket open after N tokens (without a stream: no answer at all);
 * a drop closes it after N tokens (without a stream: before any answer); an omitted terminal ends
 * after the content block with neither {@code stop_reason} nor {@code message_stop} (ignored
 * without a stream); errors are 500 {@code api_error}, 429 {@code rate_limit_error} (with
 * {@code retry-after}) or 529 {@code overloaded_error}; the context limit answers 400
 * <i>prompt is too long: N tokens &gt; M maximum</i>, N counting the system prompt too. An empty
 * answer has no {@code content_block_delta}, a looping one repeats the loop phrase, and the
 * profile's finish reason is sent as the {@code stop_reason}.</li>
 * </ul>
 */
final class AnthropicEndpoint {

	/** The version header value the real API requires on every request; any value is accepted. */
	static final String VERSION_HEADER = "anthropic-version";

	private static final TokenCounter COUNTER = TokenCounter.estimate();

	/** What a request asks for, once read. */
	private record Ask(String model, int maxTokens, boolean stream, List<ChatMessage> conversation, String question) {
	}

	/** Its profiles, draws and counters (shared with the OpenAI route). */
	private final MockModelServer server;
	private final JsonMapper json = OpenAiErrors.JSON;

	AnthropicEndpoint(MockModelServer server) {
		this.server = server;
	}

	/** The route's handler. */
	Publisher<Void> serve(HttpServerRequest request, HttpServerResponse response) {
		FaultProfile profile = server.takeProfile();
		long number = server.chatRequests.incrementAndGet();
		String version = request.requestHeaders().get(VERSION_HEADER);
		response.header("request-id", "req_mock_" + number);
		return request.receive().aggregate().asString(StandardCharsets.UTF_8).defaultIfEmpty("")
			.flatMap(body -> version == null || version.isBlank()
					? error(response, 400, "invalid_request_error", VERSION_HEADER + ": header is required", 0)
					: answer(number, body, profile, response))
			.doOnSubscribe(s -> server.inProgress.incrementAndGet())
			.doFinally(signal -> server.inProgress.decrementAndGet());
	}

	private Mono<Void> answer(long number, String body, FaultProfile taken, HttpServerResponse response) {
		Ask ask;
		try {
			ask = read(body);
		}
		catch (JacksonException e) {
			return error(response, 400, "invalid_request_error", "the request body is not valid JSON: "
					+ e.getOriginalMessage(), 0);
		}
		catch (IllegalArgumentException e) {
			return error(response, 400, "invalid_request_error", e.getMessage(), 0);
		}
		FaultProfile profile = server.underLoad(taken);
		if (profile.failsModel(ask.model())
				|| profile.errorRate() > 0 && server.random.getAsDouble() < profile.errorRate()) {
			server.injectedErrors.incrementAndGet();
			return switch (profile.errorStatus()) {
				case 429 -> error(response, 429, "rate_limit_error",
						"Number of requests has exceeded your rate limit. Please try again later.", profile.retryAfterSeconds());
				case 529 -> error(response, 529, "overloaded_error", "Overloaded", profile.retryAfterSeconds());
				default -> error(response, 500, "api_error", "Internal server error", profile.retryAfterSeconds());
			};
		}
		int promptTokens = COUNTER.count(ask.conversation());
		Integer limit = profile.contextLimitTokens();
		if (limit != null && promptTokens > limit) {
			server.contextRejections.incrementAndGet();
			return error(response, 400, "invalid_request_error",
					"prompt is too long: " + promptTokens + " tokens > " + limit + " maximum", 0);
		}
		List<String> tokens = profile.emptyAnswer() ? List.of()
				: profile.loopingAnswer() ? MockAnswers.loop(FaultProfile.LOOP_PHRASE, FaultProfile.LOOP_REPEATS)
				: MockAnswers.tokens(ask.question());
		String stopReason = "end_turn";
		if (tokens.size() > ask.maxTokens()) {
			tokens = tokens.subList(0, ask.maxTokens());
			stopReason = "max_tokens";
		}
		if (profile.finishReason() != null) {
			stopReason = profile.finishReason();
		}
		String id = "msg_mock_" + number;
		return ask.stream()
				? stream(response, id, ask.model(), tokens, stopReason, promptTokens, profile)
				: message(response, id, ask.model(), tokens, stopReason, promptTokens, profile);
	}

	// ---- the request ----

	private Ask read(String body) throws JacksonException {
		JsonNode root = json.readTree(body);
		if (root == null || !root.isObject()) {
			throw new IllegalArgumentException("the request body must be a JSON object");
		}
		JsonNode maxTokens = root.get("max_tokens");
		if (maxTokens == null || maxTokens.isNull()) {
			throw new IllegalArgumentException("max_tokens: Field required");
		}
		if (!maxTokens.canConvertToInt() || !maxTokens.isIntegralNumber() || maxTokens.asInt() < 1) {
			throw new IllegalArgumentException("max_tokens: Input should be an integer greater than or equal to 1, was "
					+ maxTokens);
		}
		JsonNode stream = root.path("stream");
		if (!stream.isMissingNode() && !stream.isBoolean()) {
			throw new IllegalArgumentException("stream: Input should be a valid boolean, was " + stream);
		}
		JsonNode messages = root.get("messages");
		if (messages == null || !messages.isArray() || messages.isEmpty()) {
			throw new IllegalArgumentException("messages: Field required, a non-empty array of messages");
		}
		List<ChatMessage> conversation = new ArrayList<>(messages.size() + 1);
		String system = text(root.path("system"), "system");
		if (!system.isEmpty()) {
			conversation.add(ChatMessage.system(system));
		}
		String question = null;
		for (int i = 0; i < messages.size(); i++) {
			JsonNode m = messages.get(i);
			String role = m.path("role").asString("");
			String where = "messages." + i;
			if (!role.equals("user") && !role.equals("assistant")) {
				throw new IllegalArgumentException(where + ".role: Input should be 'user' or 'assistant', was '"
						+ role + "'");
			}
			String content = text(m.path("content"), where + ".content");
			String said = said(m.path("content"));
			if (role.equals("user") && !said.isEmpty()) {
				question = said;
			}
			conversation.add(role.equals("user") ? ChatMessage.user(content) : ChatMessage.assistant(content));
		}
		return new Ask(root.path("model").asString(MockModelServer.MODEL), maxTokens.asInt(), stream.asBoolean(false),
				conversation, question != null ? question : "");
	}

	/**
	 * @return all the text of a content (a string, or blocks: text, tool_use input, tool_result
	 *         content), for counting the prompt
	 * @throws IllegalArgumentException naming {@code where} when it is neither a string nor an array
	 */
	private static String text(JsonNode content, String where) {
		if (content.isMissingNode() || content.isNull()) {
			return "";
		}
		if (content.isString()) {
			return content.asString();
		}
		if (!content.isArray()) {
			throw new IllegalArgumentException(where + ": Input should be a string or a list of content blocks");
		}
		StringBuilder all = new StringBuilder();
		for (JsonNode block : content) {
			String type = block.path("type").asString("");
			String piece = switch (type) {
				case "text" -> block.path("text").asString("");
				case "tool_use" -> block.path("name").asString("") + ' ' + block.path("input");
				case "tool_result" -> text(block.path("content"), where + ".content");
				default -> "";
			};
			all.append(all.length() == 0 || piece.isEmpty() ? "" : "\n").append(piece);
		}
		return all.toString();
	}

	/** @return what the user said in a content: the string, or its text blocks (tool results are not questions) */
	private static String said(JsonNode content) {
		if (content.isString()) {
			return content.asString();
		}
		StringBuilder all = new StringBuilder();
		for (JsonNode block : content) {
			if ("text".equals(block.path("type").asString())) {
				all.append(all.length() == 0 ? "" : "\n").append(block.path("text").asString(""));
			}
		}
		return all.toString();
	}

	// ---- the answers ----

	private Mono<Void> stream(HttpServerResponse response, String id, String model, List<String> tokens,
			String stopReason, int promptTokens, FaultProfile profile) {
		return response.status(HttpResponseStatus.OK)
			.header(HttpHeaderNames.CONTENT_TYPE, "text/event-stream")
			.header(HttpHeaderNames.CACHE_CONTROL, "no-cache")
			// flush every event as it is written, like a model server does (and so a drop cuts after it)
			.send(events(response, id, model, tokens, stopReason, promptTokens, profile)
				.map(event -> ByteBufUtil.writeUtf8(response.alloc(), event)), buffer -> true)
			.then();
	}

	private Flux<String> events(HttpServerResponse response, String id, String model, List<String> tokens,
			String stopReason, int promptTokens, FaultProfile profile) {
		Integer stallAfter = profile.stallAfterTokens();
		Integer dropAfter = profile.dropAfterTokens();
		boolean stall = stallAfter != null && stallAfter < tokens.size();
		boolean drop = !stall && dropAfter != null && dropAfter < tokens.size();
		int cut = stall ? stallAfter : drop ? dropAfter : tokens.size();

		ObjectNode message = json.createObjectNode()
			.put("id", id)
			.put("type", "message")
			.put("role", "assistant")
			.put("model", model);
		message.putArray("content");
		message.putNull("stop_reason");
		message.putNull("stop_sequence");
		message.putObject("usage").put("input_tokens", promptTokens).put("output_tokens", 1);
		ObjectNode start = json.createObjectNode().put("type", "message_start");
		start.set("message", message);
		ObjectNode blockStart = json.createObjectNode().put("type", "content_block_start").put("index", 0);
		blockStart.putObject("content_block").put("type", "text").put("text", "");
		Flux<String> opening = Flux.just(event("message_start", start), event("content_block_start", blockStart),
				event("ping", json.createObjectNode().put("type", "ping")));

		Flux<String> content = server.paced(response, cut, profile).map(i -> delta(tokens.get(i)));

		Flux<String> ending;
		if (stall) {
			ending = Flux.<String>never().doOnSubscribe(s -> server.stalled.incrementAndGet());
		}
		else if (drop) {
			// close the socket under the pending body: the client sees a premature close
			ending = Flux.defer(() -> {
				server.dropped.incrementAndGet();
				response.withConnection(connection -> connection.channel().close());
				return Flux.never();
			});
		}
		else {
			String blockStop = event("content_block_stop", json.createObjectNode().put("type", "content_block_stop")
				.put("index", 0));
			if (profile.omitTerminal()) {
				ending = Flux.just(blockStop);
			}
			else {
				ObjectNode messageDelta = json.createObjectNode().put("type", "message_delta");
				messageDelta.putObject("delta").put("stop_reason", stopReason).putNull("stop_sequence");
				messageDelta.putObject("usage").put("output_tokens", tokens.size());
				ending = Flux.just(blockStop, event("message_delta", messageDelta),
						event("message_stop", json.createObjectNode().put("type", "message_stop")));
			}
		}
		return Flux.concat(opening, content, ending)
			.doOnComplete(server.completed::incrementAndGet)
			.doOnCancel(drop ? () -> { } : server.cancelled::incrementAndGet);
	}

	private String delta(String token) {
		ObjectNode delta = json.createObjectNode().put("type", "content_block_delta").put("index", 0);
		delta.putObject("delta").put("type", "text_delta").put("text", token);
		return event("content_block_delta", delta);
	}

	private Mono<Void> message(HttpServerResponse response, String id, String model, List<String> tokens,
			String stopReason, int promptTokens, FaultProfile profile) {
		Integer stallAfter = profile.stallAfterTokens();
		Integer dropAfter = profile.dropAfterTokens();
		if (stallAfter != null && stallAfter < tokens.size()) {
			// the answer never comes; the client leaving is seen as a cancel
			return Mono.<Void>never()
				.doOnSubscribe(s -> server.stalled.incrementAndGet())
				.doOnCancel(server.cancelled::incrementAndGet);
		}
		if (dropAfter != null && dropAfter < tokens.size()) {
			return Mono.defer(() -> {
				server.dropped.incrementAndGet();
				response.withConnection(connection -> connection.channel().close());
				return Mono.<Void>never();
			});
		}
		// the time the streamed answer would have taken
		Duration generation = tokens.isEmpty() ? Duration.ZERO : Duration.ofMillis(profile.firstTokenDelayMs()
				+ profile.tokenIntervalMs() * (tokens.size() - 1));
		ObjectNode root = json.createObjectNode()
			.put("id", id)
			.put("type", "message")
			.put("role", "assistant")
			.put("model", model);
		root.putArray("content").addObject().put("type", "text").put("text", String.join("", tokens));
		root.put("stop_reason", stopReason);
		root.putNull("stop_sequence");
		root.putObject("usage").put("input_tokens", promptTokens).put("output_tokens", tokens.size());
		return Mono.delay(generation)
			.then(response.status(HttpResponseStatus.OK)
				.header(HttpHeaderNames.CONTENT_TYPE, "application/json")
				.sendString(Mono.just(write(root)), StandardCharsets.UTF_8)
				.then())
			.doOnSuccess(done -> server.completed.incrementAndGet())
			.doOnCancel(server.cancelled::incrementAndGet);
	}

	private Mono<Void> error(HttpServerResponse response, int status, String type, String message,
			int retryAfterSeconds) {
		ObjectNode root = json.createObjectNode().put("type", "error");
		root.putObject("error").put("type", type).put("message", message);
		HttpServerResponse r = response.status(status).header(HttpHeaderNames.CONTENT_TYPE, "application/json");
		if (retryAfterSeconds > 0) {
			r = r.header(HttpHeaderNames.RETRY_AFTER, Integer.toString(retryAfterSeconds));
		}
		return r.sendString(Mono.just(write(root)), StandardCharsets.UTF_8).then();
	}

	private String event(String type, JsonNode data) {
		return "event: " + type + "\ndata: " + write(data) + "\n\n";
	}

	private String write(JsonNode node) {
		try {
			return json.writeValueAsString(node);
		}
		catch (JacksonException e) {
			throw new IllegalStateException("a tree built in memory could not be written", e);
		}
	}
}
