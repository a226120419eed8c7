package dev.aiguard.demo;

import java.time.Duration;
import java.util.List;

import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.util.unit.DataSize;

/**
 * Settings of the demo under {@code aiguard.*}. The upstream comes from the environment
 * ({@code AIGUARD_BASE_URL}, {@code AIGUARD_API_KEY}, {@code AIGUARD_MODEL}); without a base URL
 * the embedded mock model answers. Everything else has defaults that suit a person watching the
 * page; tests shorten them. The guard's own settings (deadlines, retries, breaker, lanes) are the
 * starter's, under {@code aiguard.policies.chat}, {@code aiguard.breakers.model} and
 * {@code aiguard.lanes}: none of this record's keys is one of the starter's.
 *
 * @param baseUrl an OpenAI-compatible API root, or empty for the embedded mock
 * @param apiKey its bearer token (never logged, never shown)
 * @param model the model to ask
 */
@ConfigurationProperties("aiguard")
record DemoProperties(@Nullable String baseUrl, @Nullable String apiKey, @Nullable String model,
		@DefaultValue Chat chat, @DefaultValue Mock mock, @DefaultValue Fallback fallback,
		@DefaultValue SpringAi springAi, @DefaultValue Access access) {

	/** @return whether the embedded mock model answers */
	boolean usesMock() {
		return baseUrl == null || baseUrl.isBlank();
	}

	/** The key must not reach a log line through an accidental {@code toString()}. */
	@Override
	public String toString() {
		return "DemoProperties{baseUrl=" + (usesMock() ? "(embedded mock)" : baseUrl) + ", apiKey="
				+ (apiKey == null || apiKey.isBlank() ? "(none)" : "(set)") + ", model=" + model + ", access="
				+ access + '}';
	}

	/**
	 * @param maxBodySize the largest {@code POST /api/chat} body accepted; larger ones get 413
	 * @param client the client that answers a request naming none: {@code library} or {@code spring-ai}
	 */
	record Chat(@DefaultValue("1MB") DataSize maxBodySize, @DefaultValue("library") AnswerClient client) {
	}

	/**
	 * The embedded mock model.
	 *
	 * @param firstTokenDelay its pace when no fault is set (and after {@code DELETE /api/faults})
	 * @param tokenInterval the gap between tokens at that pace
	 * @param port its loopback port; 0 picks a free one at start
	 */
	record Mock(@DefaultValue("300ms") Duration firstTokenDelay, @DefaultValue("40ms") Duration tokenInterval,
			@DefaultValue("0") int port) {

		Mock {
			if (port < 0 || port > 65_535) {
				throw new IllegalArgumentException(
						"aiguard.mock.port must be between 0 and 65535 (0 picks a free port), was " + port);
			}
		}
	}

	/**
	 * The ladder below the model: the response cache, canned answers, then a fixed message.
	 *
	 * @param staticText the last rung's message
	 * @param timeout how long each rung may take to its first chunk
	 * @param cacheEntries answers kept in the response cache
	 * @param cacheTtl how long a cached answer stays
	 */
	record Fallback(
			@DefaultValue("The assistant is busy right now, so this is a canned reply. Please try again in a minute.") String staticText,
			@DefaultValue("2s") Duration timeout, @DefaultValue("1000") long cacheEntries,
			@DefaultValue("30m") Duration cacheTtl) {
	}

	/**
	 * Spring AI's {@code OpenAiChatModel}, the {@code spring-ai} client.
	 *
	 * @param timeout the OpenAI SDK's timeout: the read timeout of each socket read and the cap on
	 *        a whole call, streamed answer included. Keep it above the longest answer; a stream the
	 *        guard abandons keeps its connection (and an SDK thread) until a read times out.
	 */
	record SpringAi(@DefaultValue("2m") Duration timeout) {

		SpringAi {
			if (timeout.isNegative() || timeout.isZero()) {
				throw new IllegalArgumentException("aiguard.spring-ai.timeout must be positive, was " + timeout);
			}
		}
	}

	/**
	 * Who may use the demo ({@link LocalAccessFilter}).
	 *
	 * @param token the access token that changes (faults, policy, breakers, lanes) need; empty: a
	 *        random one, new at each start. Printed at start in the page's address, never otherwise.
	 * @param allowedHosts host names, besides the loopback names and {@code server.address}, that
	 *        the demo answers to (e.g. the machine's name when it listens on {@code 0.0.0.0})
	 */
	record Access(@Nullable String token, @DefaultValue List<String> allowedHosts) {

		/** The token must not reach a log line through an accidental {@code toString()}. */
		@Override
		public String toString() {
			return "Access{token=" + (token == null || token.isBlank() ? "(random)" : "(set)") + ", allowedHosts="
					+ allowedHosts + '}';
		}
	}
}
