package dev.aiguard.retry.splice;

import dev.aiguard.retry.RetryRules;

/** Test fixture for {@code PackageGraphTest}: an edge from retry.splice back to retry, which is not declared. */
final class UsesRetryRules {

	static RetryRules rules() {
		return RetryRules.defaults();
	}
}
