package dev.aiguard.archfixtureb;

import dev.aiguard.archfixturea.UsesTheCoordinator;

/** Test fixture for {@code PackageGraphTest}: closes a cycle with {@link UsesTheCoordinator}. */
public final class PointsBack {

	public Object back() {
		return UsesTheCoordinator.policy();
	}
}
