package dev.aiguard.benchmarks;

import java.util.List;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class RigReportTest {

	/** A result with the fields the report reads; one second of window. */
	private static VariantResult result(String variant, int k, long failed, long peakOpen, long tokens, long cpuNanos,
			long heapBytes, double p99) {
		return new VariantResult(variant, k, 100, failed, peakOpen, k, tokens, cpuNanos, tokens * 1000, 7,
				1_000_000_000L, heapBytes, p99 / 2, p99, 50, tokens * 2_000, byThread(tokens));
	}

	private static List<VariantResult> run() {
		return List.of(
				result(RigReport.UNGUARDED, 1000, 0, 1000, 10_000, 100_000_000, 8_000_000, 10.0),
				result(RigReport.GUARDED, 1000, 0, 1000, 10_000, 103_000_000, 9_500_000, 10.5),
				result(RigReport.ALTERNATIVE, 1000, 0, 1000, 10_000, 130_000_000, 9_000_000, 12.0),
				result(RigReport.UNGUARDED, 5000, 0, 5000, 40_000, 400_000_000, 40_000_000, 20.0),
				result(RigReport.GUARDED, 5000, 0, 5000, 40_000, 440_000_000, 50_000_000, 20.25),
				result(RigReport.ALTERNATIVE, 5000, 0, 5000, 40_000, 660_000_000, 45_000_000, 25.0));
	}

	@Test
	void theGoalLinesCompareTheVariantsAtTheLargestConcurrency() {
		List<String> lines = RigReport.lines(run());

		assertThat(lines).startsWith(
				"cpu-per-token-ratio=1.100",
				"alternative-cpu-per-token-ratio=1.500",
				"heap-per-stream-bytes=2000",
				"ttft-p99-added-ms=0.25",
				"ttft-p50-added-ms=0.13",
				"streams-held=5000");
	}

	@Test
	void aPairedPassGivesTheFirstTokenLinesOfItsConcurrency() {
		LatencyHistogram unguarded = new LatencyHistogram();
		LatencyHistogram guarded = new LatencyHistogram();
		for (int i = 1; i <= 100; i++) {
			unguarded.record(i * 1_000_000L);
			guarded.record(i * 1_000_000L + 300_000L);
		}

		List<String> lines = RigReport.lines(run(), List.of(new PairedTtft(5000, unguarded, guarded)));

		// both halves at once: +0.3 ms at every percentile; the separate passes' figure is kept beside it
		assertThat(lines).startsWith(
				"cpu-per-token-ratio=1.100",
				"alternative-cpu-per-token-ratio=1.500",
				"heap-per-stream-bytes=2000",
				"ttft-p99-added-ms=0.30",
				"ttft-p50-added-ms=0.30",
				"ttft-p99-added-ms-separate-passes=0.25",
				"streams-held=5000");
		// a K without a paired pass keeps the separate passes' lines
		assertThat(lines).contains("ttft-p99-added-ms.k1000=0.50").doesNotContain("ttft-p99-added-ms-separate-passes.k1000=0.50");
	}

	@Test
	void eachConcurrencyGetsItsOwnLines() {
		assertThat(RigReport.lines(run())).contains(
				"cpu-per-token-ratio.k1000=1.030",
				"alternative-cpu-per-token-ratio.k1000=1.262",
				"heap-per-stream-bytes.k1000=1500",
				"ttft-p99-added-ms.k1000=0.50",
				"cpu-per-token-ratio.k5000=1.100");
	}

	@Test
	void aConcurrencyWithAFailedStreamOrFewerOpenStreamsIsNotHeld() {
		List<VariantResult> failedAtTheTop = List.of(
				result(RigReport.GUARDED, 1000, 0, 1000, 1, 1, 1, 1),
				result(RigReport.UNGUARDED, 5000, 0, 5000, 1, 1, 1, 1),
				result(RigReport.GUARDED, 5000, 0, 5000, 1, 1, 1, 1),
				result(RigReport.ALTERNATIVE, 5000, 3, 5000, 1, 1, 1, 1));
		List<VariantResult> notAllOpen = List.of(
				result(RigReport.GUARDED, 1000, 0, 1000, 1, 1, 1, 1),
				result(RigReport.GUARDED, 5000, 0, 4999, 1, 1, 1, 1));

		assertThat(RigReport.streamsHeld(failedAtTheTop)).isEqualTo(1000);
		assertThat(RigReport.lines(failedAtTheTop)).first()
			.isEqualTo("# warning: alternative at K=5000 had 3 streams that did not complete: its figures are not comparable");
		assertThat(RigReport.streamsHeld(notAllOpen)).isEqualTo(1000);
		assertThat(RigReport.streamsHeld(List.of())).isZero();
	}

	@Test
	void aMissingVariantLeavesItsLinesOut() {
		List<String> lines = RigReport.lines(List.of(result(RigReport.GUARDED, 1000, 0, 1000, 10, 10, 10, 1)));

		assertThat(lines).containsExactly("streams-held=1000");
	}

	@Test
	void theTableHasOneRowPerResultWithPerTokenFigures() {
		String table = RigReport.table(run());

		assertThat(table.lines()).hasSize(2 + 6);
		// 103 ms of CPU over 10 000 tokens: 10.30 µs per token; 1000 B per token; 9500 B per stream;
		// the server's 2000 ns per token
		assertThat(table.lines().skip(3).findFirst().orElseThrow())
			.isEqualTo("| 1000 | guarded | 100 | 0 | 1000 | 10000 | 0.10 | 10.30 | 1000 | 9500 | 5.25 | 10.50 | 7 | 2.00 |");
	}

	/** 300 ns per token on the event loops, 100 in G1 refinement, nothing elsewhere. */
	private static long[] byThread(long tokens) {
		long[] nanos = new long[ThreadCpu.values().length];
		nanos[ThreadCpu.EVENT_LOOPS.ordinal()] = tokens * 300;
		nanos[ThreadCpu.REFINEMENT.ordinal()] = tokens * 100;
		return nanos;
	}

	@Test
	void theThreadTableSplitsEachRowsCpuPerTokenByThreadGroup() {
		String table = RigReport.threadTable(run());

		assertThat(table.lines()).hasSize(2 + 6);
		assertThat(table.lines().findFirst().orElseThrow()).isEqualTo("| K | variant | all threads | event loops "
				+ "| parallel (timers) | rig (subscribing) | JIT | GC | G1 refinement | other |");
		assertThat(table.lines().skip(3).findFirst().orElseThrow())
			.isEqualTo("| 1000 | guarded | 10.30 | 0.30 | 0.00 | 0.00 | 0.00 | 0.00 | 0.10 | 0.00 |");
	}

	@Test
	void ratiosAndFiguresWithoutADenominatorSayNotAvailable() {
		assertThat(RigReport.ratio(1, 0)).isNaN();
		assertThat(RigReport.ratio(Double.NaN, 1)).isNaN();
		assertThat(RigReport.format(Double.NaN, 2)).isEqualTo("n/a");
		assertThat(RigReport.format(1.0 / 3, 3)).isEqualTo("0.333");
	}
}
