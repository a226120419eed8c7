package dev.aiguard.benchmarks;

import java.util.List;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

class VariantResultTest {

	@Test
	void pooledPassesAddTheirCountsAndAverageTheHeapOverEveryOpenStream() {
		VariantResult a = new VariantResult("guarded", 1000, 90, 1, 1000, 1000, 10_000, 80_000_000, 30_000_000, 12,
				8_000_000_000L, 10_000_000, 1, 2, 3, 50_000_000);
		VariantResult b = new VariantResult("guarded", 1000, 110, 0, 999, 500, 30_000, 160_000_000, 90_000_000, 30,
				8_000_000_000L, 2_000_000, 1, 2, 3, 70_000_000);
		LatencyHistogram ttft = new LatencyHistogram();
		for (int ms = 1; ms <= 100; ms++) {
			ttft.record(ms * 1_000_000L);
		}

		VariantResult pooled = VariantResult.pooled(List.of(a, b), ttft);

		assertThat(pooled.variant()).isEqualTo("guarded");
		assertThat(pooled.completed()).isEqualTo(200);
		assertThat(pooled.failed()).isEqualTo(1);
		assertThat(pooled.peakOpen()).isEqualTo(1000);
		assertThat(pooled.tokens()).isEqualTo(40_000);
		// 240 ms of CPU over 40 000 tokens; 120 MB over 40 000 tokens; 12 MB over 1500 open streams
		assertThat(pooled.cpuNanosPerToken()).isCloseTo(6_000, within(1e-9));
		assertThat(pooled.allocatedBytesPerToken()).isCloseTo(3_000, within(1e-9));
		assertThat(pooled.heapBytesPerStream()).isCloseTo(8_000, within(1e-9));
		assertThat(pooled.serverCpuNanosPerToken()).isCloseTo(3_000, within(1e-9));
		assertThat(pooled.gcMillis()).isEqualTo(42);
		assertThat(pooled.tokensPerSecond()).isCloseTo(2_500, within(1e-9));
		assertThat(pooled.ttftP99Ms()).isCloseTo(99.01, within(1e-9));
		assertThat(pooled.ttftSamples()).isEqualTo(100);
	}
}
