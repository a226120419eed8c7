package dev.aiguard.consumer;

import java.io.File;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.Predicate;

/**
 * Reads the running JVM's class path and module path and checks, for each library family the
 * modules depend on (Jackson 3, Jackson 2, the annotations both Jackson lines share, Micrometer, the
 * Kotlin standard library, Netty, Reactor, Reactor Netty), that one version of it is there, and that
 * it is the version the modules were tested with. A consumer project's test calls it; the expected
 * versions come as system properties ({@code expected.jackson3}, {@code expected.jackson2},
 * {@code expected.micrometer}, {@code expected.kotlin}, {@code expected.netty},
 * {@code expected.reactor-core}, {@code expected.reactor-netty}) filled in from the build's own
 * properties, and {@code localRepository} says where the jars' Maven coordinates can be read from
 * their paths. {@code forbidden} names, comma-separated, the families that must not be there at
 * all: {@code jackson2} for a Spring Boot 4 application, whose one Jackson line is Boot's Jackson 3.
 *
 * <pre>{@code
 * @Test
 * void resolvesTheTestedVersions() {
 *     ClassPathCheck.fromSystemProperties().verify();
 * }
 * }</pre>
 */
public final class ClassPathCheck {

	private final Path repository;
	private final List<String> entries;
	private final Map<String, String> expected;
	private final Set<String> forbidden;

	ClassPathCheck(Path repository, List<String> entries, Map<String, String> expected, Set<String> forbidden) {
		this.repository = repository;
		this.entries = entries;
		this.expected = expected;
		this.forbidden = forbidden;
	}

	/**
	 * @return a check of this JVM's {@code java.class.path} and {@code jdk.module.path}, with the
	 * expected versions, the forbidden families and the local repository from the system properties
	 * @throws IllegalStateException when {@code localRepository} is not set, or {@code forbidden}
	 * names no family
	 */
	public static ClassPathCheck fromSystemProperties() {
		String repository = System.getProperty("localRepository");
		if (repository == null || repository.isBlank()) {
			throw new IllegalStateException("the system property localRepository must name the build's local repository");
		}
		List<String> entries = new ArrayList<>();
		for (String key : List.of("java.class.path", "jdk.module.path")) {
			String path = System.getProperty(key, "");
			for (String entry : path.split(File.pathSeparator)) {
				if (!entry.isBlank()) {
					entries.add(entry);
				}
			}
		}
		Map<String, String> expected = new TreeMap<>();
		for (Family family : Family.values()) {
			String version = System.getProperty("expected." + family.key, "");
			if (!version.isBlank()) {
				expected.put(family.key, version.trim());
			}
		}
		Set<String> forbidden = new TreeSet<>();
		for (String key : System.getProperty("forbidden", "").split(",")) {
			if (!key.isBlank()) {
				forbidden.add(Family.named(key.trim()).key);
			}
		}
		return new ClassPathCheck(Path.of(repository).toAbsolutePath().normalize(), entries, expected, forbidden);
	}

	/**
	 * Prints each family's jars and throws when a family mixes versions, when one differs from its
	 * expected version, or when a forbidden family is there.
	 *
	 * @return the jars of each family found, by family name, for further assertions
	 * @throws AssertionError naming every jar that is off
	 */
	public Map<String, List<String>> verify() {
		Map<String, List<String>> found = new TreeMap<>();
		List<String> problems = new ArrayList<>();
		List<Coordinates> jars = new ArrayList<>();
		for (String entry : entries) {
			Coordinates jar = Coordinates.of(repository, Path.of(entry));
			if (jar != null) {
				jars.add(jar);
			}
		}
		for (Family family : Family.values()) {
			List<String> members = new ArrayList<>();
			TreeSet<String> lines = new TreeSet<>();
			TreeSet<String> minorLines = new TreeSet<>();
			for (Coordinates jar : jars) {
				if (!family.member.test(jar)) {
					continue;
				}
				members.add(jar.toString());
				minorLines.add(jar.version.substring(0, Family.minorEnd(jar.version)));
				if (family.patchVersioned(jar)) {
					lines.add(jar.version);
				}
				String want = expected.get(family.expectedKey());
				if (want != null && !family.matches(jar, want)) {
					problems.add(jar + " differs from the tested " + family.title + " " + want);
				}
			}
			if (!members.isEmpty() && forbidden.contains(family.key)) {
				problems.add(family.title + " must not be on this class path, found " + members);
			}
			if (lines.size() > 1 || minorLines.size() > 1) {
				problems.add(family.title + " mixes versions " + (lines.size() > 1 ? lines : minorLines) + ": " + members);
			}
			if (!members.isEmpty()) {
				found.put(family.key, members);
				System.out.println("[class path] " + family.title + ": " + members);
			}
		}
		if (!problems.isEmpty()) {
			throw new AssertionError("the consumer's class path is not what the modules were tested with:\n  "
					+ String.join("\n  ", problems));
		}
		return found;
	}

	/** groupId:artifactId:version of a jar, read from its place in a Maven repository. */
	private record Coordinates(String groupId, String artifactId, String version) {

		/** @return the coordinates, or null for a jar outside the repository (the project's own classes) */
		static Coordinates of(Path repository, Path jar) {
			Path path = jar.toAbsolutePath().normalize();
			if (!path.startsWith(repository) || !path.toString().endsWith(".jar")) {
				return null;
			}
			Path relative = repository.relativize(path);
			int n = relative.getNameCount();
			if (n < 4) {
				return null;
			}
			String version = relative.getName(n - 2).toString();
			String artifactId = relative.getName(n - 3).toString();
			String groupId = relative.subpath(0, n - 3).toString().replace(File.separatorChar, '.');
			return new Coordinates(groupId, artifactId, version);
		}

		boolean isJacksonAnnotations() {
			return groupId.equals("com.fasterxml.jackson.core") && artifactId.equals("jackson-annotations");
		}

		@Override
		public String toString() {
			return groupId + ":" + artifactId + ":" + version;
		}
	}

	/** The library families whose versions must not mix. */
	private enum Family {

		JACKSON3("jackson3", "Jackson 3", jar -> jar.groupId.startsWith("tools.jackson")),
		// everything of Jackson 2 but the annotations, which Jackson 3 uses too
		JACKSON2("jackson2", "Jackson 2", jar -> jar.groupId.startsWith("com.fasterxml.jackson")
				&& !jar.isJacksonAnnotations()),
		// versioned by minor line alone (2.21) since 2.20; checked against the Jackson 2 line's minor
		JACKSON_ANNOTATIONS("jackson-annotations", "Jackson annotations", Coordinates::isJacksonAnnotations) {
			@Override
			boolean matches(Coordinates jar, String want) {
				return jar.version.equals(want.substring(0, minorEnd(want)));
			}

			@Override
			String expectedKey() {
				return "jackson2";
			}
		},
		MICROMETER("micrometer", "Micrometer", jar -> jar.groupId.equals("io.micrometer")
				&& jar.artifactId.startsWith("micrometer-") && !jar.artifactId.startsWith("micrometer-tracing")),
		// kotlin-stdlib-common is left out: its jars hold Kotlin metadata and no JVM class, and since
		// Kotlin 2.0 it is a pom (which is how the Kotlin BOM manages it), so okio's 1.9 jar stays as it is
		KOTLIN("kotlin", "Kotlin standard library", jar -> jar.groupId.equals("org.jetbrains.kotlin")
				&& (jar.artifactId.startsWith("kotlin-stdlib") && !jar.artifactId.equals("kotlin-stdlib-common")
						|| jar.artifactId.equals("kotlin-reflect"))),
		NETTY("netty", "Netty", jar -> jar.groupId.equals("io.netty") && jar.artifactId.startsWith("netty-")
				&& !jar.artifactId.startsWith("netty-tcnative") && !jar.artifactId.startsWith("netty-incubator")
				&& !jar.artifactId.startsWith("netty-jni-util")),
		REACTOR_CORE("reactor-core", "Reactor", jar -> jar.groupId.equals("io.projectreactor")
				&& (jar.artifactId.equals("reactor-core") || jar.artifactId.equals("reactor-test"))),
		REACTOR_NETTY("reactor-netty", "Reactor Netty", jar -> jar.groupId.equals("io.projectreactor.netty")
				&& jar.artifactId.startsWith("reactor-netty"));

		final String key;
		final String title;
		final Predicate<Coordinates> member;

		Family(String key, String title, Predicate<Coordinates> member) {
			this.key = key;
			this.title = title;
			this.member = member;
		}

		/** @return whether the jar's whole version must equal the family's others (else its minor line must) */
		boolean patchVersioned(Coordinates jar) {
			return true;
		}

		/** @return the key of the system property {@code expected.<key>} this family's version comes from */
		String expectedKey() {
			return key;
		}

		static Family named(String key) {
			for (Family family : values()) {
				if (family.key.equals(key)) {
					return family;
				}
			}
			throw new IllegalStateException("no library family is named " + key);
		}

		boolean matches(Coordinates jar, String want) {
			return jar.version.equals(want);
		}

		static int minorEnd(String version) {
			int first = version.indexOf('.');
			int second = first < 0 ? -1 : version.indexOf('.', first + 1);
			return second < 0 ? version.length() : second;
		}
	}
}
