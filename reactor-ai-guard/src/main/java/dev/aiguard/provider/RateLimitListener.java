package dev.aiguard.provider;

/**
 * Hears the rate-limit headers of every response a provider client receives ({@code 200} and
 * errors alike), so a caller can keep its own view of the provider's limits in step with the
 * provider's. The library's clients ({@link OpenAiCompatibleClient}, {@link AnthropicClient}) look
 * for one in the subscriber's Reactor {@code Context} under {@link #CONTEXT_KEY}; a guard whose
 * policy limits a provider key puts its own there for each attempt.
 *
 * <pre>{@code
 * client.stream(request)
 *     .contextWrite(ctx -> ctx.put(RateLimitListener.CONTEXT_KEY,
 *         (RateLimitListener) limits -> log.debug("{} requests left", limits.remainingRequests())));
 * }</pre>
 *
 * <p>Called on the client's I/O thread when the response headers arrive: it must not block. What it
 * throws goes to {@code Hooks.onErrorDropped}; the response is read on.
 */
@FunctionalInterface
public interface RateLimitListener {

	/** The Reactor {@code Context} key a client reads its listener from. */
	Object CONTEXT_KEY = RateLimitListener.class.getName();

	/** @param limits what the response's headers said ({@link RateLimits#UNKNOWN} is never passed) */
	void onRateLimits(RateLimits limits);
}
