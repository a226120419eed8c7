package dev.aiguard.demo;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import reactor.blockhound.BlockingOperationError;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;
import reactor.netty.resources.LoopResources;
import reactor.test.StepVerifier;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * BlockHound is installed for every test of this module (blockhound-junit-platform), so the app,
 * its handlers and the mock run under it in all the other tests: a blocking call on an event
 * loop or a parallel thread would have failed them.
 */
class BlockHoundTest {

	@Test
	void aBlockingCallOnAParallelThreadIsCaught() {
		StepVerifier.create(Mono.fromCallable(() -> new CountDownLatch(1).await(1, TimeUnit.MILLISECONDS))
				.subscribeOn(Schedulers.parallel()))
			.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(BlockingOperationError.class))
			.verify(Duration.ofSeconds(5));
	}

	@Test
	void aBlockingCallOnANettyEventLoopIsCaught() {
		LoopResources loops = LoopResources.create("blockhound-check", 1, true);
		try {
			StepVerifier.create(Mono.fromCallable(() -> new CountDownLatch(1).await(1, TimeUnit.MILLISECONDS))
					.subscribeOn(Schedulers.fromExecutor(loops.onServer(true).next())))
				.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(BlockingOperationError.class))
				.verify(Duration.ofSeconds(5));
		}
		finally {
			loops.disposeLater().block(Duration.ofSeconds(5));
		}
	}
}
