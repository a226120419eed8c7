package dev.aiguard;

import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import com.tngtech.archunit.base.DescribedPredicate;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.lang.ArchRule;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The library's package graph is one-way: {@code core} is a leaf, the feature packages depend on
 * {@code core}, {@code internal} and only the edges declared in {@link #ALLOWED} (each explained
 * in docs/design.md), and the coordinator ({@code dev.aiguard}) sits on top with nothing
 * depending on it. A new import that breaks this fails the build here.
 */
class PackageGraphTest {

	/** Library packages (relative to {@code dev.aiguard}) each may use, besides itself. */
	static final Map<String, List<String>> ALLOWED = new LinkedHashMap<>();

	static {
		ALLOWED.put("core", List.of());
		ALLOWED.put("internal", List.of());
		ALLOWED.put("sse", List.of("internal"));
		ALLOWED.put("metrics", List.of("core", "internal"));
		ALLOWED.put("chat", List.of("core", "internal"));
		ALLOWED.put("stall", List.of("core", "internal"));
		ALLOWED.put("stage", List.of("core", "chat"));
		ALLOWED.put("admission", List.of("core", "internal", "metrics", "stage"));
		ALLOWED.put("breaker", List.of("core", "internal", "metrics", "stage"));
		ALLOWED.put("retry", List.of("core", "internal", "chat"));
		ALLOWED.put("truncation", List.of("core", "internal", "chat"));
		ALLOWED.put("fallback", List.of("core", "internal", "metrics", "chat", "breaker"));
		ALLOWED.put("provider", List.of("core", "internal", "chat", "sse"));
		ALLOWED.put("load", List.of("core", "internal", "metrics", "admission", "stage"));
		ALLOWED.put("validation", List.of("core", "chat"));
		ALLOWED.put("budget", List.of("core", "internal", "metrics", "chat", "admission", "truncation", "provider",
				"stage"));
	}

	/**
	 * The classes of one guarded request: the loop, the port its stages answer through, the books,
	 * the recovery steps, the chunks' path. They meet the capabilities that are stages only through
	 * {@code dev.aiguard.stage}.
	 */
	static final List<String> REQUEST_CLASSES = List.of("GuardedStream", "StagePort", "RequestLedger", "RecoverySteps",
			"AnswerPath", "AnswerTap", "AnswerCheck", "LaneThreadCall", "AttemptKind");

	/** The capability packages that are stages: the request classes may not use them. */
	static final List<String> STAGE_CAPABILITIES = List.of("admission", "breaker", "budget", "load");

	static JavaClasses library;

	@BeforeAll
	static void importLibrary() {
		library = new ClassFileImporter().withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
				.importPackages("dev.aiguard");
	}

	/** Every package of the library; a new one must be added to {@link #ALLOWED}. */
	@Test
	void everyPackageHasDeclaredEdges() {
		List<String> packages = library.stream().map(JavaClass::getPackageName)
				.filter(p -> p.startsWith("dev.aiguard."))
				.map(p -> p.substring("dev.aiguard.".length()).split("\\.")[0])
				.distinct().sorted().collect(Collectors.toList());
		assertThat(ALLOWED.keySet()).containsAll(packages);
	}

	@TestFactory
	Stream<DynamicTest> featurePackagesUseOnlyTheirDeclaredEdges() {
		return ALLOWED.entrySet().stream().map(e -> DynamicTest.dynamicTest(e.getKey(),
				() -> edgeRule(e.getKey(), e.getValue()).check(library)));
	}

	/** Packages of the guard's own machinery that the module keeps inside. */
	static final List<String> NOT_EXPORTED = List.of("internal", "stage");

	/** module-info exports every public package and keeps {@code internal} and {@code stage} inside. */
	@Test
	void theModuleExportsEveryPackageButInternalAndStage() throws java.net.URISyntaxException {
		java.nio.file.Path classes = java.nio.file.Path.of(AiGuard.class.getProtectionDomain().getCodeSource()
				.getLocation().toURI());
		java.lang.module.ModuleDescriptor module = java.lang.module.ModuleFinder.of(classes).find("dev.aiguard")
				.orElseThrow().descriptor();
		List<String> exported = module.exports().stream().map(java.lang.module.ModuleDescriptor.Exports::source)
				.sorted().collect(Collectors.toList());
		List<String> expected = ALLOWED.keySet().stream().filter(p -> !NOT_EXPORTED.contains(p))
				.map(p -> "dev.aiguard." + p).collect(Collectors.toList());
		expected.add("dev.aiguard");
		assertThat(exported).containsExactlyInAnyOrderElementsOf(expected).doesNotContain("dev.aiguard.internal",
				"dev.aiguard.stage");
		assertThat(module.exports()).allSatisfy(e -> assertThat(e.isQualified()).isFalse());
	}

	@Test
	void noPackageCycles() {
		cycleRule().check(library);
	}

	@Test
	void nothingDependsOnTheCoordinator() {
		coordinatorRule().check(library);
	}

	@Test
	void theRequestMeetsItsStagesOnlyThroughTheStageContract() {
		assertThat(library.stream().map(JavaClass::getSimpleName)).containsAll(REQUEST_CLASSES);
		stagesOnlyRule(REQUEST_CLASSES).check(library);
	}

	/** The stage rule catches a request class that reaches a capability past the contract. */
	@Test
	void theStageRuleCatchesARequestClassUsingTheBreaker() {
		JavaClasses fixtures = new ClassFileImporter().importClasses(ReachesTheBreakerDirectly.class,
				GuardedStream.class, dev.aiguard.breaker.BreakerPermit.class, dev.aiguard.stage.StageRun.class);
		List<String> withFixture = Stream.concat(REQUEST_CLASSES.stream(), Stream.of("ReachesTheBreakerDirectly"))
				.collect(Collectors.toList());
		assertThat(stagesOnlyRule(withFixture).evaluate(fixtures).hasViolation()).as("a request class using breaker")
				.isTrue();
		assertThat(stagesOnlyRule(REQUEST_CLASSES).evaluate(fixtures).hasViolation()).as("GuardedStream alone").isFalse();
	}

	static ArchRule stagesOnlyRule(List<String> requestClasses) {
		String[] capabilities = STAGE_CAPABILITIES.stream().map(p -> "dev.aiguard." + p + "..").toArray(String[]::new);
		return noClasses().that(DescribedPredicate.describe("are request classes " + requestClasses,
						(JavaClass c) -> c.getPackageName().equals("dev.aiguard")
								&& requestClasses.contains(outerName(c))))
				.should().dependOnClassesThat().resideInAnyPackage(capabilities)
				.because("a request meets " + STAGE_CAPABILITIES + " only through dev.aiguard.stage (docs/design.md)");
	}

	/** @return the simple name of the top-level class {@code c} is nested in (or is) */
	private static String outerName(JavaClass c) {
		String name = c.getName().substring("dev.aiguard.".length());
		int nested = name.indexOf('$');
		return nested < 0 ? name : name.substring(0, nested);
	}

	/** The rules themselves must catch what they exist for (fixtures in test sources only). */
	@Test
	void theRulesCatchACycleAUseOfTheCoordinatorAndAnUndeclaredEdge() throws ClassNotFoundException {
		JavaClasses fixtures = new ClassFileImporter().importClasses(dev.aiguard.archfixturea.UsesTheCoordinator.class,
				dev.aiguard.archfixtureb.PointsBack.class, GuardPolicy.class,
				Class.forName("dev.aiguard.stall.UsesTheBreaker"), dev.aiguard.breaker.CircuitBreaker.class);
		assertThat(cycleRule().evaluate(fixtures).hasViolation()).as("archfixturea <-> archfixtureb").isTrue();
		assertThat(coordinatorRule().evaluate(fixtures).hasViolation()).as("a package using the coordinator").isTrue();
		assertThat(edgeRule("stall", ALLOWED.get("stall")).evaluate(fixtures).hasViolation())
				.as("stall -> breaker is not declared").isTrue();
	}

	static ArchRule coordinatorRule() {
		return noClasses().that().resideOutsideOfPackage("dev.aiguard")
				.and().resideInAPackage("dev.aiguard..")
				.should().dependOnClassesThat().resideInAPackage("dev.aiguard")
				.because("the coordinator sits on top of the graph");
	}

	static ArchRule edgeRule(String pkg, List<String> allowed) {
		String[] permitted = Stream.concat(Stream.of(pkg), allowed.stream())
				.map(p -> "dev.aiguard." + p + "..").toArray(String[]::new);
		return classes().that().resideInAPackage("dev.aiguard." + pkg + "..")
				.should().onlyDependOnClassesThat(DescribedPredicate.describe(
						"outside the library or in " + Arrays.toString(permitted),
						(JavaClass c) -> !c.getPackageName().startsWith("dev.aiguard")
								|| Arrays.stream(permitted).anyMatch(p -> c.getPackageName()
										.startsWith(p.substring(0, p.length() - 2)))))
				.because("dev.aiguard." + pkg + " may use only " + allowed + " (docs/design.md)");
	}

	static ArchRule cycleRule() {
		// the root package is a slice of its own: "dev.aiguard.(*).." would leave it out
		return slices().assignedFrom(new com.tngtech.archunit.library.dependencies.SliceAssignment() {
			@Override
			public com.tngtech.archunit.library.dependencies.SliceIdentifier getIdentifierOf(JavaClass c) {
				String p = c.getPackageName();
				if (p.equals("dev.aiguard")) {
					return com.tngtech.archunit.library.dependencies.SliceIdentifier.of("root");
				}
				if (p.startsWith("dev.aiguard.")) {
					return com.tngtech.archunit.library.dependencies.SliceIdentifier
							.of(p.substring("dev.aiguard.".length()).split("\\.")[0]);
				}
				return com.tngtech.archunit.library.dependencies.SliceIdentifier.ignore();
			}

			@Override
			public String getDescription() {
				return "the library's top-level packages";
			}
		}).should().beFreeOfCycles();
	}
}
