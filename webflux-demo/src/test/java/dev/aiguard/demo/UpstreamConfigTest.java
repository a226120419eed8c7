package dev.aiguard.demo;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.boot.web.server.reactive.context.ReactiveWebServerApplicationContext;
import org.springframework.test.web.reactive.server.WebTestClient;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A real upstream needs a key and a model: without them the app refuses to start, and says why.
 * Credentials written into its base URL are never shown.
 */
@ExtendWith(OutputCaptureExtension.class)
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
	void credentialsInTheBaseUrlAreNeverShown(CapturedOutput output) {
		String url = "https://demo-user:hunter2-secret@llm.example.test/v1";
		assertThatThrownBy(() -> start("aiguard.base-url=" + url, "aiguard.model=m"))
			.rootCause()
			.hasMessageContaining("AIGUARD_BASE_URL is set (https://llm.example.test/v1)")
			.message().doesNotContain("hunter2-secret").doesNotContain("demo-user");
		try (ConfigurableApplicationContext context = start("aiguard.base-url=" + url, "aiguard.api-key=sk-x-123456",
				"aiguard.model=m")) {
			assertThat(context.getBean(ModelUpstream.class).describe()).isEqualTo("https://llm.example.test/v1 (m)");
			LocalAccessFilter access = context.getBean(LocalAccessFilter.class);
			String status = WebTestClient.bindToServer().baseUrl("http://127.0.0.1:" + port(context)).build()
				.get().uri("/api/guard").exchange().expectStatus().isOk()
				.expectBody(String.class).returnResult().getResponseBody();
			// the page's header shows this field
			assertThat(status).contains("\"upstream\":\"https://llm.example.test/v1 (m)\"")
				.doesNotContain("hunter2-secret").doesNotContain("demo-user");
			assertThat(output.getAll()).doesNotContain("hunter2-secret").doesNotContain("sk-x-123456")
				.as("the start log gives the page's address with its token")
				.contains("Demo page: http://127.0.0.1:" + port(context) + "/#token=" + access.token());
		}
	}

	private static int port(ConfigurableApplicationContext context) {
		return ((ReactiveWebServerApplicationContext) context).getWebServer().getPort();
	}

	@Test
	void propertiesNeverPrintTheKey() {
		DemoProperties p = new DemoProperties("https://x.test/v1", "sk-very-secret", "m", null, null, null, null, null);
		assertThat(p.toString()).doesNotContain("sk-very-secret").contains("apiKey=(set)");
	}
}
