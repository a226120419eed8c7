package dev.aiguard.fallback;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.scheduler.Schedulers;
import reactor.test.StepVerifier;
import reactor.test.scheduler.VirtualTimeScheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class CaffeineResponseCacheTest {

	static CaffeineResponseCache<String> cache(ResponseCacheSpec spec) {
		return (CaffeineResponseCache<String>) ResponseCache.<String>caffeine(spec);
	}

	@Test
	void storedAnswerIsReplayedAsAStreamOfItsChunks() {
		CaffeineResponseCache<String> cache = cache(ResponseCacheSpec.defaults());
		cache.store("k", List.of("Open ", "9 to 5", "[done]"));
		StepVerifier.create(Fallback.cache(cache).answer(FallbackTest.callForm("k")))
				.expectNext("Open ", "9 to 5", "[done]")
				.verifyComplete();
	}

	@Test
	void missIsEmpty() {
		StepVerifier.create(cache(ResponseCacheSpec.defaults()).lookup("absent")).verifyComplete();
	}

	@Test
	void lookupIsLazy() {
		CaffeineResponseCache<String> cache = cache(ResponseCacheSpec.defaults());
		var lookup = cache.lookup("k");
		cache.store("k", List.of("stored after the lookup was assembled"));
		StepVerifier.create(lookup).expectNext(List.of("stored after the lookup was assembled")).verifyComplete();
	}

	@Test
	void answersOverThePerEntryBoundAreNotStored() {
		CaffeineResponseCache<String> cache = cache(ResponseCacheSpec.defaults().maxChunksPerEntry(3));
		cache.store("fits", List.of("a", "b", "c"));
		cache.store("too long", List.of("a", "b", "c", "d"));
		cache.store("empty", List.of());
		assertThat(cache.maxChunksPerEntry()).isEqualTo(3);
		StepVerifier.create(cache.lookup("fits")).expectNext(List.of("a", "b", "c")).verifyComplete();
		StepVerifier.create(cache.lookup("too long")).verifyComplete();
		StepVerifier.create(cache.lookup("empty")).verifyComplete();
	}

	@Test
	void storeKeepsACopy() {
		CaffeineResponseCache<String> cache = cache(ResponseCacheSpec.defaults());
		List<String> chunks = new ArrayList<>(List.of("a"));
		cache.store("k", chunks);
		chunks.add("b");
		StepVerifier.create(cache.lookup("k")).expectNext(List.of("a")).verifyComplete();
	}

	@Test
	void entriesStayWithinTheMaximum() {
		CaffeineResponseCache<String> cache = cache(ResponseCacheSpec.defaults().maximumEntries(100));
		for (int i = 0; i < 5_000; i++) {
			cache.store("k" + i, List.of("v" + i));
		}
		cache.cleanUp();
		assertThat(cache.estimatedSize()).isLessThanOrEqualTo(100);
	}

	@Test
	void entriesExpireAfterTheirTimeToLive() {
		VirtualTimeScheduler clock = VirtualTimeScheduler.create();
		try {
			CaffeineResponseCache<String> cache = cache(ResponseCacheSpec.defaults()
					.timeToLive(Duration.ofMinutes(10)).clock(clock));
			cache.store("k", List.of("v"));
			clock.advanceTimeBy(Duration.ofMinutes(10).minusNanos(1));
			StepVerifier.create(cache.lookup("k")).expectNext(List.of("v")).verifyComplete();
			clock.advanceTimeBy(Duration.ofNanos(1));
			StepVerifier.create(cache.lookup("k")).verifyComplete();
		}
		finally {
			clock.dispose();
		}
	}

	/**
	 * Heavy eviction churn on few keys from parallel threads: updates meet entries that eviction has
	 * retired, where Caffeine's put spins; the library's BlockHound integration allows exactly that.
	 */
	@Test
	void lookupsAndStoresNeverBlockANonBlockingThread() {
		CaffeineResponseCache<String> cache = cache(ResponseCacheSpec.defaults().maximumEntries(10));
		StepVerifier.create(Flux.range(0, 20_000)
						.parallel(4).runOn(Schedulers.parallel())
						.flatMap(i -> {
							cache.store("k" + (i % 50), List.of("v" + (i % 50)));
							return cache.lookup("k" + (i % 50));
						})
						.sequential()
						.count())
				.assertNext(hits -> assertThat(hits).isPositive())
				.verifyComplete();
	}

	@Test
	void specSettersNameTheFieldAndValue() {
		ResponseCacheSpec spec = ResponseCacheSpec.defaults();
		assertThatThrownBy(() -> spec.maximumEntries(0)).isInstanceOf(IllegalArgumentException.class)
				.hasMessage("maximumEntries must be > 0, was 0");
		assertThatThrownBy(() -> spec.timeToLive(Duration.ZERO)).isInstanceOf(IllegalArgumentException.class)
				.hasMessage("timeToLive must be > 0, was PT0S");
		assertThatThrownBy(() -> spec.timeToLive(null)).isInstanceOf(IllegalArgumentException.class)
				.hasMessage("timeToLive must be > 0, was null");
		assertThatThrownBy(() -> spec.maxChunksPerEntry(-3)).isInstanceOf(IllegalArgumentException.class)
				.hasMessage("maxChunksPerEntry must be > 0, was -3");
		assertThatThrownBy(() -> spec.clock(null)).isInstanceOf(IllegalArgumentException.class)
				.hasMessage("clock must not be null");
	}

	@Test
	void specIsCopyOnWrite() {
		ResponseCacheSpec defaults = ResponseCacheSpec.defaults();
		ResponseCacheSpec tuned = defaults.maximumEntries(5).timeToLive(Duration.ofSeconds(1)).maxChunksPerEntry(7);
		assertThat(defaults.maximumEntries()).isEqualTo(10_000);
		assertThat(defaults.timeToLive()).isEqualTo(Duration.ofMinutes(10));
		assertThat(defaults.maxChunksPerEntry()).isEqualTo(4_096);
		assertThat(defaults.clock()).isNull();
		assertThat(tuned.maximumEntries()).isEqualTo(5);
		assertThat(tuned.timeToLive()).isEqualTo(Duration.ofSeconds(1));
		assertThat(tuned.maxChunksPerEntry()).isEqualTo(7);
	}
}
