package dev.aiguard.springai;

import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.Function;
import java.util.function.Supplier;

import dev.aiguard.AiGuard;
import dev.aiguard.GuardPolicy;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.core.ChunkInspector;
import dev.aiguard.core.Priority;
import dev.aiguard.core.Secrets;
import dev.aiguard.core.Tenant;
import dev.aiguard.fallback.Fallback;
import dev.aiguard.fallback.FallbackChain;
import dev.aiguard.retry.MidStreamPolicy;
import org.springframework.ai.chat.client.ChatClientRequest;
import org.springframework.ai.chat.client.ChatClientResponse;
import org.springframework.ai.chat.client.advisor.api.CallAdvisor;
import org.springframework.ai.chat.client.advisor.api.CallAdvisorChain;
import org.springframework.ai.chat.client.advisor.api.StreamAdvisor;
import org.springframework.ai.chat.client.advisor.api.StreamAdvisorChain;
import org.springframework.ai.chat.model.ChatResponse;
import org.springframework.core.Ordered;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;
import reactor.util.context.Context;
import reactor.util.context.ContextView;

/**
 * Guards a Spring AI {@code ChatClient}: stall and completeness detection, circuit breaker,
 * priority lanes, retries, prompt truncation on context-length errors and fallbacks, for
 * {@code .stream()} and {@code .call()} alike, with one {@code GuardReport} per request.
 *
 * <pre>{@code
 * ChatClient chat = ChatClient.builder(chatModel)
 *     .defaultAdvisors(AiGuardAdvisor.of(policy))
 *     .build();
 *
 * Flux<String> answer = chat.prompt("Why do streams stall?")
 *     .advisors(a -> a.param(AiGuardAdvisor.PRIORITY, Priority.P0)
 *                     .param(AiGuardAdvisor.TENANT, Tenant.of("acme")))
 *     .stream()
 *     .content();
 * }</pre>
 *
 * <h2>What it does</h2>
 * Each request goes through the guard's call form ({@link AiGuard#call}): the prompt becomes the
 * library's {@link ChatRequest}, and every attempt sends the rest of the advisor chain a request
 * rebuilt from the (possibly shrunk) {@code ChatRequest} with the original options, message types
 * and advisor context. An attempt is a fresh copy of the chain after this advisor, so a retry runs
 * the advisors behind this one and the model again, and never those in front of it. Errors of the
 * attempt are typed with {@link SpringAiErrors#map}.
 * <ul>
 * <li>{@code stream()}: the guard watches the chain's {@code Flux<ChatClientResponse>}, read by
 * {@link SpringAiChunks#chatClientResponses()}. Each attempt subscribes the chain on the
 * {@linkplain Builder#streamScheduler stream scheduler} ({@code boundedElastic} by default): the
 * model may block while it prepares the request, and the subscriber may be on an event loop.</li>
 * <li>{@code call()}: the chain's blocking call runs on the {@linkplain Builder#callScheduler call
 * scheduler} ({@code boundedElastic} by default) as a one-response stream the guard watches, and the
 * calling thread waits for the guarded answer. So deadlines, retries, the breaker, lanes and fallbacks
 * apply; the first-token deadline bounds the time to the whole answer. A deadline frees the caller
 * at once; the abandoned HTTP call ends on the call scheduler when the client's read timeout ends it
 * ({@link OpenAiHttpCustomizer}), and what it ends with is logged at DEBUG, not signalled.
 * {@code .call()} blocks by nature: called on a thread of Reactor's non-blocking schedulers
 * ({@code parallel}, an event loop) it throws an {@code IllegalStateException} before anything is
 * sent, instead of blocking that thread.</li>
 * </ul>
 *
 * <h2>Priority and tenant</h2>
 * The advisor parameters {@link #PRIORITY} and {@link #TENANT} (a {@link Priority} or its name, a
 * {@link Tenant} or its id) win over the Reactor {@code Context} ({@link Priority#CONTEXT_KEY},
 * {@link Tenant#CONTEXT_KEY}), which {@code stream()} reads; a blocking {@code call()} has no
 * {@code Context}, so there only the parameters count. The values in force are written into the
 * Reactor {@code Context} of the attempt and into the request's context under the same parameter
 * names, where the advisors behind this one find them.
 *
 * <h2>Fallbacks and notices</h2>
 * The policy's fallback steps, mid-stream notice and response cache may produce the library's
 * {@code ChatChunk}s ({@code Fallback.staticText}, {@code MidStreamPolicy.notice}), Spring AI's
 * {@link ChatResponse}s or {@link ChatClientResponse}s: the advisor answers with
 * {@code ChatClientResponse}s made from them (on {@code call()}, one put together from all of them).
 * A policy whose components declare another chunk type, or which continues cut-short answers
 * ({@code MidStreamPolicy.continueWith}), is refused when the advisor is built.
 */
public final class AiGuardAdvisor implements CallAdvisor, StreamAdvisor {

	/** Advisor parameter: the request's {@link Priority}, or its name ({@code "P0"}). */
	public static final String PRIORITY = "aiguard.priority";

	/** Advisor parameter: who the request is made for, a {@link Tenant} or its id. */
	public static final String TENANT = "aiguard.tenant";

	/** The name of an advisor built without one. */
	public static final String DEFAULT_NAME = "AiGuardAdvisor";

	/**
	 * The order of an advisor built without one: late in the chain, just before the model, so the
	 * guard sits behind chat memory, tool calling and structured-output validation (each retry is
	 * one model call, and tool execution is not timed as model silence), and in front of the model.
	 */
	public static final int DEFAULT_ORDER = Ordered.LOWEST_PRECEDENCE - 1000;

	private final String name;
	private final int order;
	private final AiGuard<Object> guard;
	private final Scheduler callScheduler;
	private final Scheduler streamScheduler;
	private final Function<Throwable, Throwable> errors;
	private final String[] secrets;

	private AiGuardAdvisor(Builder b) {
		this.name = b.name;
		this.order = b.order;
		this.guard = AiGuard.of(b.policy, new AnswerInspector(b.inspector));
		this.callScheduler = b.callScheduler;
		this.streamScheduler = b.streamScheduler;
		this.secrets = b.secrets.clone();
		Function<Throwable, Throwable> mapper = b.errors;
		String[] known = this.secrets;
		// after any mapper, the user's too: no attempt error reaches the guard, its report, its
		// metrics or a log with a credential in it
		this.errors = e -> ScrubbedErrors.scrub(mapper.apply(e), known);
	}

	/**
	 * @return an advisor guarding with {@code policy}, named {@value #DEFAULT_NAME}, at
	 *         {@link #DEFAULT_ORDER}
	 * @throws IllegalArgumentException when the policy cannot be applied to Spring AI responses
	 */
	public static AiGuardAdvisor of(GuardPolicy policy) {
		return builder(policy).build();
	}

	/** @return a builder for an advisor guarding with {@code policy} */
	public static Builder builder(GuardPolicy policy) {
		return new Builder(policy);
	}

	@Override
	public String getName() {
		return name;
	}

	@Override
	public int getOrder() {
		return order;
	}

	/** @return the policy this advisor guards with */
	public GuardPolicy policy() {
		return guard.policy();
	}

	@Override
	public Flux<ChatClientResponse> adviseStream(ChatClientRequest request, StreamAdvisorChain chain) {
		Objects.requireNonNull(request, "request");
		Objects.requireNonNull(chain, "chain");
		return Flux.deferContextual(context -> {
			Routing routing = Routing.of(request.context(), context);
			ChatClientRequest forwarded = routing.forward(request);
			PromptConversion conversion = PromptConversion.of(forwarded.prompt());
			return guard
				// subscribing the chain may block (the OpenAI SDK reads jar files the first time it
				// prepares a request; building a request may read system properties files): never on
				// the subscriber's thread, which may be an event loop
				.call(conversion.request(), sent -> Flux.defer(() -> {
					AbandonableAttempt attempt = new AbandonableAttempt(secrets);
					// a cancelled stream's blocked read ends later with an error nobody waits for
					return Flux.defer(() -> chain.copy(this).nextStream(conversion.toClientRequest(forwarded, sent)))
						.subscribeOn(streamScheduler)
						.onErrorMap(errors)
						.doOnCancel(attempt::abandon)
						.onErrorResume(attempt::afterAbandoned);
				}))
				.<ChatClientResponse>handle((chunk, sink) -> {
					ChatClientResponse response = ChunkConversion.toResponse(chunk, forwarded);
					if (response != null) {
						sink.next(response);
					}
				})
				.contextWrite(c -> AbandonableAttempt.quietDrops(routing.writeTo(c), secrets));
		});
	}

	@Override
	public ChatClientResponse adviseCall(ChatClientRequest request, CallAdvisorChain chain) {
		Objects.requireNonNull(request, "request");
		Objects.requireNonNull(chain, "chain");
		if (Schedulers.isInNonBlockingThread()) {
			// refused before anything is sent: blocking here would stall an event loop or a timer
			throw new IllegalStateException("call() waits for the guarded answer, which would block thread "
					+ Thread.currentThread().getName() + " (a non-blocking Reactor thread); use stream() there");
		}
		Routing routing = Routing.of(request.context(), Context.empty());
		ChatClientRequest forwarded = routing.forward(request);
		PromptConversion conversion = PromptConversion.of(forwarded.prompt());
		List<Object> chunks = guard
			.call(conversion.request(), sent -> Mono.defer(() -> {
				AbandonableAttempt attempt = new AbandonableAttempt(secrets);
				// abandoned before subscribeOn cancels the task: the HTTP call runs on until the
				// client's timeout ends it, and what it ends with must not be dropped with a stack trace
				return Mono
					.fromCallable(() -> attempt.run(() -> chain.copy(this)
						.nextCall(conversion.toClientRequest(forwarded, sent))))
					.onErrorMap(errors)
					.subscribeOn(callScheduler)
					.doOnCancel(attempt::abandon);
			}))
			.contextWrite(c -> AbandonableAttempt.quietDrops(routing.writeTo(c), secrets))
			.collectList()
			.block();
		return ChunkConversion.aggregate(chunks == null ? List.of() : chunks, forwarded);
	}

	@Override
	public String toString() {
		return name + "[" + guard.policy().name() + ", order " + order + "]";
	}

	/**
	 * The priority and tenant of one request: the advisor parameters, else the Reactor
	 * {@code Context}. A value of the wrong type in a parameter is an error naming it.
	 */
	private record Routing(Priority priority, Tenant tenant) {

		static Routing of(Map<String, Object> params, ContextView context) {
			Priority priority = priorityParam(params.get(PRIORITY));
			Tenant tenant = tenantParam(params.get(TENANT));
			if (priority == null) {
				priority = readable(() -> Priority.from(context, null));
			}
			if (tenant == null) {
				tenant = readable(() -> Tenant.from(context).orElse(null));
			}
			return new Routing(priority, tenant);
		}

		/**
		 * A value the {@code Context} holds that cannot be read is left where it is: the guard
		 * rejects the request for it, with its outcome and report.
		 */
		private static <V> V readable(Supplier<V> read) {
			try {
				return read.get();
			}
			catch (IllegalArgumentException unreadable) {
				return null;
			}
		}

		private static Priority priorityParam(Object value) {
			if (value == null || value instanceof Priority) {
				return (Priority) value;
			}
			if (value instanceof CharSequence) {
				return Priority.parse(value.toString());
			}
			throw new IllegalArgumentException("advisor parameter " + PRIORITY + " holds a " + value.getClass().getName()
					+ ", expected a " + Priority.class.getName() + " or its name");
		}

		private static Tenant tenantParam(Object value) {
			if (value == null || value instanceof Tenant) {
				return (Tenant) value;
			}
			if (value instanceof CharSequence) {
				return Tenant.of(value.toString());
			}
			throw new IllegalArgumentException("advisor parameter " + TENANT + " holds a " + value.getClass().getName()
					+ ", expected a " + Tenant.class.getName() + " or its id");
		}

		/** @return the request with the values in force in its context, for the advisors behind */
		ChatClientRequest forward(ChatClientRequest request) {
			if (priority == null && tenant == null) {
				return request;
			}
			ChatClientRequest.Builder b = request.mutate();
			if (priority != null) {
				b.context(PRIORITY, priority);
			}
			if (tenant != null) {
				b.context(TENANT, tenant);
			}
			return b.build();
		}

		Context writeTo(Context context) {
			Context c = context;
			if (priority != null) {
				c = c.put(Priority.CONTEXT_KEY, priority);
			}
			if (tenant != null) {
				c = c.put(Tenant.CONTEXT_KEY, tenant);
			}
			return c;
		}
	}

	/**
	 * Reads everything the advisor's guard sees: the chain's {@link ChatClientResponse}s and what
	 * the policy's fallbacks produce ({@link ChatResponse}s, the library's {@code ChatChunk}s).
	 */
	private static final class AnswerInspector implements ChunkInspector<Object> {

		private final ChunkInspector<ChatResponse> responses;

		AnswerInspector(ChunkInspector<ChatResponse> responses) {
			this.responses = responses;
		}

		@Override
		public boolean isContent(Object chunk) {
			return (flags(chunk) & CONTENT) != 0;
		}

		@Override
		public boolean isHeartbeat(Object chunk) {
			return (flags(chunk) & HEARTBEAT) != 0;
		}

		@Override
		public boolean isTerminal(Object chunk) {
			return (flags(chunk) & TERMINAL) != 0;
		}

		@Override
		public String finishReason(Object chunk) {
			if (chunk instanceof ChatClientResponse) {
				ChatResponse r = ((ChatClientResponse) chunk).chatResponse();
				return r == null ? null : responses.finishReason(r);
			}
			if (chunk instanceof ChatResponse) {
				return responses.finishReason((ChatResponse) chunk);
			}
			if (chunk instanceof ChatChunk) {
				return ((ChatChunk) chunk).finishReason();
			}
			return null;
		}

		@Override
		public int flags(Object chunk) {
			if (chunk instanceof ChatClientResponse) {
				ChatResponse r = ((ChatClientResponse) chunk).chatResponse();
				return r == null ? 0 : responses.flags(r);
			}
			if (chunk instanceof ChatResponse) {
				return responses.flags((ChatResponse) chunk);
			}
			if (chunk instanceof ChatChunk) {
				return ChatChunk.INSPECTOR.flags((ChatChunk) chunk);
			}
			return 0;
		}
	}

	/**
	 * Settings of an {@link AiGuardAdvisor}; {@link #build()} checks the policy against what the
	 * advisor can answer with.
	 */
	public static final class Builder {

		private final GuardPolicy policy;
		private String name = DEFAULT_NAME;
		private int order = DEFAULT_ORDER;
		private ChunkInspector<ChatResponse> inspector = SpringAiChunks.chatResponses();
		private Scheduler callScheduler = Schedulers.boundedElastic();
		private Scheduler streamScheduler = Schedulers.boundedElastic();
		private Function<Throwable, Throwable> errors = SpringAiErrors::map;
		private String[] secrets = new String[0];

		private Builder(GuardPolicy policy) {
			this.policy = Objects.requireNonNull(policy, "policy");
		}

		/** @param advisorName the advisor's name in Spring AI's observations; not blank */
		public Builder name(String advisorName) {
			if (advisorName == null || advisorName.isBlank()) {
				throw new IllegalArgumentException("name must not be blank, was "
						+ (advisorName == null ? "null" : "'" + advisorName + "'"));
			}
			this.name = advisorName;
			return this;
		}

		/** @param advisorOrder the advisor's place in the chain (lower runs first, further out) */
		public Builder order(int advisorOrder) {
			this.order = advisorOrder;
			return this;
		}

		/**
		 * @param responses reads the model's responses instead of {@link SpringAiChunks#chatResponses()},
		 *        e.g. to count a reasoning model's thinking deltas as heartbeats or content
		 */
		public Builder inspector(ChunkInspector<ChatResponse> responses) {
			if (responses == null) {
				throw new IllegalArgumentException("inspector must not be null");
			}
			this.inspector = responses;
			return this;
		}

		/**
		 * @param scheduler where {@code call()} runs the chain's blocking call; it must allow blocking
		 *        (default {@code Schedulers.boundedElastic()})
		 */
		public Builder callScheduler(Scheduler scheduler) {
			if (scheduler == null) {
				throw new IllegalArgumentException("callScheduler must not be null");
			}
			this.callScheduler = scheduler;
			return this;
		}

		/**
		 * @param scheduler where {@code stream()} subscribes the rest of the chain for each attempt.
		 *        Spring AI's OpenAI model blocks while it prepares a request (the SDK reads jar files
		 *        the first time, HTTP client setup reads properties files), so the default,
		 *        {@code Schedulers.boundedElastic()}, keeps that off the subscriber's thread, which
		 *        may be an event loop. {@code Schedulers.immediate()} subscribes on the caller's
		 *        thread, for a model known not to block.
		 */
		public Builder streamScheduler(Scheduler scheduler) {
			if (scheduler == null) {
				throw new IllegalArgumentException("streamScheduler must not be null");
			}
			this.streamScheduler = scheduler;
			return this;
		}

		/**
		 * @param mapper types the errors of an attempt before the guard sees them (default
		 *        {@link SpringAiErrors#map(Throwable)}); e.g. {@code e -> SpringAiErrors.map(e, "anthropic")}
		 */
		public Builder errors(Function<Throwable, Throwable> mapper) {
			if (mapper == null) {
				throw new IllegalArgumentException("errors must not be null");
			}
			this.errors = mapper;
			return this;
		}

		/**
		 * @param knownSecrets the credentials of the model behind the advisor (its API key), removed
		 *        wherever they appear in the message of an error the guard sees, reports or logs, and
		 *        in the messages of its causes. Text shaped like a credential ({@code sk-...},
		 *        {@code Bearer ...}, {@code api_key=...}) is removed without being named here, but a key
		 *        of another shape only when it is. Each at least {@value Secrets#MIN_KNOWN_SECRET}
		 *        characters, not blank
		 */
		public Builder secrets(String... knownSecrets) {
			if (knownSecrets == null) {
				throw new IllegalArgumentException("secrets must not be null");
			}
			for (String secret : knownSecrets) {
				if (secret == null || secret.isBlank() || secret.length() < Secrets.MIN_KNOWN_SECRET) {
					throw new IllegalArgumentException("secrets must each be at least " + Secrets.MIN_KNOWN_SECRET
							+ " characters and not blank, one was " + (secret == null ? "null"
									: secret.length() + " characters long"));
				}
			}
			this.secrets = knownSecrets.clone();
			return this;
		}

		/**
		 * @throws IllegalArgumentException naming the component when the policy's fallback steps,
		 *         mid-stream policy or response cache produce chunks the advisor cannot answer with
		 */
		public AiGuardAdvisor build() {
			FallbackChain<?> chain = policy.fallback();
			if (chain != null) {
				for (Fallback<?> step : chain.steps()) {
					requireSupported(step.chunkType(), "fallback step " + step);
				}
			}
			MidStreamPolicy<?> midStream = policy.midStream();
			if (midStream.mode() == MidStreamPolicy.Mode.CONTINUE) {
				throw new IllegalArgumentException("policy '" + policy.name() + "': the advisor cannot continue a "
						+ "cut-short answer (midStream " + midStream + "); use MidStreamPolicy.fail() or notice(..)");
			}
			requireSupported(midStream.chunkType(), "mid-stream policy");
			if (policy.responseCache() != null) {
				Class<?> type = policy.responseCache().chunkType();
				if (type != Object.class && type != ChatClientResponse.class) {
					throw new IllegalArgumentException("policy '" + policy.name() + "': the response cache holds "
							+ type.getName() + " chunks but the advisor stores the chain's "
							+ ChatClientResponse.class.getName());
				}
			}
			return new AiGuardAdvisor(this);
		}

		private void requireSupported(Class<?> type, String component) {
			if (!ChunkConversion.isSupported(type)) {
				throw new IllegalArgumentException("policy '" + policy.name() + "': the " + component + " produces "
						+ type.getName() + " chunks; the advisor answers from ChatClientResponse, ChatResponse or "
						+ "ChatChunk chunks");
			}
		}
	}
}
