package dev.aiguard;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import dev.aiguard.chat.ChatChunk;
import dev.aiguard.metrics.GuardMetrics;
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
	void guardWorksWithoutMicrometer() {
		List<GuardReport> reports = new CopyOnWriteArrayList<>();
		GuardPolicy policy = GuardPolicy.builder("plain").metrics(GuardMetrics.noop()).onReport(reports::add).build();
		StepVerifier.create(Flux.just(ChatChunk.token("a"), ChatChunk.done()).transform(AiGuard.of(policy)))
				.expectNextCount(2)
				.verifyComplete();
		assertThat(reports).singleElement().extracting(GuardReport::outcome).isEqualTo(Outcome.SUCCESS);
	}
}
