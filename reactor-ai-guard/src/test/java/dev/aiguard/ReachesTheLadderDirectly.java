package dev.aiguard;

import dev.aiguard.fallback.FallbackChain;
import dev.aiguard.fallback.FallbackRequest;
import reactor.core.publisher.Flux;

/**
 * Test fixture for {@code PackageGraphTest}: a request class of the coordinator that walks the
 * fallback ladder itself instead of asking the fallback stage's run for its answer.
 */
final class ReachesTheLadderDirectly {

	static Flux<Object> walk(FallbackChain<Object> ladder, FallbackRequest request) {
		return ladder.answer(request);
	}
}
