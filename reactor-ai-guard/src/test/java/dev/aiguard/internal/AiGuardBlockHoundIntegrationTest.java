package dev.aiguard.internal;

import java.util.ServiceLoader;

import org.junit.jupiter.api.Test;
import reactor.blockhound.integration.BlockHoundIntegration;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The integration is found the way {@code BlockHound.install()} finds integrations; what it allows
 * is exercised by {@code CaffeineResponseCacheTest.lookupsAndStoresNeverBlockANonBlockingThread}
 * under the BlockHound that every test of this module runs with.
 */
class AiGuardBlockHoundIntegrationTest {

	@Test
	void isRegisteredAsAService() {
		assertThat(ServiceLoader.load(BlockHoundIntegration.class))
				.anyMatch(i -> i instanceof AiGuardBlockHoundIntegration);
	}

	@Test
	void namesCaffeinesClassAsItIs() throws ClassNotFoundException {
		// a rename in Caffeine would silently void the allowance
		Class<?> cache = Class.forName(AiGuardBlockHoundIntegration.CAFFEINE_BOUNDED_CACHE);
		assertThat(cache.getDeclaredMethods()).extracting(java.lang.reflect.Method::getName)
				.contains("put", "afterWrite");
	}
}
