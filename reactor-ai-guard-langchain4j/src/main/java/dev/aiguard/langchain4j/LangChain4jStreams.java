package dev.aiguard.langchain4j;

import java.util.Locale;
import java.util.Objects;
import java.util.function.Function;

import dev.aiguard.AiGuard;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.core.Secrets;
import dev.langchain4j.model.ModelProvider;
import dev.langchain4j.model.chat.StreamingChatModel;
import reactor.core.publisher.Flux;
import reactor.core.publisher.FluxSink;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * A LangChain4j {@link StreamingChatModel} as a {@code Flux<ChatChunk>} the guard understands: a
 * finish reason is the terminal, cancelling ends the HTTP exchange (before the first token too),
 * and LangChain4j's errors become the library's typed provider errors.
 *
 * <pre>{@code
 * StreamingChatModel model = OpenAiStreamingChatModel.builder()
 *     .httpClientBuilder(AbortableHttpClientBuilder.create())     // cancel before the first token, Retry-After
 *     .baseUrl(baseUrl).apiKey(key).modelName("gpt-4o-mini")
 *     .build();
 * LangChain4jStreams streams = LangChain4jStreams.of(model);       // build once, share
 *
 * Flux<ChatChunk> answer = AiGuard.of(policy).call(request, streams);          // the library's ChatRequest
 * Flux<ChatChunk> answer = streams.call(AiGuard.of(policy), langChain4jRequest); // LangChain4j's own
 * }</pre>
 *
 * Each subscription is one {@code model.chat(..)} call, made on {@link Schedulers#boundedElastic()}
 * by default (LangChain4j builds the request and may call listeners on that thread; none of it is
 * meant for a non-blocking thread). The chunks arrive on LangChain4j's HTTP client threads. Nothing
 * is sent before subscription, and a re-subscription (the guard's retry) is a new call.
 *
 * <p>LangChain4j's streaming models do not retry (only its synchronous models have
 * {@code maxRetries}), so the guard's retry rules are the only ones in force.
 */
public final class LangChain4jStreams implements Function<ChatRequest, Flux<ChatChunk>> {

	private final StreamingChatModel model;
	private final LangChain4jErrors errors;
	private final Scheduler scheduler;

	private LangChain4jStreams(Builder builder) {
		this.model = builder.model;
		this.errors = new LangChain4jErrors(builder.provider != null ? builder.provider : providerName(builder.model),
				builder.secrets);
		this.scheduler = builder.scheduler;
	}

	/** @return the streams of {@code model}, with its provider's name and the default scheduler */
	public static LangChain4jStreams of(StreamingChatModel model) {
		return builder(model).build();
	}

	/** @return a builder for the streams of {@code model} */
	public static Builder builder(StreamingChatModel model) {
		return new Builder(Objects.requireNonNull(model, "model"));
	}

	/**
	 * Sends the library's request: roles, texts, tool calls and results, the model name,
	 * {@code maxTokens} and the temperature (the model's defaults for everything else).
	 *
	 * @return the answer; nothing is sent until it is subscribed
	 */
	@Override
	public Flux<ChatChunk> apply(ChatRequest request) {
		Objects.requireNonNull(request, "request");
		return Flux.defer(() -> stream(LangChain4jRequests.toLangChain4j(request)));
	}

	/**
	 * Sends LangChain4j's own request as it is.
	 *
	 * <pre>{@code
	 * Flux<ChatChunk> answer = streams.stream(request).transform(AiGuard.of(policy));
	 * }</pre>
	 *
	 * @return the answer; nothing is sent until it is subscribed, each subscription sends again
	 */
	public Flux<ChatChunk> stream(dev.langchain4j.model.chat.request.ChatRequest request) {
		Objects.requireNonNull(request, "request");
		return Flux.create(sink -> StreamBridge.start(sink, model, request, errors, scheduler),
				FluxSink.OverflowStrategy.BUFFER);
	}

	/**
	 * The guard's call form for LangChain4j's own request: the guard sees the messages' texts (to
	 * shrink the prompt after a context-length error, to continue after a mid-stream failure, to key
	 * the response cache) and LangChain4j gets the original request back wherever the guard kept it
	 * as it was: the original messages (images and all), the original parameters (tools, response
	 * format...) with the guard's changes (model, {@code maxTokens}, temperature) on top.
	 *
	 * @throws IllegalArgumentException naming the message when one is of a kind the library has no
	 *         role for (a custom message): guard {@link #stream} with {@code transform} then
	 */
	public Flux<ChatChunk> call(AiGuard<ChatChunk> guard, dev.langchain4j.model.chat.request.ChatRequest request) {
		Objects.requireNonNull(guard, "guard");
		LangChain4jRequests.Conversion conversion = LangChain4jRequests.fromLangChain4j(request);
		return guard.call(conversion.request(), r -> stream(conversion.toLangChain4j(r)));
	}

	/** @return the provider name the typed errors carry ({@code openai}, {@code anthropic}...) */
	public String provider() {
		return errors.provider();
	}

	/** @return the model the streams call */
	public StreamingChatModel model() {
		return model;
	}

	private static String providerName(StreamingChatModel model) {
		ModelProvider p;
		try {
			p = model.provider();
		}
		catch (RuntimeException e) {
			// a model that does not say: the errors are still typed, under a neutral name
			return "langchain4j";
		}
		if (p == null) {
			return "langchain4j";
		}
		switch (p) {
			case OPEN_AI:
				return "openai";
			case AZURE_OPEN_AI:
				return "azure-openai";
			case ANTHROPIC:
				return "anthropic";
			default:
				return p.name().toLowerCase(Locale.ROOT).replace('_', '-');
		}
	}

	/** Settings of a {@link LangChain4jStreams}. */
	public static final class Builder {

		private final StreamingChatModel model;
		private String provider;
		private String[] secrets = new String[0];
		private Scheduler scheduler = Schedulers.boundedElastic();

		private Builder(StreamingChatModel model) {
			this.model = model;
		}

		/**
		 * The provider name the typed errors carry (default: from {@link StreamingChatModel#provider()},
		 * {@code openai} for OpenAI).
		 *
		 * @throws IllegalArgumentException when blank
		 */
		public Builder provider(String name) {
			Objects.requireNonNull(name, "provider");
			if (name.isBlank()) {
				throw new IllegalArgumentException("provider must not be blank, was '" + name + "'");
			}
			this.provider = name;
			return this;
		}

		/**
		 * Secrets no error of these streams ever shows: the API key the model was built with, the
		 * password of a proxy or of the base URL. LangChain4j does not tell them (the model keeps its
		 * key to itself), so pass them here. Provider texts (error bodies, in-band error events,
		 * transport messages) have each of them, and anything shaped like a key ({@code sk-...},
		 * {@code Bearer ...}, {@code api_key=...}, a URL's user-info), replaced by
		 * {@value Secrets#REDACTED} before they become an exception message; the shaped ones are
		 * replaced also when no secret is given.
		 *
		 * <pre>{@code
		 * LangChain4jStreams streams = LangChain4jStreams.builder(model).secrets(apiKey).build();
		 * }</pre>
		 *
		 * @throws IllegalArgumentException when a secret is null; empty ones are skipped
		 */
		public Builder secrets(String... secrets) {
			this.secrets = Secrets.checked(secrets);
			return this;
		}

		/**
		 * Where {@code model.chat(..)} is called (default {@link Schedulers#boundedElastic()});
		 * {@link Schedulers#immediate()} calls it on the subscribing thread, which must then be
		 * allowed to block briefly.
		 */
		public Builder scheduler(Scheduler scheduler) {
			this.scheduler = Objects.requireNonNull(scheduler, "scheduler");
			return this;
		}

		/** @return the streams */
		public LangChain4jStreams build() {
			return new LangChain4jStreams(this);
		}
	}
}
