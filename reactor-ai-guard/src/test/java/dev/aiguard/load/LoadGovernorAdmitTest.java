package dev.aiguard.load;

import java.time.Duration;

import dev.aiguard.admission.AdmissionRejectedException;
import dev.aiguard.core.Priority;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;
import reactor.test.publisher.PublisherProbe;
import reactor.test.publisher.TestPublisher;
import reactor.util.context.Context;

import static org.assertj.core.api.Assertions.assertThat;

class LoadGovernorAdmitTest {

	final GovernorFixture f = new GovernorFixture();
	LoadGovernor governor;

	@AfterEach
	void stop() {
		if (governor != null) {
			governor.dispose();
		}
	}

	private LoadGovernor degraded() {
		governor = f.builder().dwell(Duration.ofSeconds(30)).build().start();
		f.interval(governor, 10);
		assertThat(governor.level()).isEqualTo(LoadLevel.DEGRADED);
		return governor;
	}

	@Test
	void passesThroughAndRecordsTheArrivalFirstElementAndSuccess() {
		governor = f.builder().build().start();
		Flux<String> answer = Mono.delay(Duration.ofMillis(400), f.time).thenMany(Flux.just("a", "b", "c"))
				.transform(governor.admit());
		StepVerifier.create(answer, 0)
				.expectSubscription()
				.then(() -> f.time.advanceTimeBy(Duration.ofMillis(400)))
				.expectNoEvent(Duration.ZERO)
				.thenRequest(2)
				.expectNext("a", "b")
				.thenRequest(1)
				.expectNext("c")
				.verifyComplete();
		f.time.advanceTimeBy(Duration.ofMillis(600));
		IntervalStats s = governor.state().interval();
		assertThat(s.arrivals(Priority.P1)).isEqualTo(1);
		assertThat(s.firstTokens()).isEqualTo(1);
		assertThat(s.meanTtftMillis()).isEqualTo(400.0);
		assertThat(s.attempts()).isEqualTo(1);
		assertThat(s.failures()).isZero();
	}

	@Test
	void aShedPriorityGetsTheTypedRefusalWithARetryHintAndTheSourceIsNeverSubscribed() {
		degraded();
		PublisherProbe<String> source = PublisherProbe.of(Flux.just("x"));
		StepVerifier.create(source.flux().transform(governor.admit(Priority.P2)))
				.expectErrorSatisfies(e -> {
					assertThat(e).isInstanceOf(AdmissionRejectedException.class)
							.hasMessageStartingWith("chat: P2 shed at level DEGRADED");
					AdmissionRejectedException rejected = (AdmissionRejectedException) e;
					assertThat(rejected.reason()).isEqualTo(AdmissionRejectedException.Reason.SHED);
					assertThat(rejected.retryAfter()).contains(Duration.ofSeconds(30));
				})
				.verify(Duration.ofSeconds(1));
		source.assertWasNotSubscribed();
		f.interval(governor, 0);
		assertThat(governor.state().interval().arrivals(Priority.P2)).as("a shed request is offered load").isEqualTo(1);
		assertThat(governor.state().interval().attempts()).isZero();
	}

	@Test
	void staticOrShedIsRefusedToo() {
		governor = f.builder().build().start();
		f.interval(governor, 20);
		assertThat(governor.action(Priority.P1)).isEqualTo(LoadAction.STATIC_OR_SHED);
		StepVerifier.create(Flux.just("x").transform(governor.admit()))
				.expectErrorMatches(e -> e instanceof AdmissionRejectedException
						&& e.getMessage().startsWith("chat: P1 shed at level CRITICAL (STATIC_OR_SHED)"))
				.verify(Duration.ofSeconds(1));
	}

	@Test
	void thePriorityComesFromTheContext() {
		degraded();
		StepVerifier.create(Flux.just("x").transform(governor.<String>admit()).contextWrite(Priority.P2.asContext()))
				.expectError(AdmissionRejectedException.class)
				.verify(Duration.ofSeconds(1));
		StepVerifier.create(Flux.just("x").transform(governor.<String>admit(Priority.P2)).contextWrite(Priority.P0.asContext()))
				.expectNext("x")
				.verifyComplete();
		StepVerifier.create(Flux.just("x").transform(governor.<String>admit()))
				.as("P1 by default: FALLBACK_FIRST is served")
				.expectNext("x")
				.verifyComplete();
	}

	@Test
	void aBadPriorityInTheContextIsATypedError() {
		governor = f.builder().build().start();
		StepVerifier.create(Flux.just("x").transform(governor.<String>admit())
						.contextWrite(Context.of(Priority.CONTEXT_KEY, "P9")))
				.expectErrorMatches(e -> e instanceof IllegalArgumentException && e.getMessage().contains("unknown priority 'P9'"))
				.verify(Duration.ofSeconds(1));
	}

	@Test
	void anErrorIsAFailedAttempt() {
		governor = f.builder().build().start();
		StepVerifier.create(Flux.<String>error(new IllegalStateException("boom")).transform(governor.admit()))
				.expectErrorMessage("boom")
				.verify(Duration.ofSeconds(1));
		f.interval(governor, 0);
		assertThat(governor.state().interval().attempts()).isEqualTo(1);
		assertThat(governor.state().interval().failures()).isEqualTo(1);
		assertThat(governor.state().subScores().get("error-rate")).isZero();
	}

	@Test
	void aRefusalFurtherDownIsNotAFailureOfTheService() {
		governor = f.builder().build().start();
		Flux<String> refused = Flux.error(new AdmissionRejectedException(Priority.P1,
				AdmissionRejectedException.Reason.QUEUE_FULL, "lane full"));
		StepVerifier.create(refused.transform(governor.admit()))
				.expectError(AdmissionRejectedException.class)
				.verify(Duration.ofSeconds(1));
		f.interval(governor, 0);
		assertThat(governor.state().interval().attempts()).isZero();
	}

	@Test
	void cancelIsPropagatedAndNotCounted() {
		governor = f.builder().build().start();
		TestPublisher<String> source = TestPublisher.create();
		StepVerifier.create(source.flux().transform(governor.admit()))
				.then(() -> source.next("a"))
				.expectNext("a")
				.thenCancel()
				.verify(Duration.ofSeconds(1));
		source.assertCancelled();
		source.next("late").error(new IllegalStateException("after cancel"));
		f.interval(governor, 0);
		assertThat(governor.state().interval().attempts()).isZero();
		assertThat(governor.state().interval().firstTokens()).isEqualTo(1);
		assertThat(governor.state().interval().arrivals()).isEqualTo(1);
	}

	@Test
	void oneTerminalOnly() {
		governor = f.builder().build().start();
		TestPublisher<String> source = TestPublisher.createNoncompliant(TestPublisher.Violation.CLEANUP_ON_TERMINATE);
		StepVerifier.create(source.flux().transform(governor.admit()))
				.then(() -> source.complete().error(new IllegalStateException("second terminal")))
				.expectComplete()
				.verifyThenAssertThat()
				.hasDroppedErrorWithMessage("second terminal");
		f.interval(governor, 0);
		assertThat(governor.state().interval().attempts()).isEqualTo(1);
		assertThat(governor.state().interval().failures()).isZero();
	}
}
