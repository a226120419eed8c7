package dev.aiguard.boot.autoconfigure.properties;

import java.time.Duration;

import org.jspecify.annotations.Nullable;

/**
 * The costs the expected-loss trip policy weighs, {@code aiguard.breakers.<name>.expected-loss}:
 * the breaker trips while failure rate × the cost of a failed attempt reaches the cost of an answer
 * from the fallback ladder's next step. All costs in one unit (the price table's currency, say); an
 * unset cost takes {@code ExpectedLossPolicy}'s default.
 *
 * <pre>
 * expected-loss: { unavailable-cost: 0.003, prompt-tokens: 2000, prompt-price-per-million: 2.50,
 *                  wait-price-per-second: 0.0005, failure-wait: 8s, failed-answer-cost: 0.003 }
 * </pre>
 */
public class ExpectedLossProperties {

	/** What an answer from the fallback ladder's next step costs (a cheaper model's price, a cache hit's nothing, a static answer's cost); required by the expected-loss trip policy. */
	@Nullable
	private Double unavailableCost;

	/** The prompt tokens of a typical attempt, paid again when it fails. Default: 1000. */
	@Nullable
	private Integer promptTokens;

	/** What a million prompt tokens of the guarded model cost (its input price in the budget's price table). Default: 0. */
	@Nullable
	private Double promptPricePerMillion;

	/** What a second of the user's wait for a first token costs. Default: 0. */
	@Nullable
	private Double waitPricePerSecond;

	/** How much longer a failed attempt makes the user wait for a first token. Default: 10s. */
	@Nullable
	private Duration failureWait;

	/** What a failed answer costs beyond its tokens and wait. Default: 1. */
	@Nullable
	private Double failedAnswerCost;

	public @Nullable Double getUnavailableCost() {
		return unavailableCost;
	}

	public void setUnavailableCost(@Nullable Double unavailableCost) {
		this.unavailableCost = unavailableCost;
	}

	public @Nullable Integer getPromptTokens() {
		return promptTokens;
	}

	public void setPromptTokens(@Nullable Integer promptTokens) {
		this.promptTokens = promptTokens;
	}

	public @Nullable Double getPromptPricePerMillion() {
		return promptPricePerMillion;
	}

	public void setPromptPricePerMillion(@Nullable Double promptPricePerMillion) {
		this.promptPricePerMillion = promptPricePerMillion;
	}

	public @Nullable Double getWaitPricePerSecond() {
		return waitPricePerSecond;
	}

	public void setWaitPricePerSecond(@Nullable Double waitPricePerSecond) {
		this.waitPricePerSecond = waitPricePerSecond;
	}

	public @Nullable Duration getFailureWait() {
		return failureWait;
	}

	public void setFailureWait(@Nullable Duration failureWait) {
		this.failureWait = failureWait;
	}

	public @Nullable Double getFailedAnswerCost() {
		return failedAnswerCost;
	}

	public void setFailedAnswerCost(@Nullable Double failedAnswerCost) {
		this.failedAnswerCost = failedAnswerCost;
	}
}
