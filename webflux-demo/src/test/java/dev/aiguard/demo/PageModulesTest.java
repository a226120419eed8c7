package dev.aiguard.demo;

import java.util.ArrayDeque;
import java.util.Deque;
import java.util.LinkedHashSet;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;
import org.springframework.http.MediaType;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The page's script is a graph of ES modules: a browser runs a module only when it comes with a
 * JavaScript content type, so each one the page reaches from its entry is served as such.
 */
class PageModulesTest extends DemoTestSupport {

	private static final Pattern ENTRY = Pattern.compile("<script type=\"module\" src=\"([^\"]+)\"></script>");
	private static final Pattern IMPORT = Pattern.compile("^import [^;]* from '\\./([^']+)';", Pattern.MULTILINE);

	@Test
	void servesEveryModuleThePageImportsAsJavaScript() {
		String page = client.get().uri("/").exchange().expectStatus().isOk().expectBody(String.class).returnResult()
			.getResponseBody();
		Matcher entry = ENTRY.matcher(String.valueOf(page));
		assertThat(entry.find()).as("the page loads its script as a module").isTrue();

		Set<String> served = new LinkedHashSet<>();
		Deque<String> toFetch = new ArrayDeque<>();
		toFetch.add(entry.group(1));
		while (!toFetch.isEmpty()) {
			String module = toFetch.poll();
			if (!served.add(module)) {
				continue;
			}
			var result = client.get().uri("/" + module).exchange()
				.expectStatus().isOk()
				.expectBody(String.class).returnResult();
			MediaType type = result.getResponseHeaders().getContentType();
			assertThat(type).as(module + "'s content type").isNotNull();
			assertThat(type.getSubtype()).as(module + "'s content type").isEqualTo("javascript");
			assertThat(type.getType()).as(module + "'s content type").isIn("text", "application");
			Matcher imports = IMPORT.matcher(String.valueOf(result.getResponseBody()));
			while (imports.find()) {
				toFetch.add(imports.group(1));
			}
		}
		assertThat(served).as("the entry and the modules it imports").contains("app.js", "sse.js", "chat.js",
				"faults.js", "panel.js", "chart.js", "load-panel.js", "policy.js", "page.js");
	}
}
