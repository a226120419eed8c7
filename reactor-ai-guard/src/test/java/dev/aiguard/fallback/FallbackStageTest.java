package dev.aiguard.fallback;

import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.core.Priority;
import dev.aiguard.chat.ChatMessage;
import dev.aiguard.metrics.GuardMetrics;
import dev.aiguard.stage.Degradation;
import dev.aiguard.stage.FixedFacts;
import dev.aiguard.stage.RequestFacts;
import dev.aiguard.stage.Shortfall;
import dev.aiguard.stage.StageRun;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

import java.util.EnumSet;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** What the fallback stage starts for a request: nothing, the shared ladder, or a run that records for the cache. */
class FallbackStageTest {

	private static final FallbackChain<ChatChunk> LADDER = FallbackChain.<ChatChunk>builder()
			.step(Fallback.staticText("busy"))
			.triggers(EnumSet.of(FallbackTrigger.BREAKER_OPEN, FallbackTrigger.LOAD))
			.build();

	private static FallbackStage stage(@Nullable FallbackChain<?> chain, @Nullable ResponseCache<?> cache,
			boolean load) {
		return FallbackStage.of(chain, cache, CacheKeys.standard(), load, null, GuardMetrics.noop(), "test");
	}

	@Test
	void aPolicyWithoutLadderOrCacheHasNoStage() {
		assertThat(stage(null, null, true)).isNull();
	}

	@Test
	void everyRequestSharesTheLadderRun() {
		FallbackStage stage = stage(LADDER, null, false);
		StageRun transform = stage.start(request(null));
		StageRun call = stage.start(request(ask()));
		assertThat(transform).isNotNull().isSameAs(call);
		assertThat(transform.recording()).isNull();
		assertThat(transform.answers()).isNotNull();
		assertThat(transform.answers().answers(Shortfall.BREAKER_OPEN)).isTrue();
		assertThat(transform.answers().answers(Shortfall.RETRIES_EXHAUSTED)).as("not among the triggers").isFalse();
		assertThat(transform.answers().answersFirst(Degradation.STATIC_ONLY)).as("no load governor").isFalse();
	}

	@Test
	void theLoadsDegradationsWalkTheLaddersCuts() {
		StageRun run = stage(LADDER, null, true).start(request(null));
		assertThat(run.answers().answersFirst(Degradation.STATIC_ONLY)).isTrue();
		assertThat(run.answers().answersFirst(Degradation.CHEAPER_FIRST)).as("no cache or lightweight step").isFalse();
	}

	@Test
	void aCacheRecordsOnlyTheCallFormEachRequestOnItsOwn() {
		ResponseCache<ChatChunk> cache = ResponseCache.caffeine();
		FallbackStage cacheOnly = stage(null, cache, false);
		assertThat(cacheOnly.start(request(null))).as("the transform form records nothing").isNull();
		StageRun first = cacheOnly.start(request(ask()));
		StageRun second = cacheOnly.start(request(ask()));
		assertThat(first).isNotNull().isNotSameAs(second);
		assertThat(first.recording()).isNotNull();
		assertThat(first.answers()).as("no ladder").isNull();
		StageRun both = stage(LADDER, cache, false).start(request(ask()));
		assertThat(both.recording()).isNotNull();
		assertThat(both.answers()).isNotNull();
		assertThat(both.answers().answers(Shortfall.BREAKER_OPEN)).isTrue();
	}

	@Test
	void everyShortfallIsTheTriggerOfTheSameName() {
		for (Shortfall why : Shortfall.values()) {
			assertThat(FallbackStage.triggerOf(why).name()).isEqualTo(why.name());
		}
		assertThat(Shortfall.values()).hasSize(FallbackTrigger.values().length - 1);
	}

	private static ChatRequest ask() {
		return ChatRequest.of("main", List.of(ChatMessage.user("hi")));
	}

	private static RequestFacts request(@Nullable ChatRequest original) {
		return new FixedFacts(Priority.P1, original);
	}
}
