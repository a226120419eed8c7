package dev.aiguard.demo;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** What an error message may tell a client: no key, no URL, no socket address; the rest as it was. */
class ClientTextTest {

	private final ClientText text = new ClientText("configured-key-123");

	@Test
	void urlsAndSocketAddressesBecomeUpstream() {
		assertThat(text.of("connection to http://10.0.0.7:8000/v1 failed (PrematureCloseException: Connection "
				+ "prematurely closed DURING response)"))
			.isEqualTo("connection to [upstream] failed (PrematureCloseException: Connection prematurely closed "
					+ "DURING response)");
		assertThat(text.of("Connection refused: localhost/127.0.0.1:8080")).isEqualTo("Connection refused: [upstream]");
		assertThat(text.of("Connection refused: /127.0.0.1:8080")).isEqualTo("Connection refused: [upstream]");
		assertThat(text.of("no route to [::1]:443 or [fe80::1%eth0]")).isEqualTo("no route to [upstream] or [fe80::1%eth0]");
		assertThat(text.of("timeout from api.provider.example:443")).isEqualTo("timeout from [upstream]");
		assertThat(text.of("I/O error on POST request for \"https://user:pw@llm.internal/v1/chat/completions\": reset"))
			.isEqualTo("I/O error on POST request for \"[upstream]\": reset");
	}

	@Test
	void keysAreScrubbedAndTheRestStays() {
		assertThat(text.of("Incorrect API key provided: configured-key-123.")).isEqualTo("Incorrect API key provided: [redacted].");
		assertThat(text.of("Incorrect API key provided: sk-proj-abcdef123456.")).isEqualTo("Incorrect API key provided: [redacted].");
		assertThat(text.of("messages[0].content must be a string")).isEqualTo("messages[0].content must be a string");
		assertThat(text.of("retry in 1.5 s at 12:30")).isEqualTo("retry in 1.5 s at 12:30");
		assertThat(text.of(null)).isEmpty();
	}
}
