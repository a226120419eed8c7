package dev.aiguard.test.mock;

/**
 * How the mock model behaves when it serves more concurrent requests than it can take: past
 * {@code capacity}, each new request waits longer for its first token and is more likely to be
 * refused, in proportion to the excess. Immutable; a bad value fails with an
 * {@link IllegalArgumentException} naming the field and the value.
 *
 * <pre>{@code
 * // up to 4 concurrent requests as usual; at 8 (one capacity over) the first token takes 3x as
 * // long and half of the new requests get 529 with Retry-After: 1
 * mock.faults(mock.faults().withLoadPressure(LoadPressure.of(4)));
 * mock.faults(mock.faults().withLoadPressure(LoadPressure.of(4).slowdown(1).errors(0.2, 0.5, 500, 0)));
 * }</pre>
 *
 * With {@code n} requests in progress when a request's body has arrived (that request included),
 * {@code excess = max(0, n / capacity - 1)}. The request's first token comes after
 * {@code firstTokenDelayMs * (1 + slowdown * excess)} (at most 120 s), and it is refused with
 * {@code errorStatus} with probability {@code min(maxErrorRate, errorSlope * excess)}.
 *
 * @param capacity concurrent requests served without any change, at least 1
 * @param slowdown how much the first-token delay grows per capacity's worth of excess, 0 to 1000
 * @param errorSlope how much the refusal probability grows per capacity's worth of excess, 0 to 1000
 * @param maxErrorRate the highest refusal probability, 0 to 1
 * @param errorStatus the status of a refusal: 500 or 529
 * @param retryAfterSeconds the {@code Retry-After} sent with a refusal, 0 to 3600 (0: no header)
 */
public record LoadPressure(int capacity, double slowdown, double errorSlope, double maxErrorRate, int errorStatus,
		int retryAfterSeconds) {

	public LoadPressure {
		if (capacity < 1) {
			throw new IllegalArgumentException("capacity must be at least 1, was " + capacity);
		}
		between("slowdown", slowdown, 1000);
		between("errorSlope", errorSlope, 1000);
		between("maxErrorRate", maxErrorRate, 1);
		if (errorStatus != 500 && errorStatus != 529) {
			throw new IllegalArgumentException("errorStatus must be 500 or 529, was " + errorStatus);
		}
		if (retryAfterSeconds < 0 || retryAfterSeconds > 3_600) {
			throw new IllegalArgumentException("retryAfterSeconds must be between 0 and 3600, was " + retryAfterSeconds);
		}
	}

	/**
	 * @param capacity concurrent requests served without any change, at least 1
	 * @return pressure past {@code capacity}: slowdown 2, error slope 0.5 up to 0.9, refusals 529 with {@code Retry-After: 1}
	 */
	public static LoadPressure of(int capacity) {
		return new LoadPressure(capacity, 2, 0.5, 0.9, 529, 1);
	}

	/** @return a copy whose first-token delay grows by {@code factor} per capacity's worth of excess */
	public LoadPressure slowdown(double factor) {
		return new LoadPressure(capacity, factor, errorSlope, maxErrorRate, errorStatus, retryAfterSeconds);
	}

	/**
	 * @param slope how much the refusal probability grows per capacity's worth of excess (0: never refuse)
	 * @param max the highest refusal probability
	 * @param status 500 or 529
	 * @param retryAfter the {@code Retry-After} in seconds (0: no header)
	 * @return a copy refusing requests this way
	 */
	public LoadPressure errors(double slope, double max, int status, int retryAfter) {
		return new LoadPressure(capacity, slowdown, slope, max, status, retryAfter);
	}

	/** @return how far {@code inProgress} requests are past the capacity, in capacities (0 at or below it) */
	public double excess(long inProgress) {
		return Math.max(0, (double) inProgress / capacity - 1);
	}

	/** @return the first-token delay of a request arriving with {@code inProgress} requests in progress */
	public long firstTokenDelayMs(long baseMs, long inProgress) {
		double scaled = baseMs * (1 + slowdown * excess(inProgress));
		return (long) Math.min(Math.ceil(scaled), FaultProfile.MAX_DELAY_MS);
	}

	/** @return the probability that a request arriving with {@code inProgress} requests in progress is refused */
	public double errorRate(long inProgress) {
		return Math.min(maxErrorRate, errorSlope * excess(inProgress));
	}

	private static void between(String field, double value, double max) {
		if (!(value >= 0 && value <= max)) {
			throw new IllegalArgumentException(field + " must be between 0 and " + max + ", was " + value);
		}
	}
}
