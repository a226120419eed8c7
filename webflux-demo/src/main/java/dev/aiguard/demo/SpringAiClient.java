package dev.aiguard.demo;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

import dev.aiguard.chat.ChatMessage;
import dev.aiguard.core.Priority;
import dev.aiguard.core.Tenant;
import dev.aiguard.springai.AiGuardAdvisor;
import org.jspecify.annotations.Nullable;
import org.springframework.ai.chat.client.ChatClient;
import org.springframework.ai.chat.client.ChatClientResponse;
import org.springframework.ai.chat.messages.AssistantMessage;
import org.springframework.ai.chat.messages.Message;
import org.springframework.ai.chat.messages.SystemMessage;
import org.springframework.ai.chat.messages.UserMessage;
import org.springframework.ai.chat.model.ChatResponse;
import org.springframework.ai.chat.prompt.Prompt;
import org.springframework.ai.openai.OpenAiChatModel;
import org.springframework.ai.openai.OpenAiChatOptions;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * The {@code spring-ai} client: Spring AI's {@link ChatClient} over its {@link OpenAiChatModel},
 * guarded by an {@link AiGuardAdvisor}, asking the same upstream as the library client (the
 * embedded mock, or the server named by {@code AIGUARD_BASE_URL}).
 *
 * <pre>{@code
 * ChatClient.builder(model).defaultAdvisors(AiGuardAdvisor.of(policy)).build()
 *     .prompt(prompt).advisors(a -> a.param(AiGuardAdvisor.PRIORITY, priority))
 *     .stream().chatClientResponse();
 * }</pre>
 *
 * The OpenAI SDK under the model retries nothing ({@code maxRetries(0)}): the guard's retries are
 * the only ones, counted in its breaker, budget and reports. Like the library client, the model is
 * built again when the mock has moved to another port. Building one blocks (OkHttp reads the JVM's
 * network and proxy settings from disk, and sets up TLS), so it is built when the app starts and,
 * after a move, on {@code boundedElastic}: never on the event loop that serves the request.
 */
final class SpringAiClient {

	private final ModelUpstream upstream;
	private final AiGuardAdvisor advisor;
	private final Duration timeout;
	@Nullable
	private volatile Client client;

	/** A guarded chat client and the base URL its model was built for. */
	private record Client(String baseUrl, ChatClient chat) {
	}

	/**
	 * @param timeout the OpenAI SDK's read timeout and cap on a whole call
	 *        ({@code aiguard.spring-ai.timeout})
	 */
	SpringAiClient(ModelUpstream upstream, AiGuardAdvisor advisor, Duration timeout) {
		this.upstream = Objects.requireNonNull(upstream, "upstream");
		this.advisor = Objects.requireNonNull(advisor, "advisor");
		this.timeout = Objects.requireNonNull(timeout, "timeout");
		// on the thread that starts the app, which may block; a bad setting stops the start
		this.client = build(upstream.baseUrl());
	}

	/**
	 * @return the guarded answer to {@code messages} as text deltas ({@code ""} for the responses
	 *         that carry none: the role, the finish reason, the usage); the advisor's guard answers
	 *         from the fallbacks when the model cannot
	 */
	Flux<String> stream(List<ChatMessage> messages, Priority priority, Tenant tenant) {
		return chat()
			.flatMapMany(chat -> chat
				.prompt(new Prompt(toSpringAi(messages)))
				.advisors(a -> a.param(AiGuardAdvisor.PRIORITY, priority).param(AiGuardAdvisor.TENANT, tenant))
				.stream()
				.chatClientResponse())
			.map(SpringAiClient::text);
	}

	/** @return the client of the upstream's current base URL, built on {@code boundedElastic} when it moved */
	Mono<ChatClient> chat() {
		return Mono.defer(() -> {
			Client c = client;
			String url = upstream.baseUrl();
			if (c != null && c.baseUrl().equals(url)) {
				return Mono.just(c.chat());
			}
			// racing calls may each build one; they are equivalent, and the losers are garbage
			return Mono.fromCallable(() -> {
				Client built = build(url);
				client = built;
				return built.chat();
			}).subscribeOn(Schedulers.boundedElastic());
		});
	}

	private Client build(String baseUrl) {
		OpenAiChatModel model = OpenAiChatModel.builder()
			.options(OpenAiChatOptions.builder()
				.baseUrl(baseUrl)
				.apiKey(upstream.apiKey())
				.model(upstream.model())
				.maxRetries(0)
				.timeout(timeout)
				.build())
			.build();
		return new Client(baseUrl, ChatClient.builder(model).defaultAdvisors(advisor).build());
	}

	/** @return the conversation as Spring AI messages, role for role */
	static List<Message> toSpringAi(List<ChatMessage> messages) {
		List<Message> out = new ArrayList<>(messages.size());
		for (ChatMessage m : messages) {
			out.add(switch (m.role()) {
				case SYSTEM -> new SystemMessage(m.content());
				case USER -> new UserMessage(m.content());
				case ASSISTANT -> new AssistantMessage(m.content());
				default -> throw new IllegalArgumentException("the demo sends system, user and assistant messages only, "
						+ "not " + m.role());
			});
		}
		return out;
	}

	private static String text(ChatClientResponse response) {
		ChatResponse r = response.chatResponse();
		return r == null ? "" : SpringAiAnswerCache.text(r);
	}
}
