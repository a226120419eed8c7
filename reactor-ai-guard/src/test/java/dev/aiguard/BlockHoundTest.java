package dev.aiguard;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import dev.aiguard.chat.ChatChunk;
import dev.aiguard.stall.StallSpec;
import org.junit.jupiter.api.Test;
import reactor.blockhound.BlockingOperationError;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;
import reactor.test.StepVerifier;

import static org.assertj.core.api.Assertions.assertThat;

/** BlockHound is installed for every test of this module (blockhound-junit-platform). */
class BlockHoundTest {

	@Test
	void blockHoundIsActive() {
		StepVerifier.create(Mono.fromCallable(() -> new CountDownLatch(1).await(1, TimeUnit.MILLISECONDS))
						.subscribeOn(Schedulers.parallel()))
				.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(BlockingOperationError.class))
				.verify(Duration.ofSeconds(5));
	}

	@Test
	void guardedStreamOnNonBlockingThreadsNeverBlocks() {
		AiGuard<ChatChunk> guard = AiGuard.of(GuardPolicy.builder("bh")
				.stall(StallSpec.defaults().firstTokenTimeout(Duration.ofSeconds(5)).idleTimeout(Duration.ofSeconds(5))
						.maxDuration(Duration.ofSeconds(30)))
				.build());
		StepVerifier.create(Flux.range(0, 200).map(i -> ChatChunk.token("t" + i))
						.concatWith(Flux.just(ChatChunk.done()))
						.publishOn(Schedulers.parallel())
						.transform(guard)
						.subscribeOn(Schedulers.parallel()))
				.expectNextCount(201)
				.verifyComplete();
	}
}
