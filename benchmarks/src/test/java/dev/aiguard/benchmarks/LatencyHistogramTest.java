package dev.aiguard.benchmarks;

import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

class LatencyHistogramTest {

	private static long ms(double millis) {
		return (long) (millis * 1_000_000);
	}

	@Test
	void percentilesFollowTheNearestRankOfTheRecordedLatencies() {
		LatencyHistogram h = new LatencyHistogram();
		for (int i = 1; i <= 100; i++) {
			h.record(ms(i));
		}

		assertThat(h.count()).isEqualTo(100);
		// 1..99 ms fall in 10 µs buckets: the upper edge is 10 µs above the value
		assertThat(h.percentileMillis(50)).isCloseTo(50.01, within(1e-9));
		assertThat(h.percentileMillis(99)).isCloseTo(99.01, within(1e-9));
		// 100 ms is the first 1 ms bucket
		assertThat(h.percentileMillis(100)).isCloseTo(101.0, within(1e-9));
	}

	@Test
	void aPercentileIsNeverBelowTheLatencyItStandsFor() {
		LatencyHistogram h = new LatencyHistogram();
		h.record(TimeUnit.MICROSECONDS.toNanos(1_234));
		h.record(ms(250.4));

		assertThat(h.percentileMillis(50)).isGreaterThanOrEqualTo(1.234).isLessThanOrEqualTo(1.234 + 0.01);
		assertThat(h.percentileMillis(100)).isGreaterThanOrEqualTo(250.4).isLessThanOrEqualTo(250.4 + 1);
	}

	@Test
	void latenciesBeyondTheLastBucketAndBelowZeroAreKept() {
		LatencyHistogram h = new LatencyHistogram();
		h.record(-5);
		h.record(TimeUnit.MINUTES.toNanos(5));

		assertThat(h.count()).isEqualTo(2);
		assertThat(h.percentileMillis(50)).isCloseTo(0.01, within(1e-9));
		assertThat(h.percentileMillis(100)).isCloseTo(60_000.0, within(1e-9));
	}

	@Test
	void bucketsMeetAtTheirEdges() {
		assertThat(LatencyHistogram.bucket(LatencyHistogram.FINE_LIMIT_NANOS - 1))
			.isEqualTo(LatencyHistogram.bucket(LatencyHistogram.FINE_LIMIT_NANOS) - 1);
		assertThat(LatencyHistogram.upperEdgeNanos(LatencyHistogram.bucket(LatencyHistogram.FINE_LIMIT_NANOS - 1)))
			.isEqualTo(LatencyHistogram.FINE_LIMIT_NANOS);
	}

	@Test
	void anEmptyHistogramHasNoPercentile() {
		assertThat(new LatencyHistogram().percentileMillis(99)).isNaN();
	}

	@Test
	void refusesAPercentileOutOfRange() {
		LatencyHistogram h = new LatencyHistogram();
		assertThatThrownBy(() -> h.percentileMillis(0)).isInstanceOf(IllegalArgumentException.class)
			.hasMessage("percentile must be > 0 and <= 100, was 0.0");
		assertThatThrownBy(() -> h.percentileMillis(100.5)).isInstanceOf(IllegalArgumentException.class);
	}
}
