package dev.aiguard.demo;

import org.junit.jupiter.api.Test;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** A real upstream needs a key and a model: without them the app refuses to start, and says why. */
class UpstreamConfigTest {

	/** Starts the app with command-line properties (they win over application.properties). */
	private static ConfigurableApplicationContext start(String... properties) {
		String[] args = new String[properties.length + 1];
		args[0] = "--server.port=0";
		for (int i = 0; i < properties.length; i++) {
			args[i + 1] = "--" + properties[i];
		}
		return new SpringApplicationBuilder(DemoApplication.class).run(args);
	}

	@Test
	void aRealUrlWithoutAKeyFailsStartupWithAClearMessage() {
		assertThatThrownBy(() -> start("aiguard.base-url=https://llm.example.test/v1", "aiguard.model=m"))
			.rootCause()
			.isInstanceOf(IllegalStateException.class)
			.hasMessageContaining("AIGUARD_BASE_URL is set (https://llm.example.test/v1) but AIGUARD_API_KEY is not");
	}

	@Test
	void aRealUrlWithoutAModelFailsStartupWithAClearMessage() {
		assertThatThrownBy(() -> start("aiguard.base-url=https://llm.example.test/v1", "aiguard.api-key=sk-x"))
			.rootCause()
			.hasMessageContaining("AIGUARD_MODEL is not");
	}

	@Test
	void aMalformedUrlFailsStartupNamingIt() {
		assertThatThrownBy(() -> start("aiguard.base-url=ftp://nowhere", "aiguard.api-key=sk-x", "aiguard.model=m"))
			.rootCause()
			.isInstanceOf(IllegalArgumentException.class)
			.hasMessageContaining("baseUrl")
			.hasMessageContaining("ftp://nowhere");
	}

	@Test
	void withoutAUrlTheEmbeddedMockAnswers() {
		try (ConfigurableApplicationContext context = start()) {
			assertThat(context.getBean(ModelUpstream.class).describe()).isEqualTo("embedded mock model");
			assertThat(context.getBean(ModelUpstream.class).mock().isRunning()).isTrue();
		}
	}

	@Test
	void propertiesNeverPrintTheKey() {
		DemoProperties p = new DemoProperties("https://x.test/v1", "sk-very-secret", "m", null, null, null, null, null);
		assertThat(p.toString()).doesNotContain("sk-very-secret").contains("apiKey=(set)");
	}
}
