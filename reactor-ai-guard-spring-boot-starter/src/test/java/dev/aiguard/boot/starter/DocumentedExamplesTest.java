package dev.aiguard.boot.starter;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * docs/spring-boot.md shows what the starter's tests run: the route and the security configuration
 * verbatim, the complete {@code application.yml} and the health setting as the test resources hold
 * them, and the failure report of a misspelled key as Boot prints it.
 */
@ExtendWith(OutputCaptureExtension.class)
class DocumentedExamplesTest {

	private static final Path TESTS = Path.of("src", "test");

	private static String page() throws IOException {
		return Files.readString(Path.of("..", "docs", "spring-boot.md"));
	}

	/** @return the first fenced block of that language ({@code ""}: none) containing the text */
	private static String block(String language, String containing) throws IOException {
		String open = null;
		StringBuilder block = new StringBuilder();
		for (String line : page().lines().toList()) {
			if (open == null && line.startsWith("```")) {
				open = line.substring(3);
				block.setLength(0);
			}
			else if (open != null && line.equals("```")) {
				if (open.equals(language) && block.toString().contains(containing)) {
					return block.toString();
				}
				open = null;
			}
			else if (open != null) {
				block.append(line).append('\n');
			}
		}
		throw new AssertionError("no " + language + " block with " + containing);
	}

	/** Lines without their indentation: the page indents by spaces, the sources by tabs. */
	private static List<String> lines(String text) {
		return text.lines().map(String::strip).filter(l -> !l.isEmpty()).toList();
	}

	private static String source(String name) throws IOException {
		return Files.readString(TESTS.resolve("java/dev/aiguard/boot/starter/" + name));
	}

	@Test
	void theRouteIsTheTestApplicationsVerbatim() throws IOException {
		assertThat(lines(source("ChatApplication.java"))).containsSubsequence(lines(block("java", "route().GET(\"/chat\"")));
		assertThat(String.join("\n", lines(source("ChatApplication.java"))))
			.contains(String.join("\n", lines(block("java", "route().GET(\"/chat\""))));
	}

	@Test
	void theSecurityConfigurationIsTheTestsVerbatim() throws IOException {
		assertThat(String.join("\n", lines(source("ActuatorSecurity.java"))))
			.contains(String.join("\n", lines(block("java", "SecurityWebFilterChain actuatorFilterChain"))));
	}

	@Test
	void theYamlSamplesAreTheTestResources() throws IOException {
		assertThat(block("yaml", "aiguard:\n  breakers:\n    model:"))
			.isEqualTo(Files.readString(TESTS.resolve("resources/application.yml")));
		assertThat(block("yaml", "show-details: when-authorized"))
			.isEqualTo(Files.readString(TESTS.resolve("resources/application-health-details.yml")));
	}

	@Test
	void aMisspelledKeyStopsTheApplicationWithTheDocumentedReport(@TempDir Path dir, CapturedOutput output)
			throws IOException {
		Path yaml = dir.resolve("application.yml");
		Files.writeString(yaml, Files.readString(TESTS.resolve("resources/application.yml"))
			.replace("idle-timeout: 400ms", "idle-timout: 400ms"));
		assertThatThrownBy(() -> new SpringApplicationBuilder(ChatApplication.class).web(WebApplicationType.NONE)
			.properties("spring.config.location=" + yaml.toUri(), "model.base-url=http://127.0.0.1:1")
			.run()
			.close()).hasStackTraceContaining("idle-timout");
		String report = block("", "Unknown property 'aiguard.policies.chat.stall.idle-timout'");
		for (String line : lines(report)) {
			// the page names the file as it is on the class path; here it is a temporary file
			String expected = line.replace(" (set in class path resource [application.yml] - 27:22)", "");
			assertThat(output.getOut() + output.getErr()).contains(expected);
		}
		assertThat(output.getOut() + output.getErr()).contains("application.yml] - 27:22)");
	}
}
