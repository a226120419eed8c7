package dev.aiguard.core;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class SecretsTest {

	@Test
	void removesTheKnownKeyWherever() {
		String key = "azure-0123456789abcdef";
		assertThat(Secrets.scrub("Access denied for key azure-0123456789abcdef.", key))
			.isEqualTo("Access denied for key [redacted].")
			.doesNotContain(key);
	}

	@Test
	void removesProviderShapedKeysWithoutBeingTold() {
		assertThat(Secrets.scrub("Incorrect API key provided: sk-proj-AbC123xyz_456. You can find..."))
			.isEqualTo("Incorrect API key provided: [redacted]. You can find...");
		assertThat(Secrets.scrub("invalid x-api-key sk-ant-api03-abcdef")).isEqualTo("invalid x-api-key [redacted]");
	}

	@Test
	void removesCredentialsInHeaderAndQueryForms() {
		assertThat(Secrets.scrub("Authorization: Bearer abc.def-ghi")).isEqualTo("Authorization: [redacted]");
		assertThat(Secrets.scrub("sent Bearer abcdefgh")).isEqualTo("sent Bearer [redacted]");
		assertThat(Secrets.scrub("{\"api_key\": \"hunter22\"}")).isEqualTo("{\"api_key\": \"[redacted]\"}");
		assertThat(Secrets.scrub("GET /v1?api-key=abcd1234&x=1")).isEqualTo("GET /v1?api-key=[redacted]&x=1");
		assertThat(Secrets.scrub("x-api-key: abcd1234")).isEqualTo("x-api-key: [redacted]");
		assertThat(Secrets.scrub("access_token=zzzz9999")).isEqualTo("access_token=[redacted]");
	}

	@Test
	void removesUserInfoFromUrlsInTextAndFromUrls() {
		assertThat(Secrets.scrub("connection to https://bob:s3cret@llm.internal/v1 failed"))
			.isEqualTo("connection to https://[redacted]@llm.internal/v1 failed");
		assertThat(Secrets.withoutCredentials("https://bob:s3cret@llm.internal:8443/v1"))
			.isEqualTo("https://llm.internal:8443/v1");
		assertThat(Secrets.withoutCredentials("http://127.0.0.1:8080/v1")).isEqualTo("http://127.0.0.1:8080/v1");
		assertThat(Secrets.withoutCredentials("https://host/v1?api_key=abcd1234"))
			.isEqualTo("https://host/v1?api_key=[redacted]");
		assertThat(Secrets.withoutCredentials(null)).isEmpty();
	}

	@Test
	void leavesOrdinaryTextAloneAndSkipsShortOrNullKnownSecrets() {
		String text = "The model is overloaded (529); retry after 2 s. context key dev.aiguard.core.Tenant";
		assertThat(Secrets.scrub(text, null, "a", "")).isEqualTo(text);
		assertThat(Secrets.scrub(null)).isEmpty();
		assertThat(Secrets.containsSecret(text)).isFalse();
		assertThat(Secrets.containsSecret("key sk-abcdef")).isTrue();
		assertThat(Secrets.containsSecret("token abcdef12", "abcdef12")).isTrue();
	}

	@Test
	void isIdempotent() {
		String once = Secrets.scrub("Bearer abcdefgh and api_key=12345678 at https://u:p@h/x", "12345678");
		assertThat(Secrets.scrub(once, "12345678")).isEqualTo(once);
	}

	@Test
	void findsASecretAnywhereInACauseChainAndChecksSettings() {
		Exception inner = new IllegalStateException("Bearer abcdefgh");
		assertThat(Secrets.inCauseChain(new RuntimeException("wrapped", inner))).isTrue();
		assertThat(Secrets.inCauseChain(new RuntimeException("plain", new IllegalStateException("io")))).isFalse();
		assertThat(Secrets.inCauseChain(null)).isFalse();
		String[] given = { "key-123456" };
		assertThat(Secrets.checked(given)).containsExactly("key-123456").isNotSameAs(given);
		org.assertj.core.api.Assertions.assertThatThrownBy(() -> Secrets.checked("ok-123456", null))
			.isInstanceOf(IllegalArgumentException.class).hasMessage("secrets[1] must not be null");
	}
}
