package dev.aiguard.springai;

import java.util.ArrayList;
import java.util.List;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.classic.spi.IThrowableProxy;
import ch.qos.logback.core.read.ListAppender;
import dev.aiguard.GuardReport;
import dev.aiguard.core.Secrets;
import dev.aiguard.provider.ProviderClientException;
import dev.aiguard.provider.ProviderException;
import dev.aiguard.provider.ProviderStreamException;
import dev.aiguard.provider.RateLimitedException;
import dev.aiguard.retry.PartialStreamException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.slf4j.LoggerFactory;
import org.springframework.ai.chat.client.ChatClient;
import org.springframework.ai.openai.OpenAiChatModel;

import static dev.aiguard.springai.SpringAiMock.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

/**
 * A provider that echoes the API key in its errors (OpenAI's 401 says "Incorrect API key provided:
 * sk-..."): through the advisor the key is in no exception message, no cause's message, no field of
 * the report and no log line. The mock echoes the request's key in a 401 body, in an in-band error
 * event and in a response header. A key shaped like a provider key is removed without being
 * named; a key of another shape is removed when the advisor is given it ({@code secrets(..)}).
 */
class SecretScrubbingTest extends AdvisorFixture {

	private static final String SHAPED_KEY = "sk-proj-Zx81QwErTy0123456789abcd";
	private static final String PLAIN_KEY = "my-company-gateway-secret-4242";

	private final Logger root = (Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
	private final Logger aiguard = (Logger) LoggerFactory.getLogger("dev.aiguard");
	private final ListAppender<ILoggingEvent> logged = new ListAppender<>();
	private Level aiguardLevel;

	SecretScrubbingTest() {
		super("spring-ai-secrets");
	}

	@BeforeEach
	void captureLogs() {
		aiguardLevel = aiguard.getLevel();
		aiguard.setLevel(Level.DEBUG);
		logged.start();
		root.addAppender(logged);
	}

	@AfterEach
	void releaseLogs() {
		root.detachAppender(logged);
		aiguard.setLevel(aiguardLevel);
	}

	private ChatClient client(String key, boolean told) {
		OpenAiChatModel model = ai.model(ai.options().apiKey(key).build());
		AiGuardAdvisor.Builder advisor = AiGuardAdvisor.builder(policy().build());
		if (told) {
			advisor.secrets(key);
		}
		return ChatClient.builder(model).defaultAdvisors(advisor.build()).build();
	}

	@ParameterizedTest(name = "{0} key, {1}, stream: {2}")
	@CsvSource({ "shaped, 401, true", "shaped, 401, false", "shaped, in-band, true", "shaped, in-band, false",
			"plain, 401, true", "plain, 401, false", "plain, in-band, true", "plain, in-band, false" })
	void anEchoedKeyReachesNoMessageReportOrLog(String shape, String fault, boolean stream) {
		String key = shape.equals("shaped") ? SHAPED_KEY : PLAIN_KEY;
		if (fault.equals("401")) {
			ai.mock.faults(ai.mock.faults().withErrors(1.0, 401, 0)
				.withErrorBody("{\"error\":{\"message\":\"Incorrect API key provided: {api_key}. You can find your API key at "
						+ "https://platform.openai.com/account/api-keys.\",\"type\":\"invalid_request_error\","
						+ "\"code\":\"invalid_api_key\"}}"));
		}
		else {
			ai.mock.faults(ai.mock.faults().withInBandError(2, "invalid_api_key"));
		}
		// a key of a provider's shape needs no telling; another needs secrets(..)
		ChatClient chat = client(key, shape.equals("plain"));

		Throwable error = stream ? catchThrowable(() -> chat.prompt("Hello").stream().content().blockLast(WAIT))
				: catchThrowable(() -> chat.prompt("Hello").call().content());

		ProviderException provider = providerError(error);
		if (fault.equals("401")) {
			assertThat(provider).isInstanceOf(ProviderClientException.class);
			assertThat(provider.status()).isEqualTo(401);
			assertThat(provider.errorCode()).isEqualTo("invalid_api_key");
		}
		else if (stream) {
			assertThat(error).isInstanceOf(PartialStreamException.class);
			assertThat(provider).isInstanceOf(ProviderStreamException.class);
		}
		assertThat(provider.getMessage()).contains(Secrets.REDACTED);
		GuardReport report = reports.next().block(WAIT);
		assertThat(texts(error)).noneMatch(t -> t.contains(key));
		assertThat(report.toString()).doesNotContain(key);
		for (GuardReport.Attempt attempt : report.attempts()) {
			assertThat(texts(attempt.error())).noneMatch(t -> t.contains(key));
		}
		assertThat(texts(report.error())).noneMatch(t -> t.contains(key));
		assertThat(logLines()).noneMatch(t -> t.contains(key));
	}

	@Test
	void withoutBeingToldTheAdvisorCannotKnowAKeyOfAnotherShape() {
		ai.mock.faults(ai.mock.faults().withErrors(1.0, 401, 0)
			.withErrorBody("{\"error\":{\"message\":\"Incorrect API key provided: {api_key}.\"}}"));
		ChatClient chat = client(PLAIN_KEY, false);

		assertThatThrownBy(() -> chat.prompt("Hello").call().content())
			.isInstanceOf(ProviderClientException.class)
			.hasMessageContaining(PLAIN_KEY);
	}

	@Test
	void aScrubbedErrorKeepsItsTypeAndFields() {
		RateLimitedException limited = new RateLimitedException("openai", 429, "requests", "rate_limit_exceeded",
				"HTTP 429: slow down, key " + SHAPED_KEY, java.time.Duration.ofSeconds(2),
				dev.aiguard.provider.RateLimits.UNKNOWN);

		Throwable scrubbed = SpringAiErrors.scrub(limited);

		assertThat(scrubbed).isInstanceOfSatisfying(RateLimitedException.class, r -> {
			assertThat(r.getMessage()).isEqualTo("HTTP 429: slow down, key " + Secrets.REDACTED);
			assertThat(r.status()).isEqualTo(429);
			assertThat(r.errorType()).isEqualTo("requests");
			assertThat(r.errorCode()).isEqualTo("rate_limit_exceeded");
			assertThat(r.retryAfter()).contains(java.time.Duration.ofSeconds(2));
		});
		IllegalStateException clean = new IllegalStateException("nothing to hide");
		assertThat(SpringAiErrors.scrub(clean)).isSameAs(clean);
		Throwable wrapped = SpringAiErrors.scrub(new IllegalStateException("outer",
				new java.io.IOException("token=" + PLAIN_KEY)), PLAIN_KEY);
		assertThat(texts(wrapped)).noneMatch(t -> t.contains(PLAIN_KEY)).anyMatch(t -> t.contains("IOException"));
	}

	@Test
	void secretsTooShortOrBlankFailNamingTheField() {
		AiGuardAdvisor.Builder b = AiGuardAdvisor.builder(policy().build());
		assertThatThrownBy(() -> b.secrets("abc")).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("secrets");
		assertThatThrownBy(() -> b.secrets("       ")).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("secrets");
		assertThatThrownBy(() -> b.secrets((String) null)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("secrets");
	}

	private static ProviderException providerError(Throwable error) {
		Throwable c = error;
		while (c != null && !(c instanceof ProviderException)) {
			c = c.getCause();
		}
		assertThat(c).as("a provider error in %s", error).isNotNull();
		return (ProviderException) c;
	}

	/** @return the message and text of the error, of its causes and of their suppressed errors */
	private static List<String> texts(Throwable error) {
		List<String> texts = new ArrayList<>();
		collect(error, texts, 0);
		return texts;
	}

	private static void collect(Throwable e, List<String> texts, int depth) {
		if (e == null || depth > 10) {
			return;
		}
		texts.add(String.valueOf(e.getMessage()));
		texts.add(e.toString());
		for (Throwable s : e.getSuppressed()) {
			collect(s, texts, depth + 1);
		}
		collect(e.getCause(), texts, depth + 1);
	}

	private List<String> logLines() {
		List<String> lines = new ArrayList<>();
		for (ILoggingEvent e : List.copyOf(logged.list)) {
			lines.add(e.getFormattedMessage());
			for (IThrowableProxy t = e.getThrowableProxy(); t != null; t = t.getCause()) {
				lines.add(t.getClassName() + ": " + t.getMessage());
			}
		}
		return lines;
	}
}
