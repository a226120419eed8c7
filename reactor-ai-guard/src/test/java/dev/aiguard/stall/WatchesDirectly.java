package dev.aiguard.stall;

import dev.aiguard.stall.watch.StallWatch;

/** Test fixture for {@code PackageGraphTest}: a stall class other than {@code Stall} that uses the watch. */
final class WatchesDirectly {

	static long tokens(StallWatch<?> watch) {
		return watch.tokens();
	}
}
