package dev.aiguard.benchmarks;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class ClassHistogramTest {

	private static final String BEFORE = """
			12345:
			 num     #instances         #bytes  class name (module)
			-------------------------------------------------------
			   1:          1000         100000  [Ljava.lang.Object; (java.base@17.0.15)
			   2:            10            400  dev.aiguard.GuardedStream
			Total          1010         100400
			""";

	private static final String AFTER = """
			 num     #instances         #bytes  class name (module)
			   1:          1100         160000  [Ljava.lang.Object; (java.base@17.0.15)
			   2:           110           4400  dev.aiguard.GuardedStream
			   3:           100           3200  dev.aiguard.stall.watch.StallWatch
			Total          1310         167600
			""";

	@Test
	void readsTheRowsOfAJcmdListing() {
		ClassHistogram h = ClassHistogram.parse(BEFORE);

		assertThat(h.classes()).containsOnlyKeys("[Ljava.lang.Object;", "dev.aiguard.GuardedStream");
		assertThat(h.classes().get("dev.aiguard.GuardedStream")).containsExactly(10, 400);
	}

	@Test
	void growthIsPerStreamLargestFirst() {
		assertThat(ClassHistogram.parse(AFTER).growthSince(ClassHistogram.parse(BEFORE), 100, 2)).containsExactly(
				"   600.0 B   1.00 x [Ljava.lang.Object;",
				"    40.0 B   1.00 x dev.aiguard.GuardedStream");
	}
}
