/**
 * A stream-aware circuit breaker: {@link dev.aiguard.breaker.CircuitBreaker} judges a token stream by
 * its outcome and its time to first token, never by its total duration, and never counts a client
 * disconnect. Configured with {@link dev.aiguard.breaker.BreakerConfig}, tripped by a pluggable
 * {@link dev.aiguard.breaker.TripPolicy}, shared by name through
 * {@link dev.aiguard.breaker.BreakerRegistry}. The state machine uses no Reactor types; the guard
 * operator adapts it.
 *
 * <pre>{@code
 * BreakerRegistry breakers = BreakerRegistry.builder().defaultConfig(BreakerConfig.defaults()).build();
 * CircuitBreaker breaker = breakers.breaker("openai");
 * }</pre>
 */
@NullMarked
package dev.aiguard.breaker;

import org.jspecify.annotations.NullMarked;
