package dev.aiguard.consumer;

import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The rules the consumer projects' class paths are held to, on made-up class paths. */
class ClassPathCheckTest {

	private static final Path REPOSITORY = Path.of("/m2").toAbsolutePath();

	private static final Map<String, String> TESTED = Map.of("jackson3", "3.1.4", "jackson2", "2.21.4");

	private static String jar(String groupId, String artifactId, String version) {
		return REPOSITORY.resolve(groupId.replace('.', '/')).resolve(artifactId).resolve(version)
			.resolve(artifactId + "-" + version + ".jar").toString();
	}

	private static ClassPathCheck check(Set<String> forbidden, String... entries) {
		return new ClassPathCheck(REPOSITORY, Arrays.asList(entries), TESTED, forbidden);
	}

	@Test
	void jackson3WithTheSharedAnnotationsIsOneLine() {
		Map<String, List<String>> found = check(Set.of("jackson2"), jar("tools.jackson.core", "jackson-databind", "3.1.4"),
				jar("tools.jackson.core", "jackson-core", "3.1.4"), jar("com.fasterxml.jackson.core", "jackson-annotations", "2.21"),
				"/work/app/target/classes").verify();
		assertThat(found).containsOnlyKeys("jackson3", "jackson-annotations");
	}

	@Test
	void jackson2BesideJackson3FailsWhereItIsForbidden() {
		assertThatThrownBy(() -> check(Set.of("jackson2"), jar("tools.jackson.core", "jackson-databind", "3.1.4"),
				jar("com.fasterxml.jackson.core", "jackson-databind", "2.21.4"),
				jar("com.fasterxml.jackson.core", "jackson-core", "2.21.4"),
				jar("com.fasterxml.jackson.core", "jackson-annotations", "2.21")).verify())
			.isInstanceOf(AssertionError.class)
			.hasMessageContaining("Jackson 2 must not be on this class path")
			.hasMessageContaining("com.fasterxml.jackson.core:jackson-databind:2.21.4")
			.hasMessageContaining("com.fasterxml.jackson.core:jackson-core:2.21.4")
			.hasMessageNotContaining("Jackson annotations");
	}

	@Test
	void jackson2IsAllowedWhereAnSdkNeedsIt() {
		assertThat(check(Set.of(), jar("com.fasterxml.jackson.core", "jackson-databind", "2.21.4"),
				jar("com.fasterxml.jackson.core", "jackson-annotations", "2.21")).verify()).containsKey("jackson2");
	}

	@Test
	void twoJackson3ReleasesOrAnUntestedOneFail() {
		assertThatThrownBy(() -> check(Set.of(), jar("tools.jackson.core", "jackson-databind", "3.1.8"),
				jar("tools.jackson.core", "jackson-core", "3.1.4")).verify())
			.hasMessageContaining("Jackson 3 mixes versions [3.1.4, 3.1.8]")
			.hasMessageContaining("tools.jackson.core:jackson-databind:3.1.8 differs from the tested Jackson 3 3.1.4");
	}

	@Test
	void annotationsOfAnotherMinorLineFail() {
		assertThatThrownBy(() -> check(Set.of(), jar("com.fasterxml.jackson.core", "jackson-annotations", "2.20")).verify())
			.hasMessageContaining("jackson-annotations:2.20 differs from the tested Jackson annotations 2.21.4");
	}
}
