package dev.aiguard.consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;
import java.util.List;

import dev.aiguard.AiGuard;
import dev.aiguard.GuardPolicy;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.metrics.MicrometerGuardMetrics;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;

/** The library on its own, with Micrometer metrics, as the README's "library on its own" shows it. */
class CoreConsumerTest {

	@Test
	void resolvesTheTestedVersions() {
		ClassPathCheck.fromSystemProperties().verify();
	}

	@Test
	void guardsAStreamAndCountsIt() {
		SimpleMeterRegistry registry = new SimpleMeterRegistry();
		AiGuard<ChatChunk> guard = AiGuard.of(GuardPolicy.builder("chat").metrics(new MicrometerGuardMetrics(registry)).build());

		List<ChatChunk> answer = Flux.just(ChatChunk.token("Hello"), ChatChunk.token(" world"), ChatChunk.finish("stop"),
				ChatChunk.done()).transform(guard).collectList().block(Duration.ofSeconds(30));

		assertEquals("Hello world", answer.stream().map(ChatChunk::text).filter(t -> t != null).reduce("", String::concat));
		assertEquals(false, registry.getMeters().isEmpty(), "the guard's meters");
	}
}
