package dev.aiguard.test.mock;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;

import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.provider.AnthropicClient;
import dev.aiguard.provider.OpenAiCompatibleClient;
import dev.aiguard.provider.ProviderOverloadedException;
import dev.aiguard.provider.ProviderServerException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Sinks;
import reactor.test.StepVerifier;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The mock's load pressure: the profile's formulas, and over loopback HTTP a request that arrives
 * while others are held open (stalled answers) answered as the number in progress says.
 */
class LoadPressureTest {

	private static final Duration WAIT = Duration.ofSeconds(10);
	private static final long FIRST_TOKEN_MS = 100;

	/** The draw deciding refusals; each test sets it. */
	private final AtomicReference<Double> draw = new AtomicReference<>(0.0);
	private final List<Disposable> holders = new ArrayList<>();
	private MockModelServer mock;
	private OpenAiCompatibleClient client;

	@BeforeEach
	void start() {
		mock = MockModelServer.builder()
			.faults(FaultProfile.defaults(Duration.ofMillis(FIRST_TOKEN_MS), Duration.ZERO))
			.random(draw::get)
			.start();
		client = OpenAiCompatibleClient.builder(mock.baseUrl()).model(MockModelServer.MODEL).build();
	}

	@AfterEach
	void stop() {
		holders.forEach(Disposable::dispose);
		// every held answer ends once its client has left
		Flux.interval(Duration.ofMillis(5)).filter(tick -> mock.stats().inProgress() == 0).next().block(WAIT);
		mock.stop();
	}

	private static ChatRequest ask(String question) {
		return ChatRequest.of(null, List.of(ChatMessage.user(question)));
	}

	/** Opens {@code count} more answers that send one token, then stall with their request still in progress. */
	private void hold(int count) {
		FaultProfile held = mock.faults().withPace(0, 0).withStallAfter(1).withLoadPressure(null);
		for (int i = 0; i < count; i++) {
			mock.enqueue(held);
			Sinks.One<Boolean> streaming = Sinks.one();
			holders.add(client.stream(ask("hold " + i))
				.filter(ChatChunk::hasContent)
				.subscribe(chunk -> streaming.tryEmitValue(true)));
			streaming.asMono().block(WAIT);
		}
		assertThat(mock.stats().inProgress()).isEqualTo(holders.size());
	}

	/** @return milliseconds from subscribing to the first content chunk of a streamed answer */
	private long timeToFirstToken(String question) {
		long start = System.nanoTime();
		ChatChunk first = client.stream(ask(question)).filter(ChatChunk::hasContent).blockFirst(WAIT);
		assertThat(first).isNotNull();
		return (System.nanoTime() - start) / 1_000_000;
	}

	@Test
	void excessIsCountedInCapacitiesAndDrivesDelayAndRefusalsUpToTheirLimits() {
		LoadPressure pressure = LoadPressure.of(4);

		assertThat(pressure.excess(3)).isZero();
		assertThat(pressure.excess(4)).isZero();
		assertThat(pressure.excess(6)).isEqualTo(0.5);
		assertThat(pressure.excess(12)).isEqualTo(2.0);
		assertThat(pressure.firstTokenDelayMs(100, 4)).isEqualTo(100);
		assertThat(pressure.firstTokenDelayMs(100, 6)).isEqualTo(200);
		assertThat(pressure.firstTokenDelayMs(100, 8)).isEqualTo(300);
		assertThat(pressure.firstTokenDelayMs(100_000, 40)).as("never past the mock's longest delay")
			.isEqualTo(FaultProfile.MAX_DELAY_MS);
		assertThat(pressure.errorRate(4)).isZero();
		assertThat(pressure.errorRate(6)).isEqualTo(0.25);
		assertThat(pressure.errorRate(8)).isEqualTo(0.5);
		assertThat(pressure.errorRate(40)).as("capped at maxErrorRate").isEqualTo(0.9);
		assertThat(pressure.slowdown(0).firstTokenDelayMs(100, 40)).isEqualTo(100);
		assertThat(pressure.errors(0, 0, 500, 0).errorRate(40)).isZero();
	}

	@Test
	void badSettingsNameTheFieldAndTheValue() {
		assertThatThrownBy(() -> LoadPressure.of(0)).isInstanceOf(IllegalArgumentException.class)
			.hasMessage("capacity must be at least 1, was 0");
		assertThatThrownBy(() -> LoadPressure.of(2).slowdown(-1)).hasMessage("slowdown must be between 0 and 1000.0, was -1.0");
		assertThatThrownBy(() -> LoadPressure.of(2).slowdown(Double.NaN)).hasMessageContaining("slowdown")
			.hasMessageContaining("NaN");
		assertThatThrownBy(() -> LoadPressure.of(2).errors(0.5, 1.5, 529, 1))
			.hasMessage("maxErrorRate must be between 0 and 1.0, was 1.5");
		assertThatThrownBy(() -> LoadPressure.of(2).errors(0.5, 0.5, 429, 1))
			.hasMessage("errorStatus must be 500 or 529, was 429");
		assertThatThrownBy(() -> LoadPressure.of(2).errors(0.5, 0.5, 529, -1))
			.hasMessage("retryAfterSeconds must be between 0 and 3600, was -1");
	}

	@Test
	void otherSwitchesKeepThePressureAndNullTurnsItOff() {
		FaultProfile pressed = mock.faults().withLoadPressure(3);

		assertThat(pressed.loadPressure()).isEqualTo(LoadPressure.of(3));
		assertThat(pressed.withStallAfter(2).withErrors(0.1, 500, 0).withPace(5, 5).loadPressure())
			.isEqualTo(LoadPressure.of(3));
		assertThat(pressed.withLoadPressure(null).loadPressure()).isNull();
		assertThat(mock.faults().loadPressure()).isNull();
	}

	@Test
	void atCapacityNothingChangesEvenWhenEveryDrawWouldRefuse() {
		draw.set(0.0);
		hold(3);
		mock.faults(mock.faults().withLoadPressure(4));

		StepVerifier.create(client.stream(ask("Still fine?")).filter(ChatChunk::hasContent).map(ChatChunk::text)
				.reduce(String::concat))
			.expectNext(MockAnswers.text("Still fine?"))
			.verifyComplete();
		assertThat(mock.stats().loadRefusals()).isZero();
		assertThat(mock.stats().loadSlowed()).isZero();
	}

	@Test
	void pastCapacityTheFirstTokenWaitsLongerTheMoreRequestsAreInProgress() {
		draw.set(0.99);
		mock.faults(mock.faults().withLoadPressure(LoadPressure.of(2)));
		long alone = timeToFirstToken("alone");
		assertThat(mock.stats().loadSlowed()).isZero();

		hold(3);
		// four in progress with this one: one capacity over, so 1 + 2 x 1 = 3 times the first-token delay
		long pressed = timeToFirstToken("pressed");

		assertThat(mock.stats().loadSlowed()).isEqualTo(1);
		assertThat(mock.stats().loadRefusals()).isZero();
		assertThat(pressed).isGreaterThanOrEqualTo(3 * FIRST_TOKEN_MS);
		assertThat(pressed).as("slower than the same request alone (%d ms)", alone).isGreaterThan(alone);
	}

	@Test
	void pastCapacityRequestsAreRefusedWithAProbabilityThatRisesWithTheLoad() {
		// a draw of 0.3 refuses once the refusal probability passes it: 0.5 x excess > 0.3
		draw.set(0.3);
		mock.faults(mock.faults().withPace(0, 0).withLoadPressure(LoadPressure.of(2)));

		hold(2);
		// three in progress: excess 0.5, refusal probability 0.25: answered (though later)
		StepVerifier.create(client.stream(ask("three")).filter(ChatChunk::hasContent).count())
			.expectNext((long) MockAnswers.tokens("three").size())
			.verifyComplete();
		assertThat(mock.stats().loadRefusals()).isZero();

		hold(1);
		// four in progress: excess 1, refusal probability 0.5: 529 with Retry-After: 1
		StepVerifier.create(client.stream(ask("four")))
			.expectErrorSatisfies(e -> {
				assertThat(e).isInstanceOf(ProviderOverloadedException.class);
				assertThat(((ProviderOverloadedException) e).status()).isEqualTo(529);
				assertThat(((ProviderOverloadedException) e).retryAfter()).contains(Duration.ofSeconds(1));
			})
			.verify(WAIT);
		assertThat(mock.stats().loadRefusals()).isEqualTo(1);
		assertThat(mock.stats().injectedErrors()).as("a refusal is an injected error too").isEqualTo(1);
	}

	@Test
	void theAnthropicRouteFeelsTheSamePressure() {
		draw.set(0.0);
		mock.faults(mock.faults().withLoadPressure(LoadPressure.of(1).errors(0.5, 1, 500, 0)));
		hold(1);
		AnthropicClient anthropic = AnthropicClient.builder(mock.anthropicBaseUrl()).apiKey("sk-ant-mock")
			.model("claude-mock").build();

		StepVerifier.create(anthropic.stream(ask("two")))
			.expectErrorSatisfies(e -> {
				assertThat(e).isInstanceOf(ProviderServerException.class);
				assertThat(((ProviderServerException) e).status()).isEqualTo(500);
				assertThat(((ProviderServerException) e).retryAfter()).isEmpty();
			})
			.verify(WAIT);
		assertThat(mock.stats().loadRefusals()).isEqualTo(1);
	}
}
