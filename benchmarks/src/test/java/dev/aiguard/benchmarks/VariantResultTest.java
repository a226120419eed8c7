package dev.aiguard.benchmarks;

import java.util.List;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

class VariantResultTest {

	@Test
	void pooledPassesAddTheirCountsAndAverageTheHeapOverEveryOpenStream() {
		VariantResult a = new VariantResult("guarded", 1000, 90, 1, 1000, 1000, 10_000, 80_000_000, 30_000_000, 12,
				8_000_000_000L, 10_000_000, 1, 2, 3, 50_000_000, gc(8_000_000));
		VariantResult b = new VariantResult("guarded", 1000, 110, 0, 999, 500, 30_000, 160_000_000, 90_000_000, 30,
				8_000_000_000L, 2_000_000, 1, 2, 3, 70_000_000, gc(12_000_000));
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
		// 20 ms of the collector's threads over 40 000 tokens
		assertThat(pooled.threadCpuNanosPerToken(ThreadCpu.GC)).isCloseTo(500, within(1e-9));
		assertThat(pooled.threadCpuNanosPerToken(ThreadCpu.EVENT_LOOPS)).isZero();
		assertThat(pooled.gcMillis()).isEqualTo(42);
		assertThat(pooled.tokensPerSecond()).isCloseTo(2_500, within(1e-9));
		assertThat(pooled.ttftP99Ms()).isCloseTo(99.01, within(1e-9));
		assertThat(pooled.ttftSamples()).isEqualTo(100);
	}

	private static long[] gc(long nanos) {
		long[] byThread = new long[ThreadCpu.values().length];
		byThread[ThreadCpu.GC.ordinal()] = nanos;
		return byThread;
	}

	@Test
	void aThreadsTicksAreReadAfterItsNameEvenWhenTheNameHoldsSpacesAndParentheses() {
		String stat = "4242 (G1 Refine (x) 0) S 1 4242 4242 0 -1 4194560 17383 0 0 0 6 21 57221 3477 20 0 1 0 1003799";

		assertThat(ThreadCpu.userPlusSystemTicks(stat)).isEqualTo(27);
	}

	@Test
	void threadsAreGroupedByTheNamesHotSpotReactorAndTheRigGiveThem() {
		assertThat(ThreadCpu.of("reactor-http-nio-2")).isEqualTo(ThreadCpu.EVENT_LOOPS);
		assertThat(ThreadCpu.of("parallel-1")).isEqualTo(ThreadCpu.TIMERS);
		assertThat(ThreadCpu.of("rig-ramp")).isEqualTo(ThreadCpu.RIG);
		assertThat(ThreadCpu.of("C2 CompilerThre")).isEqualTo(ThreadCpu.JIT);
		assertThat(ThreadCpu.of("G1 Refine#0")).isEqualTo(ThreadCpu.REFINEMENT);
		assertThat(ThreadCpu.of("GC Thread#1")).isEqualTo(ThreadCpu.GC);
		assertThat(ThreadCpu.of("G1 Conc#0")).isEqualTo(ThreadCpu.GC);
		assertThat(ThreadCpu.of("Signal Dispatch")).isEqualTo(ThreadCpu.OTHER);
	}

	@Test
	void onLinuxTheRigsOwnThreadsAreCounted() {
		long[] before = ThreadCpu.snapshot();
		assertThat(before).hasSize(ThreadCpu.values().length);
		if (java.nio.file.Files.isDirectory(java.nio.file.Path.of("/proc/self/task"))) {
			// the JIT has compiled something by now in any JVM that ran this far
			assertThat(before[ThreadCpu.JIT.ordinal()] + before[ThreadCpu.OTHER.ordinal()]).isPositive();
		}
	}
}
