package dev.aiguard;

import dev.aiguard.breaker.BreakerPermit;
import dev.aiguard.core.Outcome;

/**
 * Test fixture for {@code PackageGraphTest}: a request class of the coordinator that settles a
 * breaker permit itself instead of going through a stage.
 */
final class ReachesTheBreakerDirectly {

	static void settle(BreakerPermit permit) {
		permit.record(Outcome.SUCCESS, 0L);
	}
}
