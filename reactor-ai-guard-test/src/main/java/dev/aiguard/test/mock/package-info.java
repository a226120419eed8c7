/**
 * A streaming model server that misbehaves on request, for demos and tests:
 * {@link dev.aiguard.test.mock.MockModelServer}, its {@link dev.aiguard.test.mock.FaultProfile}
 * and the deterministic {@link dev.aiguard.test.mock.MockAnswers}. It speaks OpenAI's chat
 * completions ({@code baseUrl()}) and Anthropic's Messages API ({@code anthropicBaseUrl()}), with
 * the same answers and faults on both.
 *
 * <pre>{@code
 * mock.faults(mock.faults().withStallAfter(5));    // the next answers stop after 5 tokens
 * }</pre>
 */
package dev.aiguard.test.mock;
