package dev.aiguard.test;

import java.time.Duration;
import java.util.List;

import dev.aiguard.GuardReport;
import dev.aiguard.core.Outcome;
import dev.aiguard.core.Priority;
import dev.aiguard.core.Source;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;
import reactor.test.util.RaceTestUtils;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The report recorder: arrival order, waiting for reports that come later, outcomes, races. */
class ReportRecorderTest {

	private static GuardReport report(String policy, Outcome outcome, Throwable error) {
		return new GuardReport(policy, Priority.P1, outcome, Source.REALTIME, List.of(), 0, null, Duration.ZERO, null,
				false, error);
	}

	@Test
	void reportsAreKeptInArrivalOrderAndAwaitedOneAfterTheOther() {
		ReportRecorder reports = new ReportRecorder();
		GuardReport first = report("a", Outcome.SUCCESS, null);
		GuardReport second = report("b", Outcome.STALLED, null);
		reports.accept(first);
		reports.accept(second);

		assertThat(reports.reports()).containsExactly(first, second);
		assertThat(reports.last()).isSameAs(second);
		assertThat(reports.awaitReport()).isSameAs(first);
		assertThat(reports.expectOutcome(Outcome.STALLED)).isSameAs(second);
	}

	@Test
	void awaitReportWaitsForAReportDeliveredLaterOnAnotherThread() {
		ReportRecorder reports = new ReportRecorder();
		GuardReport late = report("late", Outcome.SUCCESS, null);

		Mono.delay(Duration.ofMillis(50), Schedulers.parallel()).subscribe(tick -> reports.accept(late));

		assertThat(reports.awaitReport(Duration.ofSeconds(5))).isSameAs(late);
	}

	@Test
	void awaitReportFailsWhenNoneArrivesInTime() {
		ReportRecorder reports = new ReportRecorder();

		assertThatThrownBy(() -> reports.awaitReport(Duration.ofMillis(30))).isInstanceOf(AssertionError.class)
			.hasMessage("GuardReport #1 did not arrive within 30 ms; reports so far: []");
		assertThatThrownBy(reports::last).isInstanceOf(AssertionError.class).hasMessage("no GuardReport was delivered");

		GuardReport arrived = report("a", Outcome.SUCCESS, null);
		reports.accept(arrived);
		assertThat(reports.awaitReport()).as("a timed-out wait does not skip a report").isSameAs(arrived);
	}

	@Test
	void expectOutcomeNamesBothOutcomesAndCarriesTheError() {
		ReportRecorder reports = new ReportRecorder();
		IllegalStateException boom = new IllegalStateException("boom");
		reports.accept(report("chat", Outcome.FAILURE, boom));

		assertThatThrownBy(() -> reports.expectOutcome(Outcome.SUCCESS)).isInstanceOf(AssertionError.class)
			.hasMessageStartingWith("expected outcome SUCCESS but the report says FAILURE")
			.hasCause(boom);
	}

	@Test
	void clearForgetsReportsAndStartsWaitingAfresh() {
		ReportRecorder reports = new ReportRecorder();
		reports.accept(report("old", Outcome.SUCCESS, null));
		reports.awaitReport();

		reports.clear();
		GuardReport fresh = report("new", Outcome.CANCELLED, null);
		reports.accept(fresh);

		assertThat(reports.reports()).containsExactly(fresh);
		assertThat(reports.expectOutcome(Outcome.CANCELLED)).isSameAs(fresh);
	}

	@Test
	void reportsDeliveredConcurrentlyAreAllKeptAndAwaitable() {
		for (int round = 0; round < 300; round++) {
			ReportRecorder reports = new ReportRecorder();
			GuardReport a = report("a", Outcome.SUCCESS, null);
			GuardReport b = report("b", Outcome.SUCCESS, null);

			RaceTestUtils.race(() -> reports.accept(a), () -> reports.accept(b));

			assertThat(reports.reports()).containsExactlyInAnyOrder(a, b);
			assertThat(List.of(reports.awaitReport(), reports.awaitReport())).containsExactlyInAnyOrder(a, b);
		}
	}
}
