package dev.aiguard.retry;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ConnectException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;

import dev.aiguard.stall.IncompleteStreamException;
import dev.aiguard.core.StallPhase;
import dev.aiguard.stall.StreamStalledException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Hooks;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;
import reactor.util.retry.Retry;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import dev.aiguard.core.RetryHint;

class RetryRulesTest {

	/** A provider-style error that says whether to retry and how long to wait. */
	static class Hint extends RuntimeException implements RetryHint {
		private static final long serialVersionUID = 1L;
		final boolean retryable;
		final Duration wait;

		Hint(boolean retryable, Duration wait) {
			super("hint", null, false, false);
			this.retryable = retryable;
			this.wait = wait;
		}

		@Override
		public boolean retryable() {
			return retryable;
		}

		@Override
		public Optional<Duration> retryAfter() {
			return Optional.ofNullable(wait);
		}
	}

	@AfterEach
	void resetHooks() {
		Hooks.resetOnErrorDropped();
	}

	private static RetryRules noJitter() {
		return RetryRules.defaults().jitter(0);
	}

	@Test
	void defaultsAreThreeTriesFromHalfASecondToEightSecondsWithFullJitter() {
		RetryRules spec = RetryRules.defaults();
		assertThat(spec.maxAttempts()).isEqualTo(3);
		assertThat(spec.maxRetries()).isEqualTo(2);
		assertThat(spec.minBackoff()).isEqualTo(Duration.ofMillis(500));
		assertThat(spec.maxBackoff()).isEqualTo(Duration.ofSeconds(8));
		assertThat(spec.maxRetryAfter()).isEqualTo(Duration.ofSeconds(60));
		assertThat(spec.jitter()).isEqualTo(1.0d);
		assertThat(spec.retryOn()).isSameAs(RetryRules.DEFAULT_RETRYABLE);
	}

	@Test
	void withoutJitterDelaysDoubleFromMinBackoffUpToMaxBackoff() {
		RetryRules spec = noJitter();
		List<Long> millis = new ArrayList<>();
		for (int retry = 1; retry <= 7; retry++) {
			millis.add(spec.delayBefore(retry, new IOException()).toMillis());
		}
		assertThat(millis).containsExactly(500L, 1000L, 2000L, 4000L, 8000L, 8000L, 8000L);
	}

	@Test
	void hugeRetryNumbersStayAtMaxBackoffWithoutOverflow() {
		RetryRules spec = noJitter().maxBackoff(Duration.ofDays(36_500));
		assertThat(spec.delayBefore(62, null)).isEqualTo(Duration.ofDays(36_500));
		assertThat(spec.delayBefore(Integer.MAX_VALUE, null)).isEqualTo(Duration.ofDays(36_500));
		assertThat(RetryRules.defaults().delayBefore(Integer.MAX_VALUE, null)).isLessThanOrEqualTo(Duration.ofSeconds(8));
	}

	@Test
	void fullJitterDrawsBetweenMinBackoffAndTwiceTheExponentialValue() {
		double[] draws = {0.0, 0.5, 0.999_999};
		AtomicInteger next = new AtomicInteger();
		RetryRules spec = RetryRules.defaults().random(() -> draws[next.getAndIncrement() % draws.length]);
		// retry 1: centre 500 ms -> [500 ms, 1 s]
		assertThat(spec.delayBefore(1, null)).isEqualTo(Duration.ofMillis(500));
		assertThat(spec.delayBefore(1, null)).isEqualTo(Duration.ofMillis(750));
		assertThat(spec.delayBefore(1, null)).isBetween(Duration.ofMillis(999), Duration.ofMillis(1000));
		// retry 3: centre 2 s -> [500 ms (floor), 4 s]
		assertThat(spec.delayBefore(3, null)).isEqualTo(Duration.ofMillis(500));
		assertThat(spec.delayBefore(3, null)).isEqualTo(Duration.ofMillis(2250));
		assertThat(spec.delayBefore(3, null)).isBetween(Duration.ofMillis(3999), Duration.ofMillis(4000));
		// retry 5: centre 8 s -> [500 ms, 8 s] (capped above)
		next.set(2);
		assertThat(spec.delayBefore(5, null)).isBetween(Duration.ofMillis(7999), Duration.ofSeconds(8));
	}

	@Test
	void partialJitterStaysAroundTheExponentialValue() {
		RetryRules low = RetryRules.defaults().jitter(0.25).random(() -> 0.0);
		RetryRules high = RetryRules.defaults().jitter(0.25).random(() -> 1.0);
		assertThat(low.delayBefore(3, null)).isEqualTo(Duration.ofMillis(1500));
		assertThat(high.delayBefore(3, null)).isEqualTo(Duration.ofMillis(2500));
	}

	@Test
	void randomValuesOutsideTheUnitIntervalAreClamped() {
		assertThat(RetryRules.defaults().random(() -> -3.0).delayBefore(2, null)).isEqualTo(Duration.ofMillis(500));
		assertThat(RetryRules.defaults().random(() -> Double.NaN).delayBefore(2, null)).isEqualTo(Duration.ofMillis(500));
		assertThat(RetryRules.defaults().random(() -> 7.0).delayBefore(2, null)).isEqualTo(Duration.ofSeconds(2));
	}

	@Test
	void jitteredDelaysNeverLeaveTheirWindow() {
		RetryRules spec = RetryRules.defaults();
		for (int i = 0; i < 2_000; i++) {
			int retry = 1 + i % 6;
			Duration d = spec.delayBefore(retry, null);
			long centre = Math.min(8000L, 500L << (retry - 1));
			assertThat(d).isBetween(Duration.ofMillis(500), Duration.ofMillis(Math.min(8000L, 2 * centre)));
		}
	}

	@Test
	void retryAfterWinsWhenLongerThanTheBackoff() {
		assertThat(noJitter().delayBefore(1, new Hint(true, Duration.ofSeconds(2)))).isEqualTo(Duration.ofSeconds(2));
		// longer than maxBackoff is fine: the server asked for it
		assertThat(noJitter().delayBefore(1, new Hint(true, Duration.ofSeconds(30)))).isEqualTo(Duration.ofSeconds(30));
	}

	@Test
	void shorterRetryAfterDoesNotShortenTheBackoff() {
		assertThat(noJitter().delayBefore(3, new Hint(true, Duration.ofMillis(100)))).isEqualTo(Duration.ofSeconds(2));
		assertThat(noJitter().delayBefore(1, new Hint(true, Duration.ZERO))).isEqualTo(Duration.ofMillis(500));
		assertThat(noJitter().delayBefore(1, new Hint(true, Duration.ofSeconds(-5)))).isEqualTo(Duration.ofMillis(500));
	}

	@Test
	void retryAfterIsCappedAtMaxRetryAfter() {
		Hint oneHour = new Hint(true, Duration.ofHours(1));
		assertThat(noJitter().delayBefore(1, oneHour)).isEqualTo(Duration.ofSeconds(60));
		assertThat(noJitter().maxRetryAfter(Duration.ofSeconds(5)).delayBefore(1, oneHour)).isEqualTo(Duration.ofSeconds(5));
		// a cap of zero ignores server waits but never cuts the backoff
		assertThat(noJitter().maxRetryAfter(Duration.ZERO).delayBefore(2, oneHour)).isEqualTo(Duration.ofSeconds(1));
	}

	@Test
	void retryAfterIsFoundInTheCauseChain() {
		RuntimeException wrapped = new RuntimeException("transport", new Hint(true, Duration.ofSeconds(3)));
		assertThat(noJitter().delayBefore(1, wrapped)).isEqualTo(Duration.ofSeconds(3));
	}

	@Test
	void aThrowingRetryHintIsIsolated() {
		List<Throwable> dropped = new ArrayList<>();
		Hooks.onErrorDropped(dropped::add);
		RetryHint broken = new Hint(true, null) {
			private static final long serialVersionUID = 1L;

			@Override
			public Optional<Duration> retryAfter() {
				throw new IllegalStateException("broken hint");
			}
		};
		assertThat(noJitter().delayBefore(1, (Throwable) broken)).isEqualTo(Duration.ofMillis(500));
		assertThat(dropped).singleElement().satisfies(e -> assertThat(e).hasMessage("broken hint"));
	}

	@Test
	void defaultClassificationRetriesTransientErrorsOnly() {
		RetryRules spec = RetryRules.defaults();
		assertThat(spec.isRetryable(new Hint(true, null))).isTrue();
		assertThat(spec.isRetryable(new Hint(false, null))).isFalse();
		assertThat(spec.isRetryable(new StreamStalledException(StallPhase.FIRST_TOKEN, 0, Duration.ofSeconds(10)))).isTrue();
		assertThat(spec.isRetryable(new IncompleteStreamException(0))).isTrue();
		assertThat(spec.isRetryable(new IOException("reset"))).isTrue();
		assertThat(spec.isRetryable(new ConnectException("refused"))).isTrue();
		assertThat(spec.isRetryable(new UncheckedIOException(new IOException("reset")))).isTrue();
		assertThat(spec.isRetryable(new TimeoutException())).isTrue();
		assertThat(spec.isRetryable(new IllegalArgumentException("bad request"))).isFalse();
		assertThat(spec.isRetryable(new NullPointerException())).isFalse();
		assertThat(spec.isRetryable(new IllegalStateException("bug"))).isFalse();
		assertThat(spec.isRetryable(null)).isFalse();
	}

	@Test
	void defaultClassificationLooksThroughWrappersAndTheFirstMatchDecides() {
		RetryRules spec = RetryRules.defaults();
		assertThat(spec.isRetryable(new RuntimeException("wrapped", new ConnectException("refused")))).isTrue();
		assertThat(spec.isRetryable(new IllegalArgumentException("bad", new IOException("reset")))).isFalse();
		assertThat(spec.isRetryable(new RuntimeException("wrapped", new Hint(false, null)))).isFalse();
		// a partial stream says "not retryable" even though its cause was a transient error
		assertThat(spec.isRetryable(new PartialStreamException(new IOException("reset"), 12))).isFalse();
	}

	@Test
	void aThrowingPredicateMeansNotRetryableAndIsDropped() {
		List<Throwable> dropped = new ArrayList<>();
		Hooks.onErrorDropped(dropped::add);
		RetryRules spec = RetryRules.defaults().retryOn(e -> {
			throw new IllegalStateException("predicate failed");
		});
		assertThat(spec.isRetryable(new IOException())).isFalse();
		assertThat(dropped).singleElement().satisfies(e -> assertThat(e).hasMessage("predicate failed"));
	}

	@Test
	void customPredicateExtendsTheDefault() {
		RetryRules spec = RetryRules.defaults()
				.retryOn(RetryRules.DEFAULT_RETRYABLE.or(e -> e instanceof IllegalStateException));
		assertThat(spec.isRetryable(new IllegalStateException())).isTrue();
		assertThat(spec.isRetryable(new IOException())).isTrue();
		assertThat(spec.isRetryable(new IllegalArgumentException())).isFalse();
	}

	@Test
	void canRetryCountsTriesInAll() {
		RetryRules spec = RetryRules.backoff(3, Duration.ofMillis(100));
		assertThat(spec.canRetry(1)).isTrue();
		assertThat(spec.canRetry(2)).isTrue();
		assertThat(spec.canRetry(3)).isFalse();
		assertThat(RetryRules.none().canRetry(1)).isFalse();
		assertThat(RetryRules.none().maxRetries()).isZero();
	}

	@Test
	void settersCopyAndLeaveTheTemplateUnchanged() {
		RetryRules template = RetryRules.defaults();
		RetryRules derived = template.maxAttempts(5).maxBackoff(Duration.ofSeconds(20)).jitter(0.5)
				.maxRetryAfter(Duration.ofSeconds(10)).minBackoff(Duration.ofMillis(200));
		assertThat(derived).isNotSameAs(template);
		assertThat(template.maxAttempts()).isEqualTo(3);
		assertThat(template.maxBackoff()).isEqualTo(Duration.ofSeconds(8));
		assertThat(template.jitter()).isEqualTo(1.0d);
		assertThat(derived.maxAttempts()).isEqualTo(5);
		assertThat(derived.minBackoff()).isEqualTo(Duration.ofMillis(200));
		assertThat(derived.maxBackoff()).isEqualTo(Duration.ofSeconds(20));
		assertThat(derived.maxRetryAfter()).isEqualTo(Duration.ofSeconds(10));
		assertThat(derived.jitter()).isEqualTo(0.5d);
	}

	@Test
	void backoffWithALargeMinimumRaisesTheMaximum() {
		RetryRules spec = RetryRules.backoff(2, Duration.ofSeconds(20)).jitter(0);
		assertThat(spec.maxBackoff()).isEqualTo(Duration.ofSeconds(20));
		assertThat(spec.delayBefore(1, null)).isEqualTo(Duration.ofSeconds(20));
	}

	@Test
	void zeroMinBackoffMeansImmediateRetriesUnlessTheServerAsks() {
		RetryRules spec = RetryRules.backoff(3, Duration.ZERO);
		assertThat(spec.delayBefore(2, null)).isZero();
		assertThat(spec.delayBefore(2, new Hint(true, Duration.ofSeconds(1)))).isEqualTo(Duration.ofSeconds(1));
	}

	@Test
	void badConfigurationNamesTheFieldAndTheValue() {
		assertThatThrownBy(() -> RetryRules.backoff(0, Duration.ofSeconds(1)))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("maxAttempts").hasMessageContaining("0");
		assertThatThrownBy(() -> RetryRules.backoff(3, Duration.ofMillis(-1)))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("minBackoff").hasMessageContaining("PT-0.001S");
		assertThatThrownBy(() -> RetryRules.backoff(3, null))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("minBackoff").hasMessageContaining("null");
		assertThatThrownBy(() -> RetryRules.defaults().maxBackoff(Duration.ofMillis(100)))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("maxBackoff").hasMessageContaining("PT0.1S");
		assertThatThrownBy(() -> RetryRules.defaults().minBackoff(Duration.ofSeconds(9)))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("minBackoff").hasMessageContaining("PT9S");
		assertThatThrownBy(() -> RetryRules.defaults().maxRetryAfter(Duration.ofSeconds(-1)))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("maxRetryAfter").hasMessageContaining("PT-1S");
		assertThatThrownBy(() -> RetryRules.defaults().jitter(1.5))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("jitter").hasMessageContaining("1.5");
		assertThatThrownBy(() -> RetryRules.defaults().jitter(Double.NaN))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("jitter").hasMessageContaining("NaN");
		assertThatThrownBy(() -> RetryRules.defaults().retryOn(null))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("retryOn");
		assertThatThrownBy(() -> RetryRules.defaults().random(null))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("random");
		assertThatThrownBy(() -> RetryRules.defaults().maxAttempts(-2))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("maxAttempts").hasMessageContaining("-2");
		assertThatThrownBy(() -> RetryRules.defaults().delayBefore(0, null))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("retryNumber").hasMessageContaining("0");
	}

	@Test
	void theScheduleDrivesRetriesInVirtualTime() {
		RetryRules spec = noJitter();
		AtomicInteger subscriptions = new AtomicInteger();
		StepVerifier.withVirtualTime(() -> {
			Mono<String> upstream = Mono.defer(() -> subscriptions.incrementAndGet() < 3
					? Mono.error(new ConnectException("refused"))
					: Mono.just("answer"));
			return upstream.retryWhen(Retry.from(signals -> signals.concatMap(s -> {
				int attemptsMade = (int) s.totalRetries() + 1;
				if (!spec.canRetry(attemptsMade) || !spec.isRetryable(s.failure())) {
					return Mono.error(s.failure());
				}
				return Mono.delay(spec.delayBefore(attemptsMade, s.failure()));
			})));
		})
				.expectSubscription()
				.expectNoEvent(Duration.ofMillis(499))
				.then(() -> assertThat(subscriptions).hasValue(1))
				.thenAwait(Duration.ofMillis(1))
				.then(() -> assertThat(subscriptions).hasValue(2))
				.expectNoEvent(Duration.ofMillis(999))
				.thenAwait(Duration.ofMillis(1))
				.expectNext("answer")
				.verifyComplete();
		assertThat(subscriptions).hasValue(3);
	}

	@Test
	void aServerWaitPostponesTheRetryInVirtualTime() {
		RetryRules spec = noJitter();
		AtomicInteger subscriptions = new AtomicInteger();
		StepVerifier.withVirtualTime(() -> Flux.defer(() -> subscriptions.incrementAndGet() == 1
				? Flux.<String>error(new Hint(true, Duration.ofSeconds(7)))
				: Flux.just("ok"))
				.retryWhen(Retry.from(signals -> signals.concatMap(s -> Mono.delay(spec.delayBefore(1, s.failure()))))))
				.expectSubscription()
				.expectNoEvent(Duration.ofMillis(6_999))
				.thenAwait(Duration.ofMillis(1))
				.expectNext("ok")
				.verifyComplete();
	}
}
