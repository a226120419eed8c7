package dev.aiguard.demo;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.Test;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;

/**
 * The demo is the library's first user outside it: it may use every exported package of
 * {@code dev.aiguard}, never {@code dev.aiguard.internal} (the library keeps the right to change it).
 */
class LibraryBoundaryTest {

	@Test
	void theDemoNeverUsesTheLibrarysInternals() {
		JavaClasses demo = new ClassFileImporter().withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
				.importPackages("dev.aiguard.demo");
		noClasses().should().dependOnClassesThat().resideInAPackage("dev.aiguard.internal..")
				.because("dev.aiguard.internal is not part of the library's API")
				.check(demo);
	}
}
