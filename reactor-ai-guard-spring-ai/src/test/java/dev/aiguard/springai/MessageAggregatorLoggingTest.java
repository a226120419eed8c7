package dev.aiguard.springai;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletionException;
import java.util.concurrent.atomic.AtomicInteger;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.classic.spi.ThrowableProxy;
import ch.qos.logback.core.read.ListAppender;
import dev.aiguard.GuardPolicy;
import dev.aiguard.provider.ProviderServerException;
import dev.aiguard.retry.PartialStreamException;
import dev.aiguard.retry.RetryRules;
import dev.aiguard.stall.StallSpec;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.AutoClose;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;
import org.springframework.ai.chat.client.ChatClient;
import org.springframework.ai.chat.model.MessageAggregator;

import static dev.aiguard.springai.SpringAiMock.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * When Spring AI's {@link MessageAggregator} logs "Aggregation Error" at ERROR, with the stack trace:
 * a stream that ends with an error is logged by every aggregation it passes. Those are one in
 * {@code OpenAiChatModel.stream()}, one around each advisor of the chain (ChatClient's own Tool
 * Calling Advisor, this guard, the model advisor), one inside the Tool Calling Advisor and one in
 * {@code ChatClient.stream()}. A cancelled stream is not logged, nor is anything on {@code call()}.
 * The test configuration turns the logger off; these tests turn it on.
 */
class MessageAggregatorLoggingTest {

	private final Logger logger = (Logger) LoggerFactory.getLogger(MessageAggregator.class);
	private final ListAppender<ILoggingEvent> events = new ListAppender<>();
	private Level level;
	/**
	 * Started before the logger is turned on: the JVM's first requests (SpringAiMock's warm-up) are
	 * not this test's.
	 */
	@AutoClose
	private SpringAiMock ai = new SpringAiMock();

	@BeforeEach
	void start() {
		level = logger.getLevel();
		logger.setLevel(Level.ERROR);
		logger.setAdditive(false);
		events.start();
		logger.addAppender(events);
	}

	@AfterEach
	void stop() {
		logger.detachAppender(events);
		logger.setLevel(level);
		logger.setAdditive(true);
	}

	private List<Class<?>> logged() {
		return events.list.stream()
			.peek(e -> assertThat(e.getLevel()).isEqualTo(Level.ERROR))
			.peek(e -> assertThat(e.getFormattedMessage()).isEqualTo("Aggregation Error"))
			.<Class<?>>map(e -> ((ThrowableProxy) e.getThrowableProxy()).getThrowable().getClass())
			.toList();
	}

	@Test
	void aFailedAttemptTheGuardRetriesIsLoggedByTheModelAndTheAdvisorThatCallsIt() {
		ai.close();
		AtomicInteger draws = new AtomicInteger();
		ai = new SpringAiMock(() -> draws.getAndIncrement() == 0 ? 0.0 : 0.99);
		ai.mock.faults(ai.mock.faults().withErrors(0.5, 500, 0));
		ChatClient chat = ChatClient.builder(ai.model)
			.defaultAdvisors(AiGuardAdvisor.of(GuardPolicy.builder("logging")
				.retry(RetryRules.backoff(2, Duration.ofMillis(10))).build()))
			.build();

		chat.prompt("Hello").stream().content().blockLast(WAIT);

		// the SDK's error as OpenAiChatModel signals it: by the model, and around the model advisor
		assertThat(logged()).containsExactly(CompletionException.class, CompletionException.class);
	}

	@Test
	void aStallIsLoggedAroundTheGuardAndByChatClientButNotByTheCancelledModel() {
		ai.mock.faults(ai.mock.faults().withStallAfter(2));
		ChatClient chat = ChatClient.builder(ai.model)
			.defaultAdvisors(AiGuardAdvisor.of(GuardPolicy.builder("logging")
				.stall(StallSpec.defaults().idleTimeout(Duration.ofMillis(300))).build()))
			.build();

		chat.prompt("Hello").stream().content().onErrorComplete().blockLast(WAIT);

		// the guard's error only: around the guard, around and inside the Tool Calling Advisor, in ChatClient
		assertThat(logged()).containsExactly(PartialStreamException.class, PartialStreamException.class,
				PartialStreamException.class, PartialStreamException.class);
	}

	@Test
	void aFailedCallIsNotLogged() {
		ai.mock.faults(ai.mock.faults().withErrors(1.0, 500, 0));
		ChatClient chat = ChatClient.builder(ai.model)
			.defaultAdvisors(AiGuardAdvisor.of(GuardPolicy.builder("logging").build()))
			.build();

		assertThatThrownBy(() -> chat.prompt("Hello").call().content()).isInstanceOf(ProviderServerException.class);

		assertThat(logged()).isEmpty();
	}
}
