package dev.aiguard.demo;

import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;

import dev.aiguard.AiGuard;
import dev.aiguard.GuardSignals;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.admission.AdmissionRejectedException;
import dev.aiguard.core.Priority;
import dev.aiguard.core.Source;
import dev.aiguard.load.LoadAction;
import dev.aiguard.load.LoadGovernor;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.http.MediaType;
import org.springframework.http.codec.ServerSentEvent;
import org.springframework.web.reactive.function.BodyInserters;
import org.springframework.web.reactive.function.server.ServerRequest;
import org.springframework.web.reactive.function.server.ServerResponse;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import tools.jackson.databind.json.JsonMapper;

/**
 * {@code POST /api/chat}: checks the body, then streams the guarded answer as the contract's
 * events — {@code meta}, a {@code token} per content chunk, then exactly one {@code done} (built
 * from the request's {@link dev.aiguard.GuardReport}) or {@code error}. The request's client asks
 * the model: the library's {@code OpenAiCompatibleClient} through {@code AiGuard.call}, or Spring
 * AI's {@code ChatClient} through its {@code AiGuardAdvisor}; both guards share one policy's parts
 * and put their report into the request's {@link GuardSignals}, so the events are the same. Closing
 * the response cancels the guarded stream and with it the upstream call. A request the load
 * governor sheds at its current level gets 503 with {@code Retry-After} and no stream.
 */
final class ChatHandler {

	private static final Logger log = LoggerFactory.getLogger(ChatHandler.class);

	private final AiGuard<ChatChunk> guard;
	private final ModelUpstream upstream;
	private final SpringAiClient springAi;
	private final AnswerClient defaultClient;
	private final JsonMapper json;
	private final ChatEvents events;
	private final int maxBodyBytes;
	@Nullable
	private final LoadGovernor governor;
	private final String idPrefix = Long.toString(ThreadLocalRandom.current().nextLong(1L << 20, 1L << 24), 36);
	private final AtomicLong ids = new AtomicLong();

	/** @param governor the policy's load governor, asked before the stream starts; {@code null}: none */
	ChatHandler(AiGuard<ChatChunk> guard, ModelUpstream upstream, SpringAiClient springAi, AnswerClient defaultClient,
			JsonMapper json, int maxBodyBytes, @Nullable LoadGovernor governor) {
		this.guard = guard;
		this.upstream = upstream;
		this.springAi = springAi;
		this.defaultClient = defaultClient;
		this.json = json;
		this.events = new ChatEvents(json);
		this.maxBodyBytes = maxBodyBytes;
		this.governor = governor;
	}

	Mono<ServerResponse> chat(ServerRequest request) {
		String header = request.headers().firstHeader("X-Priority");
		String client = request.queryParam("client").orElse(null);
		return RequestBodies.text(request, maxBodyBytes)
			.map(body -> ChatInput.parse(json, body, header, client, defaultClient))
			.flatMap(input -> {
				AdmissionRejectedException shed = shedNow(input.priority());
				return shed != null ? ErrorResponses.shed(shed)
						: ServerResponse.ok()
							.contentType(MediaType.TEXT_EVENT_STREAM)
							.header("Cache-Control", "no-cache")
							.body(BodyInserters.fromServerSentEvents(answer(input)));
			})
			.onErrorResume(BadRequestException.class, e -> ErrorResponses.of(e));
	}

	/**
	 * Sheds a request the governor's rules shed at its level before any response starts, so the
	 * client gets a 503 with {@code Retry-After} instead of a stream that only says no. The request
	 * still counts as offered load. Any other action (and a level that changes meanwhile) is the
	 * guard's to apply.
	 *
	 * @return the refusal, or {@code null} when the request may go on
	 */
	@Nullable
	private AdmissionRejectedException shedNow(Priority priority) {
		LoadGovernor g = governor;
		if (g == null || g.action(priority) != LoadAction.SHED) {
			return null;
		}
		g.arrived(priority);
		return g.shed(priority);
	}

	/** The events of one answer; each subscription is a new request with its own id, signals and counts. */
	Flux<ServerSentEvent<String>> answer(ChatInput input) {
		return Flux.defer(() -> newAnswer(input));
	}

	private Flux<ServerSentEvent<String>> newAnswer(ChatInput input) {
		String requestId = idPrefix + '-' + ids.incrementAndGet();
		GuardSignals signals = GuardSignals.create();
		SiblingModels.AnsweringModel sibling = new SiblingModels.AnsweringModel();
		TokensSent sent = new TokensSent();
		Flux<ServerSentEvent<String>> tokens = guarded(input)
			.filter(text -> !text.isEmpty())
			.map(text -> {
				sent.count++;
				return events.token(text);
			});
		Flux<ServerSentEvent<String>> answer = tokens
			.concatWith(signals.report().map(report -> events.done(report, answeredBy(report.source(), sibling))))
			.onErrorResume(e -> {
				log.debug("request {} failed after {} tokens: {}", requestId, sent.count, e.toString());
				return Mono.just(events.error(e, sent.count > 0));
			});
		return Flux.concat(Mono.just(events.meta(requestId, input.priority(), input.client())), answer)
			.contextWrite(signals::into)
			.contextWrite(sibling::into)
			.contextWrite(input.priority().asContext());
	}

	/**
	 * @return the model that gave the answer: the one asked ({@code REALTIME}), the sibling the
	 *         ladder asked ({@code FALLBACK_MODEL}), or {@code null} when no model answered (cache,
	 *         canned answer, fixed message)
	 */
	@Nullable
	private String answeredBy(Source source, SiblingModels.AnsweringModel sibling) {
		return switch (source) {
			case REALTIME -> upstream.model();
			case FALLBACK_MODEL -> sibling.get();
			default -> null;
		};
	}

	/**
	 * The answer's text deltas. Either way the guard owns the request (the call form, which the
	 * advisor uses too), so it can retry, shrink it, and hand it to the fallbacks.
	 */
	private Flux<String> guarded(ChatInput input) {
		return switch (input.client()) {
			case LIBRARY -> guard.call(ChatRequest.of(upstream.model(), input.messages()), upstream::stream)
				.map(ChatChunk::text);
			case SPRING_AI -> springAi.stream(input.messages(), input.priority());
		};
	}

	/** Tokens sent so far; written and read only by the serialised signals of one answer. */
	private static final class TokensSent {

		long count;
	}
}
