package dev.aiguard.boot.starter;

import java.util.List;

import dev.aiguard.AiGuard;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.provider.OpenAiCompatibleClient;
import dev.aiguard.test.mock.MockModelServer;
import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;
import org.springframework.core.env.Environment;
import org.springframework.http.MediaType;
import org.springframework.security.core.userdetails.MapReactiveUserDetailsService;
import org.springframework.security.core.userdetails.User;
import org.springframework.web.reactive.function.server.RouterFunction;
import org.springframework.web.reactive.function.server.ServerResponse;

import static org.springframework.web.reactive.function.server.RouterFunctions.route;

/**
 * The starter's test application, built as docs/spring-boot.md builds one: {@code application.yml},
 * one client bean, the route below and {@link ActuatorSecurity}. {@code DocumentedExamplesTest} checks
 * that the page shows the route and the security configuration exactly as they are here.
 */
@SpringBootApplication
class ChatApplication {

	/** The password of every test user is its name followed by {@code -pw}. */
	static final String OPS = "ops", ADMIN = "admin", OTHER = "other";

	@Bean
	OpenAiCompatibleClient modelClient(Environment env) {
		return OpenAiCompatibleClient.builder(env.getRequiredProperty("model.base-url"))
			.model(MockModelServer.MODEL)
			.build();
	}

	@Bean
	RouterFunction<ServerResponse> chat(OpenAiCompatibleClient client, @Qualifier("chat") AiGuard<ChatChunk> guard) {
		return route().GET("/chat", request -> {
			String question = request.queryParam("q").orElse("Hello");
			ChatRequest ask = ChatRequest.of(null, List.of(ChatMessage.user(question))); // null: the client's model
			return ServerResponse.ok().contentType(MediaType.TEXT_EVENT_STREAM)
				.body(guard.call(ask, client::stream).filter(ChatChunk::hasContent).map(ChatChunk::text), String.class);
		}).build();
	}

	/** The test's users: an operator, an administrator and someone with neither role. */
	@Bean
	MapReactiveUserDetailsService users() {
		return new MapReactiveUserDetailsService(
				User.withUsername(OPS).password("{noop}" + OPS + "-pw").roles("AIGUARD_OPS").build(),
				User.withUsername(ADMIN).password("{noop}" + ADMIN + "-pw").roles("AIGUARD_ADMIN").build(),
				User.withUsername(OTHER).password("{noop}" + OTHER + "-pw").roles("USER").build());
	}
}
