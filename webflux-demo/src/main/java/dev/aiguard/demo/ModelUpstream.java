package dev.aiguard.demo;

import java.time.Duration;
import java.util.Objects;

import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.core.Secrets;
import dev.aiguard.test.mock.MockModelServer;
import dev.aiguard.provider.OpenAiCompatibleClient;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Flux;

/**
 * The model the guard protects: the embedded mock, or the OpenAI-compatible server named by
 * {@code AIGUARD_BASE_URL}. The mock only has a port once it has started, and gets a new one if
 * the context stops and starts it again, so its client is built on first use and rebuilt when
 * the port changed.
 */
final class ModelUpstream {

	/** The key sent to the mock, which takes any. */
	static final String MOCK_KEY = "mock-accepts-any-key";

	private final DemoProperties properties;
	@Nullable
	private final MockModelServer mock;
	private final String mockModel;
	@Nullable
	private volatile Client client;

	/** A client and the base URL it was built for. */
	private record Client(String baseUrl, OpenAiCompatibleClient http) {
	}

	/**
	 * @param mockModel the model the chat asks the mock for: the endpoint of the chat policy's
	 *        breaker path ({@code mock-large}); the mock answers any name
	 * @throws IllegalStateException when a real server is named without a key or a model
	 */
	ModelUpstream(DemoProperties properties, @Nullable MockModelServer mock, String mockModel) {
		this.properties = Objects.requireNonNull(properties, "properties");
		this.mock = mock;
		this.mockModel = Objects.requireNonNull(mockModel, "mockModel");
		if (properties.usesMock()) {
			Objects.requireNonNull(mock, "mock");
			return;
		}
		if (isBlank(properties.apiKey())) {
			throw new IllegalStateException("AIGUARD_BASE_URL is set (" + Secrets.withoutCredentials(properties.baseUrl())
					+ ") but AIGUARD_API_KEY is not. Set the key of that server (any placeholder for a local "
					+ "server that needs none), or unset AIGUARD_BASE_URL to use the embedded mock model.");
		}
		if (isBlank(properties.model())) {
			throw new IllegalStateException("AIGUARD_BASE_URL is set (" + Secrets.withoutCredentials(properties.baseUrl())
					+ ") but AIGUARD_MODEL is not. Name the model to ask, e.g. AIGUARD_MODEL=gpt-4o-mini.");
		}
		this.client = new Client(properties.baseUrl(), OpenAiCompatibleClient.builder(properties.baseUrl())
			.apiKey(properties.apiKey())
			.model(properties.model())
			.responseTimeout(Duration.ofSeconds(30))
			.build());
	}

	/** @return the answer to {@code request} from the model it names, unguarded: the caller guards it */
	Flux<ChatChunk> stream(ChatRequest request) {
		return Flux.defer(() -> client().stream(request));
	}

	/** @return the API root answers come from now: the mock's (it changes when the mock restarts) or the named server's */
	String baseUrl() {
		return mock != null ? mock.baseUrl() : Objects.requireNonNull(properties.baseUrl(), "baseUrl");
	}

	/** @return the bearer token for {@link #baseUrl()}; a placeholder for the mock, which takes any */
	String apiKey() {
		return mock != null ? MOCK_KEY : Objects.requireNonNull(properties.apiKey(), "apiKey");
	}

	/** @return the model asked, for the request body: the primary model of the mock, or {@code AIGUARD_MODEL} */
	String model() {
		return properties.usesMock() ? mockModel : properties.model();
	}

	/**
	 * @return where answers come from, safe to show: never the key, nor credentials written into the
	 *         base URL ({@code https://user:pass@host} shows as {@code https://host})
	 */
	String describe() {
		return properties.usesMock() ? "embedded mock model"
				: Secrets.withoutCredentials(properties.baseUrl()) + " (" + properties.model() + ")";
	}

	/** @return the mock, when it is the upstream */
	@Nullable
	MockModelServer mock() {
		return mock;
	}

	private OpenAiCompatibleClient client() {
		Client c = client;
		if (mock == null) {
			return Objects.requireNonNull(c, "client").http();
		}
		String url = mock.baseUrl();
		if (c == null || !c.baseUrl().equals(url)) {
			// racing calls may each build one; they are equivalent and cheap
			// the mock's placeholder key, as the Spring AI client sends it: a mock that echoes keys echoes this one
			c = new Client(url, OpenAiCompatibleClient.builder(url)
				.apiKey(apiKey())
				.model(mockModel)
				.responseTimeout(Duration.ofSeconds(30))
				.build());
			client = c;
		}
		return c.http();
	}

	private static boolean isBlank(@Nullable String s) {
		return s == null || s.isBlank();
	}
}
