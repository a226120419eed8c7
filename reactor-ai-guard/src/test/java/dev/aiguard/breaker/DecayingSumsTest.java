package dev.aiguard.breaker;

import java.util.SplittableRandom;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.offset;

/** The decayed sums' own power of two, and the sums built on it. */
class DecayingSumsTest {

	@Test
	void exp2MatchesMathPowToAFewUlpsOverTheWholeRange() {
		SplittableRandom random = new SplittableRandom(7);
		for (int i = 0; i < 200_000; i++) {
			double x = random.nextDouble(-512, 512);
			double expected = Math.pow(2, x);
			assertThat(DecayingSums.exp2(x)).as("2^%s", x).isCloseTo(expected, offset(Math.ulp(expected) * 4));
		}
	}

	@Test
	void exp2IsExactAtWholeAndTableSteps() {
		for (int k = -512; k <= 512; k++) {
			assertThat(DecayingSums.exp2(k)).isEqualTo(Math.scalb(1.0, k));
		}
		assertThat(DecayingSums.exp2(0.5)).isCloseTo(Math.sqrt(2), offset(Math.ulp(Math.sqrt(2))));
		assertThat(DecayingSums.exp2(-0.5)).isCloseTo(1 / Math.sqrt(2), offset(Math.ulp(1.0)));
	}

	@Test
	void anEventOneHalfLifeOlderWeighsHalf() {
		long halfLife = 10_000_000_000L;
		DecayingSums sums = new DecayingSums(halfLife);
		sums.add(0, 1, 1);
		sums.add(halfLife, 0, 1);

		// first: 1 (at t=0) decayed to t=halfLife; second: that plus a fresh 1
		assertThat(sums.first(halfLife)).isCloseTo(0.5, offset(1e-12));
		assertThat(sums.second(halfLife)).isCloseTo(1.5, offset(1e-12));
		assertThat(sums.ratio(-1)).isCloseTo(1.0 / 3, offset(1e-12));
	}
}
