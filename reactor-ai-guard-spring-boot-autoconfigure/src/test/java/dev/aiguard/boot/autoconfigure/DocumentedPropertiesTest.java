package dev.aiguard.boot.autoconfigure;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.context.properties.source.ConfigurationPropertyName;
import org.springframework.boot.env.YamlPropertySourceLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.core.env.PropertySource;
import org.springframework.core.io.ByteArrayResource;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Every key docs/spring-boot.md documents is one the starter knows: each {@code yaml} sample of the
 * page starts the auto-configuration, and each key of its property table passes the unknown-key check.
 */
class DocumentedPropertiesTest {

	private static final Path PAGE = Path.of("..", "docs", "spring-boot.md");

	private static final Pattern YAML = Pattern.compile("```yaml\\n(.*?)```", Pattern.DOTALL);

	private static final Pattern CODE = Pattern.compile("`([^`]+)`");

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(AiGuardAutoConfiguration.class));

	@Test
	void everyYamlSampleStartsTheAutoConfiguration() throws IOException {
		Matcher samples = YAML.matcher(page());
		int count = 0;
		while (samples.find()) {
			String yaml = samples.group(1);
			List<PropertySource<?>> sources = new YamlPropertySourceLoader().load("sample " + ++count,
					new ByteArrayResource(yaml.getBytes(StandardCharsets.UTF_8)));
			runner.withInitializer(context -> sources.forEach(context.getEnvironment().getPropertySources()::addFirst))
				.run(context -> assertThat(context).as("the sample%n%s", yaml).hasNotFailed());
		}
		assertThat(count).as("yaml samples on the page").isGreaterThanOrEqualTo(4);
	}

	@Test
	void everyKeyOfThePropertyTableIsKnown() throws IOException {
		KnownProperties known = new KnownProperties();
		KnownProperties.OWN.forEach(known::add);
		List<String> keys = tableKeys(page());
		assertThat(keys).hasSizeGreaterThan(60).contains("aiguard.policies.x.stall.idle-timeout",
				"aiguard.breakers.x.half-open-probes", "aiguard.lanes.p0.max-queue-wait");
		for (String key : keys) {
			assertThat(known.problem(ConfigurationPropertyName.of(key), false)).as(key).isNull();
		}
	}

	private static String page() throws IOException {
		return Files.readString(PAGE);
	}

	/**
	 * The keys of the rows of the table "Properties": the first cell's keys ({@code …​.} is a policy's
	 * prefix, a key without {@code aiguard.} is a sibling of the cell's first), and, where the first
	 * cell ends in {@code .*}, the kebab-case keys its description lists.
	 */
	static List<String> tableKeys(String page) {
		List<String> keys = new ArrayList<>();
		for (String line : page.lines().toList()) {
			if (!line.startsWith("| `")) {
				continue;
			}
			String[] cells = line.split(" \\| ", 3);
			String base = null;
			Matcher first = CODE.matcher(cells[0]);
			while (first.find()) {
				String key = placeholders(first.group(1));
				if (key.startsWith("\u2026\u200b.")) {
					key = "aiguard.policies.x." + key.substring(3);
				}
				if (!key.startsWith("aiguard.")) {
					key = base + "." + key;
				}
				base = key.endsWith(".*") ? key.substring(0, key.length() - 2) : key.substring(0, key.lastIndexOf('.'));
				if (!key.endsWith(".*")) {
					keys.add(key);
				}
				else if (cells.length > 1) {
					Matcher described = CODE.matcher(cells[1]);
					while (described.find()) {
						if (described.group(1).matches("[a-z0-9-]+")) {
							keys.add(base + "." + described.group(1));
						}
					}
				}
			}
		}
		return keys;
	}

	private static String placeholders(String key) {
		return key.replaceAll("<[a-z]+>", "x").replace("p0/p1/p2", "p0");
	}
}
