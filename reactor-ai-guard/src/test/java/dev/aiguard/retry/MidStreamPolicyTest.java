package dev.aiguard.retry;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

import dev.aiguard.chat.ChatChunk;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Hooks;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class MidStreamPolicyTest {

	@AfterEach
	void resetHooks() {
		Hooks.resetOnErrorDropped();
	}

	@Test
	void failIsTheDefaultAndMarksTheErrorPartialWithTheTokenCount() {
		MidStreamPolicy<ChatChunk> policy = MidStreamPolicy.fail();
		assertThat(policy.mode()).isEqualTo(MidStreamPolicy.Mode.FAIL);
		assertThat(policy.noticeFor(new IOException())).isNull();
		assertThat(policy.continuation()).isNull();
		assertThat(policy.maxContinuations()).isZero();

		IOException cause = new IOException("connection reset");
		PartialStreamException e = policy.failure(cause, 42);
		assertThat(e.partial()).isTrue();
		assertThat(e.tokensDelivered()).isEqualTo(42);
		assertThat(e).hasCause(cause).hasMessageContaining("42 token(s)").hasMessageContaining("connection reset");
		assertThat(e.retryable()).isFalse();
	}

	@Test
	void anAlreadyPartialErrorIsNotWrappedTwice() {
		PartialStreamException first = new PartialStreamException(new IOException(), 3);
		assertThat(MidStreamPolicy.fail().failure(first, 7)).isSameAs(first);
	}

	@Test
	void noticeEmitsTheConfiguredTextChunk() {
		MidStreamPolicy<ChatChunk> policy = MidStreamPolicy.notice("\n\n[interrupted]");
		assertThat(policy.mode()).isEqualTo(MidStreamPolicy.Mode.NOTICE);
		ChatChunk chunk = policy.noticeFor(new IOException());
		assertThat(chunk).isEqualTo(ChatChunk.token("\n\n[interrupted]"));
		assertThat(chunk.hasContent()).isTrue();
	}

	@Test
	void noticeFactorySeesTheCause() {
		MidStreamPolicy<String> policy = MidStreamPolicy.notice(e -> "[" + e.getMessage() + "]");
		assertThat(policy.noticeFor(new IOException("reset"))).isEqualTo("[reset]");
	}

	@Test
	void aThrowingNoticeFactoryYieldsNoNoticeAndIsDropped() {
		List<Throwable> dropped = new ArrayList<>();
		Hooks.onErrorDropped(dropped::add);
		MidStreamPolicy<String> policy = MidStreamPolicy.notice(e -> {
			throw new IllegalStateException("factory broke");
		});
		assertThat(policy.noticeFor(new IOException())).isNull();
		assertThat(dropped).singleElement().satisfies(e -> assertThat(e).hasMessage("factory broke"));
	}

	@Test
	void continueWithCarriesTheStrategyAndTheLimit() {
		MidStreamPolicy<ChatChunk> policy = MidStreamPolicy.continueWith(ContinuationStrategy.USER_CONTINUE, 2);
		assertThat(policy.mode()).isEqualTo(MidStreamPolicy.Mode.CONTINUE);
		assertThat(policy.continuation()).isSameAs(ContinuationStrategy.USER_CONTINUE);
		assertThat(policy.maxContinuations()).isEqualTo(2);
		assertThat(policy.noticeFor(new IOException())).isNull();
		assertThat(policy).hasToString("MidStreamPolicy{CONTINUE, strategy=USER_CONTINUE, maxContinuations=2}");
	}

	@Test
	void badConfigurationNamesTheFieldAndTheValue() {
		assertThatThrownBy(() -> MidStreamPolicy.notice(""))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("noticeText").hasMessageContaining("\"\"");
		assertThatThrownBy(() -> MidStreamPolicy.notice((String) null))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("noticeText").hasMessageContaining("null");
		assertThatThrownBy(() -> MidStreamPolicy.notice((java.util.function.Function<Throwable, String>) null))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("noticeFactory");
		assertThatThrownBy(() -> MidStreamPolicy.continueWith(null, 1))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("strategy");
		assertThatThrownBy(() -> MidStreamPolicy.continueWith(ContinuationStrategy.ASSISTANT_PREFILL, 0))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("maxContinuations").hasMessageContaining("0");
		assertThatThrownBy(() -> MidStreamPolicy.continueWith(ContinuationStrategy.ASSISTANT_PREFILL, 11))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("maxContinuations").hasMessageContaining("11");
	}
}
