package dev.aiguard.test.mock;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import io.netty.channel.DefaultEventLoop;
import io.netty.util.concurrent.EventExecutor;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class TokenPacerTest {

	private static final Duration WAIT = Duration.ofSeconds(10);

	private final DefaultEventLoop loop = new DefaultEventLoop();
	private final TokenPacer pacer = new TokenPacer();

	@AfterEach
	void stop() {
		loop.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
	}

	@Test
	void emitsEveryIndexInOrderOnTheLoopNoEarlierThanItsDueTime() {
		List<Boolean> onLoop = new CopyOnWriteArrayList<>();
		long start = System.nanoTime();
		List<Long> at = pacer.pace(loop, 5, 30, 20)
			.doOnNext(i -> onLoop.add(loop.inEventLoop()))
			.map(i -> (System.nanoTime() - start) / 1_000_000)
			.collectList()
			.block(WAIT);

		assertThat(at).hasSize(5);
		for (int i = 0; i < 5; i++) {
			// due i: 30 ms + i intervals after subscription, never before
			assertThat(at.get(i)).isGreaterThanOrEqualTo(30 + 20L * i);
		}
		assertThat(onLoop).containsOnly(true);
	}

	@Test
	void emitsTheIndexesInOrder() {
		StepVerifier.create(pacer.pace(loop, 4, 0, 2))
			.expectNext(0, 1, 2, 3)
			.expectComplete()
			.verify(WAIT);
	}

	@Test
	void anAnswerWithoutPaceIsEmittedAtOnceWithoutStartingTheTick() {
		StepVerifier.create(pacer.pace(loop, 3, 0, 0)).expectNext(0, 1, 2).expectComplete().verify(WAIT);
		assertThat(pacer.ticksStarted()).isZero();
	}

	@Test
	void anEmptyAnswerCompletesAtOnce() {
		StepVerifier.create(pacer.pace(loop, 0, 50, 50)).expectComplete().verify(WAIT);
	}

	@Test
	void waitsForDemandAndThenEmitsTheDueTokenAtOnce() {
		StepVerifier.create(pacer.pace(loop, 2, 0, 10), 0)
			.expectSubscription()
			.expectNoEvent(Duration.ofMillis(60))
			.thenRequest(1)
			.expectNext(0)
			.expectNoEvent(Duration.ofMillis(40))
			.thenRequest(1)
			.expectNext(1)
			.expectComplete()
			.verify(WAIT);
	}

	@Test
	void manyAnswersAtOnceShareOneTick() {
		int answers = 2_000;
		List<Integer> counts = Flux.range(0, answers)
			.flatMap(n -> pacer.pace(loop, 10, 20, 5).count().map(Long::intValue), answers)
			.collectList()
			.block(WAIT);

		assertThat(counts).hasSize(answers).containsOnly(10);
		// every answer was in the wheel while another was: one periodic task served them all
		assertThat(pacer.ticksStarted()).isEqualTo(1);
	}

	@Test
	void theTickStopsWhenTheWheelIsEmptyAndStartsAgainWithTheNextAnswer() {
		StepVerifier.create(pacer.pace(loop, 2, 5, 5)).expectNext(0, 1).expectComplete().verify(WAIT);
		StepVerifier.create(pacer.pace(loop, 2, 5, 5)).expectNext(0, 1).expectComplete().verify(WAIT);

		assertThat(pacer.ticksStarted()).isEqualTo(2);
	}

	@Test
	void aCancelledAnswerEmitsNothingMore() {
		List<Integer> seen = new CopyOnWriteArrayList<>();
		StepVerifier.create(pacer.pace(loop, 100, 0, 5).doOnNext(seen::add).take(3))
			.expectNext(0, 1, 2)
			.expectComplete()
			.verify(WAIT);
		// past the time of a few more tokens, measured on the loop's own timer
		Mono.delay(Duration.ofMillis(50)).block(WAIT);

		assertThat(seen).containsExactly(0, 1, 2);
	}

	@Test
	void aTokenDueBeyondOneTurnOfTheWheelWaitsForItsTime() {
		long start = System.nanoTime();
		Long elapsedMs = pacer.pace(loop, 1, TokenPacer.SLOTS + 150, 0)
			.map(i -> (System.nanoTime() - start) / 1_000_000)
			.single()
			.block(WAIT);

		assertThat(elapsedMs).isGreaterThanOrEqualTo(TokenPacer.SLOTS + 150L);
	}

	@Test
	void subscribedOffTheLoopStillEmitsOnTheLoop() {
		EventExecutor executor = loop.next();
		List<Boolean> onLoop = new CopyOnWriteArrayList<>();
		pacer.pace(executor, 3, 1, 1).doOnNext(i -> onLoop.add(executor.inEventLoop())).blockLast(WAIT);

		assertThat(onLoop).containsExactly(true, true, true);
	}

	@Test
	void refusesNegativeSettingsNamingThem() {
		assertThatThrownBy(() -> pacer.pace(loop, 1, -1, 0))
			.isInstanceOf(IllegalArgumentException.class)
			.hasMessage("count, firstMs and intervalMs must be >= 0, were 1, -1 and 0");
	}
}
