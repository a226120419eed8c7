package dev.aiguard.core;

/**
 * How one attempt of a guarded stream ended. Exactly one outcome is recorded per attempt.
 *
 * <table>
 * <caption>What the breaker makes of each outcome</caption>
 * <tr><th>outcome</th><th>when</th><th>breaker</th></tr>
 * <tr><td>SUCCESS</td><td>terminal marker seen, completed</td><td>success (slow if time to first token is slow)</td></tr>
 * <tr><td>FAILURE</td><td>transport error, 5xx, in-band error, 429</td><td>failure</td></tr>
 * <tr><td>STALLED</td><td>a first-token, idle or max-duration deadline passed</td><td>failure</td></tr>
 * <tr><td>INCOMPLETE</td><td>completed without a terminal marker</td><td>failure</td></tr>
 * <tr><td>INVALID</td><td>an output validator rejected the answer (empty, filtered, looping, not matching its schema)</td><td>failure</td></tr>
 * <tr><td>CLIENT_ERROR</td><td>400/401/403/404, context length exceeded</td><td>ignored by default</td></tr>
 * <tr><td>CANCELLED</td><td>the subscriber cancelled</td><td>ignored, permission released</td></tr>
 * <tr><td>REJECTED</td><td>breaker open, admission refused, preempted</td><td>not a call</td></tr>
 * </table>
 */
public enum Outcome {
	SUCCESS,
	FAILURE,
	STALLED,
	INCOMPLETE,
	/** An output validator rejected what the upstream answered, at its end or while it streamed. */
	INVALID,
	CLIENT_ERROR,
	CANCELLED,
	REJECTED;

	/** @return whether the upstream is to blame (a failure for the breaker's purposes). */
	public boolean isUpstreamFault() {
		return this == FAILURE || this == STALLED || this == INCOMPLETE || this == INVALID;
	}
}
