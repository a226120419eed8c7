package dev.aiguard.stage;

import java.util.ArrayList;
import java.util.List;

import dev.aiguard.core.Outcome;
import dev.aiguard.core.Priority;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class StageListTest {

	private static final RequestFacts P1 = new FixedFacts(Priority.P1, null);

	/** A stage that runs only for P0 requests and logs its end. */
	private static GuardStage onlyFor(Priority p, String name, List<String> log) {
		return request -> request.priority() != p ? null : new StageRun() {
			@Override
			public void finish(Outcome outcome) {
				log.add(name + ":" + outcome);
			}
		};
	}

	@Test
	void aPolicyWithoutStagesGivesEveryRequestTheSameEmptyRuns() {
		StageList none = StageList.of((GuardStage) null, null);
		assertThat(none.size()).isZero();
		assertThat(none.start(P1)).isEmpty();
		assertThat(none.start(P1)).isSameAs(none.start(P1));
	}

	@Test
	void aRequestGetsRunsOnlyOfTheStagesWithSomethingToDoForIt() {
		List<String> log = new ArrayList<>();
		StageList stages = StageList.of(onlyFor(Priority.P0, "a", log), null, onlyFor(Priority.P1, "b", log),
				onlyFor(Priority.P1, "c", log));
		assertThat(stages.size()).isEqualTo(3);
		StageRun[] runs = stages.start(P1);
		assertThat(runs).hasSize(2);
		StageList.finish(runs, Outcome.SUCCESS);
		assertThat(log).containsExactly("b:SUCCESS", "c:SUCCESS");
	}

	@Test
	void aRequestNoStageRunsForSharesTheEmptyRuns() {
		StageList stages = StageList.of(onlyFor(Priority.P0, "a", new ArrayList<>()));
		assertThat(stages.start(P1)).isEmpty();
		assertThat(stages.start(P1)).isSameAs(StageList.of().start(P1));
	}

	@Test
	void anAttemptThatWasNotSentReportsNothingReceived() {
		AttemptEnd notSent = AttemptEnd.notSent();
		assertThat(notSent.sent()).isFalse();
		assertThat(notSent.contentChunks()).isZero();
		assertThat(notSent.timeToFirstTokenNanos()).isEqualTo(-1L);
		assertThat(notSent.reportedPromptTokens()).isEqualTo(-1);
		assertThat(notSent.error()).isNull();
	}
}
