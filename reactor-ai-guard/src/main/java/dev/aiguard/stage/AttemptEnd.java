package dev.aiguard.stage;

import dev.aiguard.core.Outcome;
import org.jspecify.annotations.Nullable;

/** How one realtime attempt ended, as the stages that let it through read it. */
public interface AttemptEnd {

	/** @return false when a later stage refused the attempt and nothing was sent */
	boolean sent();

	Outcome outcome();

	@Nullable
	Throwable error();

	/** @return nanoseconds to the first content chunk, or -1 when none arrived */
	long timeToFirstTokenNanos();

	/** @return the content chunks the attempt received */
	long contentChunks();

	/** @return whether the output cap ended the attempt */
	boolean capped();

	/** @return the prompt tokens the provider reported in a usage chunk, or -1 */
	int reportedPromptTokens();

	/** @return the completion tokens the provider reported in a usage chunk, or -1 */
	int reportedCompletionTokens();

	/** @return the sent prompt's tokens estimated from its characters, 0 without a request */
	int estimatedPromptTokens();

	/** @return the end of an attempt a later stage refused before it was sent */
	static AttemptEnd notSent() {
		return NotSent.INSTANCE;
	}

	/** An attempt that never reached the upstream: nothing received, nothing reported. */
	enum NotSent implements AttemptEnd {
		INSTANCE;

		@Override
		public boolean sent() {
			return false;
		}

		@Override
		public Outcome outcome() {
			return Outcome.REJECTED;
		}

		@Override
		@Nullable
		public Throwable error() {
			return null;
		}

		@Override
		public long timeToFirstTokenNanos() {
			return -1L;
		}

		@Override
		public long contentChunks() {
			return 0L;
		}

		@Override
		public boolean capped() {
			return false;
		}

		@Override
		public int reportedPromptTokens() {
			return -1;
		}

		@Override
		public int reportedCompletionTokens() {
			return -1;
		}

		@Override
		public int estimatedPromptTokens() {
			return 0;
		}
	}
}
