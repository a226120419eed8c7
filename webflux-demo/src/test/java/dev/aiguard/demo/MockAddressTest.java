package dev.aiguard.demo;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import dev.aiguard.test.mock.MockAnswers;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.ConfigurableApplicationContext;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Where the embedded mock listens: one INFO line at start with a base URL a real client can use,
 * the same URL in {@code /api/guard}, a port fixed by {@code aiguard.mock.port} (kept when the
 * context stops and starts again, and the mock answers again then), and a clear start failure for
 * a port out of range or taken.
 */
@ExtendWith(OutputCaptureExtension.class)
class MockAddressTest {

	private static final Pattern LOGGED = Pattern
		.compile("INFO .*Embedded mock model listening at (http://127\\.0\\.0\\.1:(\\d+)/v1) \\(");

	private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

	private static ConfigurableApplicationContext start(String... properties) {
		String[] args = new String[properties.length + 1];
		args[0] = "--server.port=0";
		for (int i = 0; i < properties.length; i++) {
			args[i + 1] = "--" + properties[i];
		}
		return new SpringApplicationBuilder(DemoApplication.class).run(args);
	}

	@Test
	void aFixedPortIsLoggedShownInTheSnapshotAndAnswersAPlainOpenAiRequest(CapturedOutput output) throws Exception {
		int free = freePort();
		try (ConfigurableApplicationContext app = start("aiguard.mock.port=" + free,
				"aiguard.mock.first-token-delay=5ms", "aiguard.mock.token-interval=2ms")) {
			Matcher logged = LOGGED.matcher(output.getOut());
			assertThat(logged.find()).as("one INFO line names the mock's base URL:%n%s", output.getOut()).isTrue();
			String baseUrl = logged.group(1);
			assertThat(Integer.parseInt(logged.group(2))).isEqualTo(free);
			assertThat(LOGGED.matcher(output.getOut()).results().count()).isOne();

			String appUrl = "http://127.0.0.1:" + app.getEnvironment().getProperty("local.server.port");
			JsonNode guard = app.getBean(JsonMapper.class).readTree(get(appUrl + "/api/guard"));
			assertThat(guard.get("mock").get("baseUrl").stringValue()).isEqualTo(baseUrl);

			// what docs/demo.md tells a curl user to send
			HttpResponse<String> answer = HTTP.send(HttpRequest.newBuilder(URI.create(baseUrl + "/chat/completions"))
				.header("Content-Type", "application/json")
				.header("Authorization", "Bearer anything")
				.POST(HttpRequest.BodyPublishers.ofString("{\"model\":\"mock-1\",\"stream\":true,"
						+ "\"messages\":[{\"role\":\"user\",\"content\":\"Hello mock\"}]}"))
				.timeout(Duration.ofSeconds(10))
				.build(), HttpResponse.BodyHandlers.ofString());
			assertThat(answer.statusCode()).isEqualTo(200);
			assertThat(answer.headers().firstValue("Content-Type")).hasValue("text/event-stream");
			assertThat(answer.body()).contains("\"finish_reason\":\"stop\"").endsWith("data: [DONE]\n\n");
			assertThat(contentOf(answer.body(), app.getBean(JsonMapper.class))).isEqualTo(MockAnswers.text("Hello mock"));

			// stopping a context disposes Reactor Netty's global loops under the mock: it must come back
			app.stop();
			app.start();
			String restartedAppUrl = "http://127.0.0.1:" + app.getEnvironment().getProperty("local.server.port");
			HttpResponse<String> chat = HTTP.send(HttpRequest.newBuilder(URI.create(restartedAppUrl + "/api/chat"))
				.header("Content-Type", "application/json")
				.POST(HttpRequest.BodyPublishers.ofString("{\"messages\":[{\"role\":\"user\",\"content\":\"after a restart\"}]}"))
				.timeout(Duration.ofSeconds(20))
				.build(), HttpResponse.BodyHandlers.ofString());
			assertThat(chat.body()).as("answered by the model, not the ladder")
				.contains("event:done\ndata:{\"source\":\"REALTIME\"");
			assertThat(LOGGED.matcher(output.getOut()).results().map(m -> m.group(1)))
				.as("logged again, on the same fixed port").containsExactly(baseUrl, baseUrl);
		}
	}

	@Test
	void aPortOutOfRangeStopsTheStartNamingTheProperty() {
		assertThatThrownBy(() -> start("aiguard.mock.port=70000")).rootCause()
			.isInstanceOf(IllegalArgumentException.class)
			.hasMessage("aiguard.mock.port must be between 0 and 65535 (0 picks a free port), was 70000");
		assertThatThrownBy(() -> start("aiguard.mock.port=-1")).rootCause()
			.hasMessageContaining("aiguard.mock.port must be between 0 and 65535")
			.hasMessageEndingWith("was -1");
	}

	@Test
	void aTakenPortStopsTheStartNamingThePortAndTheProperty() throws IOException {
		try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
			assertThatThrownBy(() -> start("aiguard.mock.port=" + taken.getLocalPort()))
				.hasStackTraceContaining("the embedded mock model cannot listen on 127.0.0.1:" + taken.getLocalPort()
						+ " (aiguard.mock.port)")
				.hasStackTraceContaining("choose another port, or 0 for a free one");
		}
	}

	private static String get(String url) throws IOException, InterruptedException {
		return HTTP.send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(10)).build(),
				HttpResponse.BodyHandlers.ofString()).body();
	}

	/** @return the concatenated {@code delta.content} of an OpenAI stream */
	private static String contentOf(String sse, JsonMapper json) {
		StringBuilder text = new StringBuilder();
		for (String line : sse.split("\n")) {
			if (line.startsWith("data: {")) {
				JsonNode choices = json.readTree(line.substring("data: ".length())).path("choices");
				if (!choices.isEmpty()) {
					text.append(choices.get(0).path("delta").path("content").asString(""));
				}
			}
		}
		return text.toString();
	}

	private static int freePort() throws IOException {
		try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
			return s.getLocalPort();
		}
	}
}
