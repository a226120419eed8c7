package dev.aiguard.budget;

import java.math.BigDecimal;
import java.math.RoundingMode;

/** Money as whole nano-units of a currency (1e-9), the unit of the cost buckets. */
final class Money {

	static final int SCALE = 9;
	/** The largest amount accepted, so that nano-units and their sums stay inside a long. */
	static final BigDecimal MAX = new BigDecimal("9000000000");

	private Money() {
	}

	/** @return {@code amount} in nano-units; refuses more than 9 decimals or more than {@link #MAX} */
	static long nanos(String field, BigDecimal amount) {
		if (amount.compareTo(MAX) > 0) {
			throw new IllegalArgumentException(field + " must be at most " + MAX.toPlainString() + ", was "
					+ amount.toPlainString());
		}
		try {
			return amount.setScale(SCALE, RoundingMode.UNNECESSARY).unscaledValue().longValueExact();
		}
		catch (ArithmeticException tooPrecise) {
			throw new IllegalArgumentException(field + " must have at most " + SCALE + " decimals, was "
					+ amount.toPlainString());
		}
	}

	/** @return nano-units as plain text without trailing zeros ({@code 0.15}) */
	static String text(long nanos) {
		return BigDecimal.valueOf(nanos, SCALE).stripTrailingZeros().toPlainString();
	}

	/** @return nano-units as an amount */
	static BigDecimal amount(long nanos) {
		return BigDecimal.valueOf(nanos, SCALE);
	}
}
