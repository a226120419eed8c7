package dev.aiguard;

import dev.aiguard.chat.ChatChunk;
import dev.aiguard.metrics.GuardMetrics;
import dev.aiguard.testing.Policies;
import dev.aiguard.testing.Reports;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.test.StepVerifier;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import dev.aiguard.core.Outcome;

/**
 * Runs in its own Surefire execution with micrometer-core removed from the classpath (see the
 * module's pom): the library must work without its optional Micrometer dependency.
 */
class NoMicrometerTest {

	@Test
	void micrometerIsReallyAbsent() {
		assertThatThrownBy(() -> Class.forName("io.micrometer.core.instrument.MeterRegistry"))
				.isInstanceOf(ClassNotFoundException.class);
	}

	@Test
	void loadGovernorWorksWithoutMicrometer() {
		dev.aiguard.load.LoadGovernor governor = dev.aiguard.load.LoadGovernor.builder("plain").capacity(10)
				.metrics(GuardMetrics.noop()).warmupIntervals(0).build();
		for (int i = 0; i < 9; i++) {
			governor.arrived(dev.aiguard.core.Priority.P2);
		}
		// 0.9 of capacity is WARNING at least; the machine's own CPU and heap may make it worse
		assertThat(governor.decide().level()).isGreaterThanOrEqualTo(dev.aiguard.load.LoadLevel.WARNING);
		assertThat(governor.state().subScores()).containsKeys("cpu", "memory");
		StepVerifier.create(Flux.just("a").transform(governor.admit()))
				.expectNext("a")
				.verifyComplete();
	}

	@Test
	void guardWorksWithoutMicrometer() {
		Reports reports = new Reports();
		GuardPolicy policy = Policies.reporting("plain", reports).metrics(GuardMetrics.noop()).build();
		StepVerifier.create(Flux.just(ChatChunk.token("a"), ChatChunk.done()).transform(AiGuard.of(policy)))
				.expectNextCount(2)
				.verifyComplete();
		assertThat(reports).singleElement().extracting(GuardReport::outcome).isEqualTo(Outcome.SUCCESS);
	}
}
