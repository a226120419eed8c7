package dev.aiguard.budget;

import java.math.BigDecimal;
import java.util.Objects;

import org.jspecify.annotations.Nullable;

/**
 * What one tenant may spend: requests per minute, tokens per minute (prompt and completion
 * together, as the provider counts them) and money per day. Immutable, copy-on-write; a limit
 * left unset does not apply.
 *
 * <pre>{@code
 * TenantLimits standard = TenantLimits.unlimited()
 *     .requestsPerMinute(60)
 *     .tokensPerMinute(40_000)
 *     .costPerDay(new BigDecimal("5.00"));         // in the price table's currency
 * }</pre>
 *
 * <p>Requests per minute and tokens per minute refill continuously (a minute's allowance spread
 * evenly over the minute); money per day refills continuously over the day.
 */
public final class TenantLimits {

	private static final TenantLimits UNLIMITED = new TenantLimits(0, 0, null);

	private final long requestsPerMinute;
	private final long tokensPerMinute;
	@Nullable
	private final BigDecimal costPerDay;

	private TenantLimits(long requestsPerMinute, long tokensPerMinute, @Nullable BigDecimal costPerDay) {
		this.requestsPerMinute = requestsPerMinute;
		this.tokensPerMinute = tokensPerMinute;
		this.costPerDay = costPerDay;
	}

	/** @return no limit at all */
	public static TenantLimits unlimited() {
		return UNLIMITED;
	}

	/** @param requests {@code > 0} */
	public TenantLimits requestsPerMinute(long requests) {
		return new TenantLimits(positive("requestsPerMinute", requests), tokensPerMinute, costPerDay);
	}

	/** @param tokens {@code > 0}, prompt and completion tokens together */
	public TenantLimits tokensPerMinute(long tokens) {
		return new TenantLimits(requestsPerMinute, positive("tokensPerMinute", tokens), costPerDay);
	}

	/**
	 * @param amount {@code > 0}, in the price table's currency, at most 9 decimals and at most
	 *        {@code 9 000 000 000}
	 */
	public TenantLimits costPerDay(BigDecimal amount) {
		Objects.requireNonNull(amount, "costPerDay");
		if (amount.signum() <= 0) {
			throw new IllegalArgumentException("costPerDay must be > 0, was " + amount.toPlainString());
		}
		Money.nanos("costPerDay", amount);
		return new TenantLimits(requestsPerMinute, tokensPerMinute, amount);
	}

	/** @return requests per minute, {@code 0} when unlimited */
	public long requestsPerMinute() {
		return requestsPerMinute;
	}

	/** @return tokens per minute, {@code 0} when unlimited */
	public long tokensPerMinute() {
		return tokensPerMinute;
	}

	/** @return money per day, or {@code null} when unlimited */
	@Nullable
	public BigDecimal costPerDay() {
		return costPerDay;
	}

	/** @return whether any limit is set */
	public boolean limited() {
		return requestsPerMinute > 0 || tokensPerMinute > 0 || costPerDay != null;
	}

	static long positive(String field, long value) {
		if (value <= 0) {
			throw new IllegalArgumentException(field + " must be > 0, was " + value);
		}
		return value;
	}

	@Override
	public boolean equals(Object o) {
		return o instanceof TenantLimits t && t.requestsPerMinute == requestsPerMinute
				&& t.tokensPerMinute == tokensPerMinute && Objects.equals(t.costPerDay, costPerDay);
	}

	@Override
	public int hashCode() {
		return Objects.hash(requestsPerMinute, tokensPerMinute, costPerDay);
	}

	@Override
	public String toString() {
		if (!limited()) {
			return "unlimited";
		}
		StringBuilder b = new StringBuilder();
		if (requestsPerMinute > 0) {
			b.append(requestsPerMinute).append(" requests/min");
		}
		if (tokensPerMinute > 0) {
			b.append(b.length() > 0 ? ", " : "").append(tokensPerMinute).append(" tokens/min");
		}
		if (costPerDay != null) {
			b.append(b.length() > 0 ? ", " : "").append(costPerDay.toPlainString()).append("/day");
		}
		return b.toString();
	}
}
