package dev.aiguard.stall;

import dev.aiguard.breaker.CircuitBreaker;

/** Test fixture for {@code PackageGraphTest}: an edge from stall to breaker that is not declared. */
final class UsesTheBreaker {

	static CircuitBreaker breaker() {
		return CircuitBreaker.builder("fixture").build();
	}
}
