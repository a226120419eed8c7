package dev.aiguard.budget;

import io.github.bucket4j.Bandwidth;
import io.github.bucket4j.BucketConfiguration;

/**
 * Turns a {@link BucketSpec} into Bucket4j's configuration, for {@link LocalBucketStore} and for
 * stores on Bucket4j's distributed proxies (Redis), so every store builds the same bucket from the
 * same spec. Needs {@code com.bucket4j:bucket4j_jdk17-core} on the class path.
 *
 * <pre>{@code
 * AsyncBucketProxy bucket = proxyManager.asAsync().builder()
 *     .build(key, () -> CompletableFuture.completedFuture(Bucket4jSpecs.configuration(spec)));
 * }</pre>
 */
public final class Bucket4jSpecs {

	private Bucket4jSpecs() {
	}

	/** @return one bandwidth of {@code spec.capacity()} units, refilled as the spec says, starting full */
	public static Bandwidth bandwidth(BucketSpec spec) {
		return spec.refill() == BucketSpec.Refill.GREEDY
				? Bandwidth.builder().capacity(spec.capacity()).refillGreedy(spec.capacity(), spec.period())
						.id(spec.name()).build()
				: Bandwidth.builder().capacity(spec.capacity()).refillIntervally(spec.capacity(), spec.period())
						.id(spec.name()).build();
	}

	/** @return a configuration with the spec's one bandwidth */
	public static BucketConfiguration configuration(BucketSpec spec) {
		return BucketConfiguration.builder().addLimit(bandwidth(spec)).build();
	}
}
