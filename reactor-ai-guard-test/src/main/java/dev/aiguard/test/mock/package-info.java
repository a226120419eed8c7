/**
 * A model server on loopback, OpenAI-compatible ({@code baseUrl()}) and Anthropic-compatible
 * ({@code anthropicBaseUrl()}, the same answers and faults), that misbehaves on request and remembers what it
 * was sent, for tests and demos: {@link dev.aiguard.test.mock.MockModelServer} (streamed and whole
 * answers, {@code GET /v1/models}, OpenAI's error objects), its
 * {@link dev.aiguard.test.mock.FaultProfile} (pace, stalls, drops, error statuses and bodies,
 * in-band errors, context limit, rate-limit headers, a provider rate limit with live headers and 429s), the
 * {@link dev.aiguard.test.mock.CapturedRequest}s it keeps, and the deterministic
 * {@link dev.aiguard.test.mock.MockAnswers}. A guide with examples is {@code docs/testing.md}.
 *
 * <pre>{@code
 * try (MockModelServer mock = MockModelServer.builder().start()) {
 *     FaultProfile base = mock.faults();
 *     mock.faults(base.withStallAfter(5));                                  // answers stop after 5 tokens
 *     mock.enqueue(base.withErrors(1, 429, 1), base.withErrors(1, 500, 0)); // but first a 429, then a 500
 *     // ... run the code under test against mock.baseUrl()
 *     assertThat(mock.lastRequest().header("authorization")).startsWith("Bearer ");
 * }
 * }</pre>
 */
@NullMarked
package dev.aiguard.test.mock;

import org.jspecify.annotations.NullMarked;
