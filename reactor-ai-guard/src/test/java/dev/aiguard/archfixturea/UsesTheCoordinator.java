package dev.aiguard.archfixturea;

import dev.aiguard.GuardPolicy;
import dev.aiguard.archfixtureb.PointsBack;

/** Test fixture for {@code PackageGraphTest}: a package that uses the coordinator and forms a cycle. */
public final class UsesTheCoordinator {

	public static GuardPolicy policy() {
		return GuardPolicy.builder("fixture").build();
	}

	public static PointsBack other() {
		return new PointsBack();
	}
}
