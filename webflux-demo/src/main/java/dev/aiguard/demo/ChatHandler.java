package dev.aiguard.demo;

import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import dev.aiguard.AiGuard;
import dev.aiguard.GuardSignals;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.admission.AdmissionRejectedException;
import dev.aiguard.core.Priority;
import dev.aiguard.core.Source;
import dev.aiguard.core.Tenant;
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
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.util.context.Context;
import tools.jackson.databind.json.JsonMapper;

/**
 * {@code POST /api/chat}: checks the body, then streams the guarded answer as the contract's
 * events — {@code meta}, a {@code token} per content chunk, then exactly one {@code done} (built
 * from the request's {@link dev.aiguard.GuardReport}) or {@code error}. The request's client asks
 * the model: the library's {@code OpenAiCompatibleClient} through {@code AiGuard.call}, or Spring
 * AI's {@code ChatClient} through its {@code AiGuardAdvisor}; both guards share one policy's parts
 * and put their report into the request's {@link GuardSignals}, so the events are the same. Closing
 * the response cancels the guarded stream and with it the upstream call. A request the load
 * governor sheds at its current level gets 503 with {@code Retry-After} and no stream; one a budget
 * (its tenant's, or its provider key's) refuses before the answer starts gets 429 with
 * {@code Retry-After} and no stream. The request's tenant goes into the guard's context next to
 * its priority.
 */
final class ChatHandler {

	private static final Logger log = LoggerFactory.getLogger(ChatHandler.class);

	private final AiGuard<ChatChunk> guard;
	private final ModelUpstream upstream;
	private final SpringAiClient springAi;
	private final AnswerClient defaultClient;
	private final JsonMapper json;
	private final ChatEvents events;
	private final ClientText text;
	private final int maxBodyBytes;
	@Nullable
	private final LoadGovernor governor;
	private final String idPrefix = Long.toString(ThreadLocalRandom.current().nextLong(1L << 20, 1L << 24), 36);
	private final AtomicLong ids = new AtomicLong();
	private final Tenant defaultTenant;

	/**
	 * The longest the response's status waits for the guard to let a request in. Budgets answer at
	 * once (the in-process store) or within Redis's command timeout; a request that waits for its
	 * provider key's turn gets its stream after this, and a later refusal is an {@code error} event.
	 */
	static final Duration ADMISSION_HOLD = Duration.ofSeconds(2);

	/**
	 * @param governor the policy's load governor, asked before the stream starts; {@code null}: none
	 * @param defaultTenant the tenant of a request that names none
	 */
	ChatHandler(AiGuard<ChatChunk> guard, ModelUpstream upstream, SpringAiClient springAi, AnswerClient defaultClient,
			JsonMapper json, int maxBodyBytes, @Nullable LoadGovernor governor, Tenant defaultTenant) {
		this.guard = guard;
		this.upstream = upstream;
		this.springAi = springAi;
		this.defaultClient = defaultClient;
		this.json = json;
		this.text = new ClientText(upstream.apiKey());
		this.events = new ChatEvents(json, text);
		this.maxBodyBytes = maxBodyBytes;
		this.governor = governor;
		this.defaultTenant = defaultTenant;
	}

	Mono<ServerResponse> chat(ServerRequest request) {
		String header = request.headers().firstHeader("X-Priority");
		String tenantHeader = request.headers().firstHeader("X-Tenant");
		String client = request.queryParam("client").orElse(null);
		return RequestBodies.text(request, maxBodyBytes)
			.map(body -> ChatInput.parse(json, body, header, client, defaultClient, tenantHeader, defaultTenant))
			.flatMap(input -> {
				AdmissionRejectedException shed = shedNow(input.priority());
				return shed != null ? ErrorResponses.shed(shed, text) : respond(input);
			})
			.onErrorResume(BadRequestException.class, e -> ErrorResponses.of(e));
	}

	/**
	 * Starts the answer, and holds the response's status back until the guard has let the request
	 * in: its first attempt sent (the library client), the first chunk of an answer (a model's role
	 * announcement comes before its first token), a fallback source chosen, the end of the answer,
	 * or {@link #ADMISSION_HOLD} passed. A budget
	 * that refused the request before that gets a 429 with {@code Retry-After} instead of a stream;
	 * every other answer is the contract's event stream, its events kept until the response is written.
	 */
	private Mono<ServerResponse> respond(ChatInput input) {
		return Mono.deferContextual(context -> {
			Admission admission = new Admission();
			Sinks.Many<ServerSentEvent<String>> out = Sinks.many().unicast().onBackpressureBuffer();
			// one subscriber, serialised signals: the sink never sees two emissions at once
			Disposable running = answer(input, admission).subscribe(out::tryEmitNext, out::tryEmitError,
					out::tryEmitComplete, Context.of(context));
			return admission.decided(ADMISSION_HOLD)
				.flatMap(refusal -> {
					running.dispose();
					return ErrorResponses.budget(refusal, input.tenant(), text);
				})
				.switchIfEmpty(Mono.defer(() -> ServerResponse.ok()
					.contentType(MediaType.TEXT_EVENT_STREAM)
					.header("Cache-Control", "no-cache")
					.body(BodyInserters.fromServerSentEvents(out.asFlux().doOnCancel(running::dispose)))))
				.doOnCancel(running::dispose);
		});
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
		return answer(input, new Admission());
	}

	private Flux<ServerSentEvent<String>> answer(ChatInput input, Admission admission) {
		return Flux.defer(() -> newAnswer(input, admission));
	}

	private Flux<ServerSentEvent<String>> newAnswer(ChatInput input, Admission admission) {
		String requestId = idPrefix + '-' + ids.incrementAndGet();
		GuardSignals signals = GuardSignals.create();
		SiblingModels.AnsweringModel sibling = new SiblingModels.AnsweringModel();
		TokensSent sent = new TokensSent();
		// what decides the request's route: the level and its action when the request starts
		LoadGovernor g = governor;
		ChatEvents.LoadSeen load = g == null ? null : new ChatEvents.LoadSeen(g.level(), g.action(input.priority()));
		Flux<ServerSentEvent<String>> tokens = guarded(input, admission)
			.doOnNext(text -> admission.stream())
			.filter(text -> !text.isEmpty())
			.map(text -> {
				sent.count++;
				return events.token(text);
			});
		Flux<ServerSentEvent<String>> answer = tokens
			.concatWith(signals.report().map(report -> events.done(report, answeredBy(report.source(), sibling), load)))
			.onErrorResume(e -> {
				AdmissionRejectedException budget = ChatEvents.budgetRefusal(e);
				if (budget != null && sent.count == 0 && admission.refuse(budget)) {
					log.debug("request {} of tenant {} refused by a budget: {}", requestId, input.tenant(), e.toString());
					return Mono.empty();
				}
				log.debug("request {} failed after {} tokens: {}", requestId, sent.count, e.toString());
				return Mono.just(events.error(e, sent.count > 0));
			})
			.doOnComplete(admission::stream);
		// a fallback source chosen means the request was let in, even before its first chunk
		Flux<ServerSentEvent<String>> sourceChosen = signals.source().doOnNext(source -> admission.stream())
			.thenMany(Flux.empty());
		return Flux.concat(Mono.just(events.meta(requestId, input.priority(), input.client(), input.tenant())),
				Flux.merge(answer, sourceChosen))
			.contextWrite(signals::into)
			.contextWrite(sibling::into)
			.contextWrite(input.tenant().asContext())
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
	private Flux<String> guarded(ChatInput input, Admission admission) {
		return switch (input.client()) {
			// an attempt sent means the budgets, the lanes and the breaker let the request in
			case LIBRARY -> guard.call(ChatRequest.of(upstream.model(), input.messages()), request -> {
				admission.stream();
				return upstream.stream(request);
			}).map(ChatChunk::text);
			case SPRING_AI -> springAi.stream(input.messages(), input.priority(), input.tenant());
		};
	}

	/**
	 * Whether one request's answer is streamed or refused by a budget, decided once: by the first of
	 * its chunk, its fallback source, its end, its budget's refusal, or the hold running out.
	 */
	static final class Admission {

		private final AtomicBoolean decided = new AtomicBoolean();
		private final Sinks.One<AdmissionRejectedException> refused = Sinks.one();

		/** The answer goes ahead: a budget refusal after this is an {@code error} event of the stream. */
		void stream() {
			// called for every chunk: a plain read once decided, no write
			if (!decided.get() && decided.compareAndSet(false, true)) {
				refused.tryEmitEmpty();
			}
		}

		/** @return whether {@code refusal} decided (the response becomes a 429), false when the stream had */
		boolean refuse(AdmissionRejectedException refusal) {
			if (decided.compareAndSet(false, true)) {
				refused.tryEmitValue(refusal);
				return true;
			}
			return false;
		}

		/** @return the refusal, or empty once the answer goes ahead (at the latest after {@code hold}) */
		Mono<AdmissionRejectedException> decided(Duration hold) {
			return refused.asMono().timeout(hold, Mono.fromRunnable(this::stream).then(refused.asMono()));
		}
	}

	/** Tokens sent so far; written and read only by the serialised signals of one answer. */
	private static final class TokensSent {

		long count;
	}
}
