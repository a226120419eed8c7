package dev.aiguard.budget;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.regex.Pattern;

import org.jspecify.annotations.Nullable;

/**
 * What tokens cost, per model: an input (prompt) and an output (completion) price per million
 * tokens, in one currency. The library knows no prices; the table holds what you configure.
 * Immutable, copy-on-write.
 *
 * <pre>{@code
 * PriceTable prices = PriceTable.in("USD")
 *     .model("gpt-4o-mini", new BigDecimal("0.15"), new BigDecimal("0.60"))
 *     .model("gpt-4o", new BigDecimal("2.50"), new BigDecimal("10.00"));
 * BigDecimal cost = prices.cost("gpt-4o-mini-2024-07-18", 1200, 300);   // 0.00036
 * }</pre>
 *
 * <p>A model is priced by its own entry, else by the longest entry its name starts with (so
 * {@code gpt-4o-mini} prices {@code gpt-4o-mini-2024-07-18}), else by the {@link #otherwise}
 * price; without one it costs nothing. A cost is rounded up to whole nano-units (1e-9) of the
 * currency.
 */
public final class PriceTable {

	private static final Pattern CURRENCY = Pattern.compile("[A-Za-z0-9._-]{1,16}");
	private static final PriceTable NONE = new PriceTable("USD", Map.of(), null);
	private static final BigInteger MILLION = BigInteger.valueOf(1_000_000L);

	/** A model's prices in nano-units of the currency per million tokens. */
	record Price(long inputNanosPerMillion, long outputNanosPerMillion) {
	}

	private final String currency;
	/** Longest prefix first. */
	private final Map<String, Price> models;
	@Nullable
	private final Price otherwise;

	private PriceTable(String currency, Map<String, Price> models, @Nullable Price otherwise) {
		this.currency = currency;
		this.models = models;
		this.otherwise = otherwise;
	}

	/** @return an empty table: every model costs nothing */
	public static PriceTable none() {
		return NONE;
	}

	/**
	 * @param currency the unit prices and costs are in: 1–16 letters, digits, {@code . _ -} ({@code USD}, {@code EUR}, {@code credits})
	 * @return an empty table in that currency
	 */
	public static PriceTable in(String currency) {
		Objects.requireNonNull(currency, "currency");
		if (!CURRENCY.matcher(currency).matches()) {
			throw new IllegalArgumentException("currency must be 1-16 letters, digits, '.', '_' or '-', was '"
					+ currency + "'");
		}
		return new PriceTable(currency, Map.of(), null);
	}

	/**
	 * @param model the model name, or the start of the names it prices
	 * @param inputPerMillion the price of a million prompt tokens, {@code >= 0}
	 * @param outputPerMillion the price of a million completion tokens, {@code >= 0}
	 * @return this table with the model's prices (replacing earlier ones of the same name)
	 */
	public PriceTable model(String model, BigDecimal inputPerMillion, BigDecimal outputPerMillion) {
		Objects.requireNonNull(model, "model");
		if (model.isBlank()) {
			throw new IllegalArgumentException("prices.model must not be blank, was '" + model + "'");
		}
		Price price = price("prices." + model, inputPerMillion, outputPerMillion);
		List<Map.Entry<String, Price>> entries = new ArrayList<>(models.entrySet());
		entries.removeIf(e -> e.getKey().equals(model));
		entries.add(Map.entry(model, price));
		entries.sort(Comparator.comparingInt((Map.Entry<String, Price> e) -> e.getKey().length()).reversed());
		Map<String, Price> sorted = new LinkedHashMap<>();
		entries.forEach(e -> sorted.put(e.getKey(), e.getValue()));
		return new PriceTable(currency, Collections.unmodifiableMap(sorted), otherwise);
	}

	/** @return this table pricing every model it does not name at these prices */
	public PriceTable otherwise(BigDecimal inputPerMillion, BigDecimal outputPerMillion) {
		return new PriceTable(currency, models, price("prices.otherwise", inputPerMillion, outputPerMillion));
	}

	private static Price price(String field, BigDecimal input, BigDecimal output) {
		Objects.requireNonNull(input, field + ".input");
		Objects.requireNonNull(output, field + ".output");
		if (input.signum() < 0) {
			throw new IllegalArgumentException(field + ".input must be >= 0, was " + input.toPlainString());
		}
		if (output.signum() < 0) {
			throw new IllegalArgumentException(field + ".output must be >= 0, was " + output.toPlainString());
		}
		return new Price(Money.nanos(field + ".input", input), Money.nanos(field + ".output", output));
	}

	/** @return the currency of prices and costs */
	public String currency() {
		return currency;
	}

	/** @return whether the table prices anything */
	public boolean isEmpty() {
		return models.isEmpty() && otherwise == null;
	}

	/** @return the price that applies to {@code model}, or {@code null} */
	@Nullable
	Price priceOf(@Nullable String model) {
		if (model != null) {
			Price exact = models.get(model);
			if (exact != null) {
				return exact;
			}
			for (Map.Entry<String, Price> e : models.entrySet()) {
				if (model.startsWith(e.getKey())) {
					return e.getValue();
				}
			}
		}
		return otherwise;
	}

	/** @return the cost of the tokens in nano-units of the currency, rounded up */
	long costNanos(@Nullable String model, long promptTokens, long completionTokens) {
		Price p = priceOf(model);
		if (p == null) {
			return 0L;
		}
		return perMillion(Math.max(0L, promptTokens), p.inputNanosPerMillion())
				+ perMillion(Math.max(0L, completionTokens), p.outputNanosPerMillion());
	}

	private static long perMillion(long tokens, long nanosPerMillion) {
		long high = Math.multiplyHigh(tokens, nanosPerMillion);
		if (high == 0L && tokens * nanosPerMillion >= 0L) {
			long product = tokens * nanosPerMillion;
			return product / 1_000_000L + (product % 1_000_000L == 0L ? 0L : 1L);
		}
		BigInteger[] qr = BigInteger.valueOf(tokens).multiply(BigInteger.valueOf(nanosPerMillion)).divideAndRemainder(MILLION);
		BigInteger q = qr[1].signum() == 0 ? qr[0] : qr[0].add(BigInteger.ONE);
		return q.bitLength() < 63 ? q.longValue() : Long.MAX_VALUE;
	}

	/**
	 * @return the cost of {@code promptTokens} and {@code completionTokens} of {@code model}, in
	 *         {@link #currency()}, rounded up to nano-units
	 */
	public BigDecimal cost(@Nullable String model, long promptTokens, long completionTokens) {
		return Money.amount(costNanos(model, promptTokens, completionTokens));
	}

	@Override
	public boolean equals(Object o) {
		return o instanceof PriceTable t && t.currency.equals(currency) && t.models.equals(models)
				&& Objects.equals(t.otherwise, otherwise);
	}

	@Override
	public int hashCode() {
		return Objects.hash(currency, models, otherwise);
	}

	@Override
	public String toString() {
		StringBuilder b = new StringBuilder("PriceTable(").append(currency);
		models.forEach((m, p) -> b.append(", ").append(m).append('=').append(Money.text(p.inputNanosPerMillion()))
				.append('/').append(Money.text(p.outputNanosPerMillion())));
		if (otherwise != null) {
			b.append(", otherwise=").append(Money.text(otherwise.inputNanosPerMillion())).append('/')
					.append(Money.text(otherwise.outputNanosPerMillion()));
		}
		return b.append(" per 1M tokens)").toString();
	}
}
