package dev.aiguard.openai;

import java.io.IOException;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import com.openai.client.OpenAIClientAsync;
import com.openai.client.okhttp.OpenAIOkHttpClientAsync;
import com.openai.core.Timeout;
import com.openai.errors.OpenAIIoException;
import dev.aiguard.AiGuard;
import dev.aiguard.GuardPolicy;
import dev.aiguard.GuardReport;
import dev.aiguard.core.Secrets;
import dev.aiguard.provider.ProviderClientException;
import dev.aiguard.provider.ProviderConnectionException;
import dev.aiguard.provider.ProviderStreamException;
import dev.aiguard.retry.RetryRules;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import reactor.test.StepVerifier;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The real SDK against a mock that echoes the API key (in a 401 body and in an in-band error event,
 * each answer with the key in its {@code x-echo-api-key} header too) and a base URL with a
 * password: neither reaches an exception message, a cause's message or the guard's report.
 */
class OpenAiSdkSecretsTest {

	@RegisterExtension
	static final SdkMock sdk = SdkMock.shared();

	/** A key that no pattern recognises: only the configured secret removes it. */
	private static final String PLAIN_KEY = "test-key-5f1b7c9d2e";
	/** A key shaped like OpenAI's: removed even when nobody configured it. */
	private static final String OPENAI_KEY = "sk-proj-Qw3rTy8uIo9pAs7dFg";
	private static final String PASSWORD = "hunter2-pass";
	private static final String KEY_IN_BODY = "{\"error\":{\"message\":\"Incorrect API key provided: {api_key}. "
			+ "You can find your API key at https://platform.openai.com.\",\"type\":\"invalid_request_error\","
			+ "\"param\":null,\"code\":\"invalid_api_key\"}}";

	private final List<GuardReport> reports = new CopyOnWriteArrayList<>();
	private final List<OpenAIClientAsync> clients = new CopyOnWriteArrayList<>();

	@AfterEach
	void closeClients() {
		clients.forEach(OpenAIClientAsync::close);
	}

	private OpenAIClientAsync client(String baseUrl, String key) {
		OpenAIClientAsync client = OpenAIOkHttpClientAsync.builder()
			.baseUrl(baseUrl)
			.apiKey(key)
			.maxRetries(0)
			.timeout(Timeout.builder().read(SdkMock.READ_TIMEOUT).build())
			.build();
		clients.add(client);
		return client;
	}

	/** Runs one guarded call and checks that the error, its causes and the report are free of {@code secret}. */
	private Throwable failWithout(OpenAiStreams streams, String secret) {
		Throwable[] seen = new Throwable[1];
		StepVerifier.create(AiGuard.of(GuardPolicy.builder("secrets").retry(RetryRules.none()).onReport(reports::add).build())
				.call(SdkMock.request("Hello"), streams.calls(SdkMock.params("Hello"))))
			.thenConsumeWhile(c -> true)
			.expectErrorSatisfies(e -> seen[0] = e)
			.verify(SdkMock.WAIT);
		assertNoSecret(seen[0], secret);
		SdkMock.await(() -> reports.size(), 1);
		GuardReport report = reports.get(0);
		assertThat(report.toString()).doesNotContain(secret);
		report.attempts().forEach(a -> assertNoSecret(a.error(), secret));
		return seen[0];
	}

	private static void assertNoSecret(Throwable error, String secret) {
		for (Throwable t = error; t != null; t = t.getCause()) {
			assertThat(String.valueOf(t.getMessage())).as("message of %s", t.getClass().getName()).doesNotContain(secret);
			assertThat(t.toString()).doesNotContain(secret);
		}
	}

	@Test
	void aKeyEchoedInA401BodyIsScrubbedWhenConfigured() {
		sdk.mock.faults(SdkMock.FAST.withErrors(1.0, 401, 0).withErrorBody(KEY_IN_BODY));

		Throwable e = failWithout(OpenAiStreams.create(client(sdk.mock.baseUrl(), PLAIN_KEY)).secrets(PLAIN_KEY), PLAIN_KEY);

		assertThat(e).isInstanceOfSatisfying(ProviderClientException.class, c -> {
			assertThat(c.status()).isEqualTo(401);
			assertThat(c.getMessage()).contains("Incorrect API key provided: " + Secrets.REDACTED);
		});
	}

	@Test
	void aKeyShapedLikeAProvidersIsScrubbedWithoutConfiguration() {
		sdk.mock.faults(SdkMock.FAST.withErrors(1.0, 401, 0).withErrorBody(KEY_IN_BODY));

		Throwable e = failWithout(OpenAiStreams.create(client(sdk.mock.baseUrl(), OPENAI_KEY)), OPENAI_KEY);

		assertThat(e).isInstanceOf(ProviderClientException.class).hasMessageContaining(Secrets.REDACTED);
	}

	@ParameterizedTest
	@ValueSource(ints = { 0, 2 })
	void aKeyEchoedInAnInBandErrorEventIsScrubbed(int tokensBefore) {
		sdk.mock.faults(SdkMock.FAST.withInBandError(tokensBefore, "invalid_api_key"));

		Throwable e = failWithout(OpenAiStreams.create(client(sdk.mock.baseUrl(), PLAIN_KEY)).secrets(PLAIN_KEY), PLAIN_KEY);

		Throwable typed = tokensBefore == 0 ? e : e.getCause();
		assertThat(typed).isInstanceOfSatisfying(ProviderStreamException.class, s -> {
			assertThat(s.errorType()).isEqualTo("invalid_api_key");
			assertThat(s.getMessage()).contains("Incorrect API key provided: " + Secrets.REDACTED);
		});
	}

	@Test
	void aPasswordInTheBaseUrlIsInNoErrorOfADroppedConnection() {
		sdk.mock.faults(SdkMock.FAST.withDropAfter(0));
		long before = sdk.mock.stats().requests();
		String baseUrl = "http://user:" + PASSWORD + "@127.0.0.1:" + sdk.mock.port() + "/v1";

		Throwable e = failWithout(OpenAiStreams.create(client(baseUrl, PLAIN_KEY)).secrets(PLAIN_KEY, PASSWORD), PASSWORD);

		assertThat(e).isInstanceOf(ProviderConnectionException.class);
		assertThat(sdk.mock.stats().requests()).as("the SDK sent the request to the URL with user-info").isEqualTo(before + 1);
	}

	@Test
	void aTransportErrorWhoseMessageHoldsASecretLosesThatCause() {
		OpenAIIoException io = new OpenAIIoException("request failed",
				new IOException("CONNECT http://user:" + PASSWORD + "@proxy:3128 failed"));

		Throwable mapped = OpenAiSdkErrors.map(io, PASSWORD);

		assertThat(mapped).isInstanceOf(ProviderConnectionException.class).hasNoCause();
		assertNoSecret(mapped, PASSWORD);
		assertThat(mapped.getMessage()).contains("http://" + Secrets.REDACTED + "@proxy:3128");
	}

	@Test
	void aNullSecretIsRefusedNamingIt() {
		OpenAiStreams streams = OpenAiStreams.create(sdk.client);
		assertThatThrownBy(() -> streams.secrets("a", null))
			.isInstanceOf(IllegalArgumentException.class)
			.hasMessageContaining("secrets[1]");
	}
}
