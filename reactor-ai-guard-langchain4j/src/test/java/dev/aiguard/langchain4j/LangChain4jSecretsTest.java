package dev.aiguard.langchain4j;

import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import dev.aiguard.AiGuard;
import dev.aiguard.GuardPolicy;
import dev.aiguard.GuardReport;
import dev.aiguard.chat.ChatMessage;
import dev.aiguard.core.Secrets;
import dev.aiguard.provider.ProviderClientException;
import dev.aiguard.provider.ProviderConnectionException;
import dev.aiguard.provider.ProviderStreamException;
import dev.aiguard.retry.RetryRules;
import dev.aiguard.test.mock.MockModelServer;
import dev.langchain4j.model.openai.OpenAiStreamingChatModel;
import org.junit.jupiter.api.AutoClose;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import reactor.test.StepVerifier;

import static dev.aiguard.langchain4j.MockModels.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * An upstream that echoes the API key (in a 401 body and in an in-band error event, each answer
 * with the key in its {@code x-echo-api-key} header too) and a base URL with a password: neither
 * reaches an exception message, a cause's message or the guard's report.
 */
class LangChain4jSecretsTest {

	/** A key that no pattern recognises: only the configured secret removes it. */
	private static final String PLAIN_KEY = "test-key-5f1b7c9d2e";
	/** A key shaped like OpenAI's: removed even when nobody configured it. */
	private static final String OPENAI_KEY = "sk-proj-Qw3rTy8uIo9pAs7dFg";
	private static final String PASSWORD = "hunter2-pass";
	private static final String KEY_IN_BODY = "{\"error\":{\"message\":\"Incorrect API key provided: {api_key}. "
			+ "You can find your API key at https://platform.openai.com.\",\"type\":\"invalid_request_error\","
			+ "\"param\":null,\"code\":\"invalid_api_key\"}}";

	@AutoClose
	private final MockModelServer mock = MockModels.startMock();
	private final BlockingQueue<GuardReport> reports = new LinkedBlockingQueue<>();

	private AiGuard<dev.aiguard.chat.ChatChunk> guard() {
		return AiGuard.of(GuardPolicy.builder("secrets").retry(RetryRules.none()).onReport(reports::add).build());
	}

	private static dev.aiguard.chat.ChatRequest ask() {
		return dev.aiguard.chat.ChatRequest.of(null, List.of(ChatMessage.user("Hello")));
	}

	private static OpenAiStreamingChatModel model(String baseUrl, String key) {
		return OpenAiStreamingChatModel.builder()
			.httpClientBuilder(AbortableHttpClientBuilder.create())
			.baseUrl(baseUrl)
			.apiKey(key)
			.modelName(MockModelServer.MODEL)
			.timeout(WAIT)
			.build();
	}

	/** Runs one guarded call and checks that the error, its causes and the report are free of {@code secret}. */
	private Throwable failWithout(LangChain4jStreams streams, String secret) throws InterruptedException {
		Throwable[] seen = new Throwable[1];
		StepVerifier.create(guard().call(ask(), streams))
			.thenConsumeWhile(c -> true)
			.expectErrorSatisfies(e -> seen[0] = e)
			.verify(WAIT);
		for (Throwable t = seen[0]; t != null; t = t.getCause()) {
			assertThat(t.getMessage()).as("message of %s", t.getClass().getName()).doesNotContain(secret);
			assertThat(t.toString()).doesNotContain(secret);
		}
		GuardReport report = reports.poll(WAIT.toMillis(), TimeUnit.MILLISECONDS);
		assertThat(report).isNotNull();
		assertThat(report.toString()).doesNotContain(secret);
		for (GuardReport.Attempt a : report.attempts()) {
			for (Throwable t = a.error(); t != null; t = t.getCause()) {
				assertThat(String.valueOf(t.getMessage())).doesNotContain(secret);
			}
		}
		return seen[0];
	}

	@Test
	void aKeyEchoedInA401BodyIsScrubbedWhenConfigured() throws InterruptedException {
		mock.faults(mock.faults().withErrors(1.0, 401, 0).withErrorBody(KEY_IN_BODY));
		LangChain4jStreams streams = LangChain4jStreams.builder(model(mock.baseUrl(), PLAIN_KEY)).secrets(PLAIN_KEY).build();

		Throwable e = failWithout(streams, PLAIN_KEY);

		assertThat(e).isInstanceOfSatisfying(ProviderClientException.class, c -> {
			assertThat(c.status()).isEqualTo(401);
			assertThat(c.getMessage()).contains("Incorrect API key provided: " + Secrets.REDACTED);
		});
	}

	@Test
	void aKeyShapedLikeAProvidersIsScrubbedWithoutConfiguration() throws InterruptedException {
		mock.faults(mock.faults().withErrors(1.0, 401, 0).withErrorBody(KEY_IN_BODY));

		Throwable e = failWithout(LangChain4jStreams.of(model(mock.baseUrl(), OPENAI_KEY)), OPENAI_KEY);

		assertThat(e).isInstanceOf(ProviderClientException.class).hasMessageContaining(Secrets.REDACTED);
	}

	@ParameterizedTest
	@ValueSource(ints = { 0, 2 })
	void aKeyEchoedInAnInBandErrorEventIsScrubbed(int tokensBefore) throws InterruptedException {
		mock.faults(mock.faults().withInBandError(tokensBefore, "invalid_api_key"));
		LangChain4jStreams streams = LangChain4jStreams.builder(model(mock.baseUrl(), PLAIN_KEY)).secrets(PLAIN_KEY).build();

		Throwable e = failWithout(streams, PLAIN_KEY);

		Throwable typed = tokensBefore == 0 ? e : e.getCause();
		assertThat(typed).isInstanceOfSatisfying(ProviderStreamException.class, s -> {
			assertThat(s.errorType()).isEqualTo("invalid_api_key");
			assertThat(s.getMessage()).contains("Incorrect API key provided: " + Secrets.REDACTED);
		});
	}

	@Test
	void aPasswordInTheBaseUrlIsInNoErrorOfADroppedConnection() throws InterruptedException {
		mock.faults(mock.faults().withDropAfter(0));
		String baseUrl = "http://user:" + PASSWORD + "@127.0.0.1:" + mock.port() + "/v1";
		LangChain4jStreams streams = LangChain4jStreams.builder(model(baseUrl, PLAIN_KEY)).secrets(PLAIN_KEY, PASSWORD).build();

		Throwable e = failWithout(streams, PASSWORD);

		assertThat(e).isInstanceOf(ProviderConnectionException.class);
		assertThat(mock.stats().requests()).as("the JDK client sent the request to the URL with user-info").isEqualTo(1);
	}

	@Test
	void aNullSecretIsRefusedNamingIt() {
		LangChain4jStreams.Builder builder = LangChain4jStreams.builder(model(mock.baseUrl(), PLAIN_KEY));
		assertThatThrownBy(() -> builder.secrets("a", null))
			.isInstanceOf(IllegalArgumentException.class)
			.hasMessageContaining("secrets[1]");
	}
}
