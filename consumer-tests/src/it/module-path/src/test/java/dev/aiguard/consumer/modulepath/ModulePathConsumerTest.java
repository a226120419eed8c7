package dev.aiguard.consumer.modulepath;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.aiguard.AiGuard;
import org.junit.jupiter.api.Test;

/**
 * Runs in the module {@code dev.aiguard.consumer.modulepath} (the tests are patched into it), with the
 * library, reactor-core, reactive-streams, jspecify and jtokkit on the module path and BlockHound
 * nowhere: the module graph resolves, a guarded stream completes, and jtokkit is found by its name.
 * (The versions of this set of jars are checked by the {@code core} project, which resolves the same.)
 */
class ModulePathConsumerTest {

	@Test
	void runsAGuardedStreamOnTheModulePath() {
		assertEquals("dev.aiguard.consumer.modulepath", GuardedAnswer.class.getModule().getName());
		assertEquals("dev.aiguard", AiGuard.class.getModule().getName());
		assertTrue(ModuleLayer.boot().findModule("reactor.blockhound").isEmpty(), "BlockHound is not on the module path");

		assertEquals("on the module path", GuardedAnswer.answer());
	}

	@Test
	void countsTokensWithJtokkitByItsModuleName() {
		assertEquals("jtokkit", ModuleLayer.boot().findModule("jtokkit").orElseThrow().getName());
		assertTrue(GuardedAnswer.tokens("Why do streams stall?") > 0);
	}
}
