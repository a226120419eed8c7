package dev.aiguard;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import com.tngtech.archunit.base.DescribedPredicate;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.lang.ArchRule;
import com.tngtech.archunit.library.dependencies.SliceAssignment;
import com.tngtech.archunit.library.dependencies.SliceIdentifier;
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
 * depending on it. Every package counts on its own, sub-packages too: a feature's sub-package
 * ({@code stall.watch}) and its parent ({@code stall}) may use each other only along declared
 * edges. A new import that breaks this fails the build here.
 */
class PackageGraphTest {

	/** Library packages (relative to {@code dev.aiguard}) each may use, besides itself. */
	static final Map<String, List<String>> ALLOWED = new LinkedHashMap<>();

	/** Packages the module keeps inside: {@code internal}, the stage contract, and the sub-packages the guard shares across packages. */
	static final Set<String> NOT_EXPORTED = Set.of("internal", "stage", "stall.watch", "fallback.recording",
			"retry.splice");

	static {
		ALLOWED.put("core", List.of());
		ALLOWED.put("internal", List.of());
		ALLOWED.put("sse", List.of("internal"));
		ALLOWED.put("metrics", List.of("core", "internal"));
		ALLOWED.put("chat", List.of("core", "internal"));
		ALLOWED.put("stall", List.of("core", "internal", "stall.watch"));
		ALLOWED.put("stall.watch", List.of("core", "internal", "stall"));
		ALLOWED.put("stage", List.of("core", "chat"));
		ALLOWED.put("admission", List.of("core", "internal", "metrics", "stage"));
		ALLOWED.put("breaker", List.of("core", "internal", "metrics", "stage"));
		ALLOWED.put("retry", List.of("core", "internal", "chat", "retry.splice"));
		ALLOWED.put("retry.splice", List.of("core", "internal"));
		ALLOWED.put("truncation", List.of("core", "internal", "chat"));
		ALLOWED.put("fallback", List.of("core", "internal", "metrics", "chat", "breaker", "fallback.recording", "stage"));
		ALLOWED.put("fallback.recording", List.of("core", "internal"));
		ALLOWED.put("provider", List.of("core", "internal", "chat", "sse"));
		ALLOWED.put("load", List.of("core", "internal", "metrics", "admission", "stage"));
		ALLOWED.put("validation", List.of("core", "internal", "chat", "stage"));
		ALLOWED.put("budget", List.of("core", "internal", "metrics", "chat", "admission", "truncation", "provider",
				"stage"));
	}

	/**
	 * The classes of one guarded request: the loop, the port its stages answer through, the books,
	 * the recovery steps, the chunks' path. They meet the capabilities that are stages only through
	 * {@code dev.aiguard.stage}.
	 */
	static final List<String> REQUEST_CLASSES = List.of("GuardedStream", "RequestControl", "StagePort",
			"RequestLedger", "AttemptRecord", "RecoverySteps", "AnswerPath", "AnswerTap", "LaneThreadCall", "AttemptKind");

	/**
	 * The capability packages that are stages: the request classes may not use them, sub-packages
	 * included, API types too. For {@code fallback} that means the ladder, its triggers and
	 * requests, the response cache, the cache keys and the recorder: the request asks a run's
	 * {@code AnswerSource} for another answer and feeds its {@code AnswerRecording}. The classes
	 * that read the policy may still name these types: {@code GuardPolicy} and {@code PolicyBuilder}
	 * hold the specs the user passes in, {@code PolicyView} builds the stages, {@code AiGuard}
	 * checks their chunk types, and {@code Recovery}, the pure decision, picks the
	 * {@code FallbackTrigger} a failed attempt enters the ladder by.
	 */
	static final List<String> STAGE_CAPABILITIES = List.of("admission", "breaker", "budget", "load", "validation",
			"fallback");

	static JavaClasses library;

	@BeforeAll
	static void importLibrary() {
		library = new ClassFileImporter().withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
				.importPackages("dev.aiguard");
	}

	/** Every package of the library, sub-packages included; a new one must be added to {@link #ALLOWED}. */
	@Test
	void everyPackageHasDeclaredEdges() {
		List<String> packages = library.stream().map(c -> relative(c.getPackageName()))
				.filter(p -> p != null && !p.isEmpty()).distinct().sorted().collect(Collectors.toList());
		assertThat(ALLOWED.keySet()).containsAll(packages);
	}

	@TestFactory
	Stream<DynamicTest> featurePackagesUseOnlyTheirDeclaredEdges() {
		return ALLOWED.entrySet().stream().map(e -> DynamicTest.dynamicTest(e.getKey(),
				() -> edgeRule(e.getKey(), e.getValue()).check(library)));
	}

	/** module-info exports every public package and keeps {@code internal}, {@code stage} and the shared sub-packages inside. */
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

	/** The stage rule catches a request class that walks the fallback ladder itself. */
	@Test
	void theStageRuleCatchesARequestClassWalkingTheLadder() {
		JavaClasses fixtures = new ClassFileImporter().importClasses(ReachesTheLadderDirectly.class,
				RecoverySteps.class, dev.aiguard.fallback.FallbackChain.class, dev.aiguard.stage.AnswerSource.class);
		List<String> withFixture = Stream.concat(REQUEST_CLASSES.stream(), Stream.of("ReachesTheLadderDirectly"))
				.collect(Collectors.toList());
		assertThat(stagesOnlyRule(withFixture).evaluate(fixtures).hasViolation()).as("a request class using fallback")
				.isTrue();
		assertThat(stagesOnlyRule(REQUEST_CLASSES).evaluate(fixtures).hasViolation()).as("RecoverySteps alone").isFalse();
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

	/**
	 * A sub-package is a package of its own: an edge from {@code retry.splice} back to {@code retry}
	 * is undeclared and closes a cycle, although both share the top-level name.
	 */
	@Test
	void theRulesSeeSubPackages() throws ClassNotFoundException {
		JavaClasses fixtures = new ClassFileImporter().importClasses(Class.forName("dev.aiguard.retry.splice.UsesRetryRules"),
				dev.aiguard.retry.RetryRules.class, Class.forName("dev.aiguard.retry.ChatContinuation"),
				dev.aiguard.retry.splice.OverlapSplicer.class);
		assertThat(edgeRule("retry.splice", ALLOWED.get("retry.splice")).evaluate(fixtures).hasViolation())
				.as("retry.splice -> retry is not declared").isTrue();
		assertThat(cycleRule().evaluate(fixtures).hasViolation()).as("retry <-> retry.splice").isTrue();
		assertThat(cycleRule().evaluate(new ClassFileImporter().importClasses(Class.forName("dev.aiguard.retry.ChatContinuation"),
				dev.aiguard.retry.splice.OverlapSplicer.class)).hasViolation()).as("retry -> retry.splice alone").isFalse();
	}

	/** The cycle rule lets through the one edge {@code Stall -> StallWatch} and no other edge from {@code stall}. */
	@Test
	void theCycleRuleExemptsOnlyStallCreatingItsWatch() throws ClassNotFoundException {
		JavaClasses stall = new ClassFileImporter().importClasses(dev.aiguard.stall.Stall.class,
				Class.forName("dev.aiguard.stall.Stall$FluxStallDetect"), dev.aiguard.stall.StallSpec.class,
				dev.aiguard.stall.watch.StallWatch.class);
		assertThat(cycleRule().evaluate(stall).hasViolation()).as("Stall -> StallWatch -> StallSpec").isFalse();
		JavaClasses other = new ClassFileImporter().importClasses(Class.forName("dev.aiguard.stall.WatchesDirectly"),
				dev.aiguard.stall.StallSpec.class, dev.aiguard.stall.watch.StallWatch.class);
		assertThat(cycleRule().evaluate(other).hasViolation()).as("another stall class -> StallWatch").isTrue();
	}

	static ArchRule coordinatorRule() {
		return noClasses().that().resideOutsideOfPackage("dev.aiguard")
				.and().resideInAPackage("dev.aiguard..")
				.should().dependOnClassesThat().resideInAPackage("dev.aiguard")
				.because("the coordinator sits on top of the graph");
	}

	static ArchRule edgeRule(String pkg, List<String> allowed) {
		List<String> permitted = Stream.concat(Stream.of(pkg), allowed.stream()).collect(Collectors.toList());
		return classes().that().resideInAPackage("dev.aiguard." + pkg)
				.should().onlyDependOnClassesThat(DescribedPredicate.describe(
						"outside the library or in " + permitted,
						(JavaClass c) -> {
							String p = relative(c.getPackageName());
							return p == null || permitted.contains(p);
						}))
				.because("dev.aiguard." + pkg + " may use only " + allowed + " (docs/design.md)");
	}

	/**
	 * One slice per package; the only edge left out is {@code Stall} creating its {@code StallWatch}:
	 * the watch lives in a package the module does not export and reads the public {@code StallSpec}
	 * and the stall exceptions, so {@code stall} and {@code stall.watch} use each other through it.
	 */
	static ArchRule cycleRule() {
		return slices().assignedFrom(new SliceAssignment() {
			@Override
			public SliceIdentifier getIdentifierOf(JavaClass c) {
				String p = relative(c.getPackageName());
				if (p == null) {
					return SliceIdentifier.ignore();
				}
				// the root package is a slice of its own
				return SliceIdentifier.of(p.isEmpty() ? "root" : p);
			}

			@Override
			public String getDescription() {
				return "the library's packages";
			}
		}).should().beFreeOfCycles()
				.ignoreDependency(classOrNested("dev.aiguard.stall.Stall"), classOrNested("dev.aiguard.stall.watch.StallWatch"));
	}

	private static DescribedPredicate<JavaClass> classOrNested(String name) {
		return DescribedPredicate.describe(name, c -> c.getName().equals(name) || c.getName().startsWith(name + "$"));
	}

	/** @return the package relative to {@code dev.aiguard} ("" for the root), or {@code null} outside the library */
	static String relative(String packageName) {
		if (packageName.equals("dev.aiguard")) {
			return "";
		}
		return packageName.startsWith("dev.aiguard.") ? packageName.substring("dev.aiguard.".length()) : null;
	}
}
