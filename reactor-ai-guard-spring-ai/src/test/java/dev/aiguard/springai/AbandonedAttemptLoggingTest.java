package dev.aiguard.springai;

import java.time.Duration;
import java.util.List;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.aiguard.core.Outcome;
import dev.aiguard.retry.PartialStreamException;
import dev.aiguard.stall.StallSpec;
import dev.aiguard.stall.StreamStalledException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;
import org.springframework.ai.chat.client.ChatClient;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.reactivestreams.Subscription;
import org.springframework.ai.chat.client.ChatClientRequest;
import org.springframework.ai.chat.client.ChatClientResponse;
import org.springframework.ai.chat.client.advisor.api.StreamAdvisor;
import org.springframework.ai.chat.client.advisor.api.StreamAdvisorChain;
import dev.aiguard.chat.ChatChunk;
import java.io.IOException;
import reactor.core.CoreSubscriber;
import reactor.core.publisher.Operators;
import reactor.core.publisher.Flux;
import reactor.test.StepVerifier;

import static dev.aiguard.springai.SpringAiMock.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * An attempt the guard gave up on (a deadline here) keeps its HTTP call until the client's read
 * ends it, with an error nobody waits for. That error must not reach Reactor's default
 * {@code onErrorDropped} (an ERROR with the whole stack trace): it is logged at DEBUG only. The
 * late error of a call is driven by closing the mock model (not by the SDK's timeout of seconds);
 * that of a stream by a stand-in for the model that fails when it is cancelled, as Spring AI's
 * stream does when its blocked read times out. The tests wait for the advisor's DEBUG line, the
 * event that says the late error arrived and was handled.
 */
class AbandonedAttemptLoggingTest extends AdvisorFixture {

	private static final Duration DEADLINE = Duration.ofMillis(400);

	private final Logger root = (Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
	private final Logger advisorLogger = (Logger) LoggerFactory.getLogger(AiGuardAdvisor.class);
	private final ListAppender<ILoggingEvent> events = new ListAppender<>();
	private Level advisorLevel;

	AbandonedAttemptLoggingTest() {
		super("spring-ai-abandoned");
	}

	@BeforeEach
	void capture() {
		advisorLevel = advisorLogger.getLevel();
		advisorLogger.setLevel(Level.DEBUG);
		events.start();
		root.addAppender(events);
		advisorLogger.addAppender(events);
		advisorLogger.setAdditive(false);
	}

	@AfterEach
	void release() {
		root.detachAppender(events);
		advisorLogger.detachAppender(events);
		advisorLogger.setAdditive(true);
		advisorLogger.setLevel(advisorLevel);
	}

	@Test
	void anAbandonedCallsLateErrorIsNotDroppedAsAnError() {
		ai.mock.faults(ai.mock.faults().withPace(5_000, 0));
		ChatClient chat = client(policy().stall(StallSpec.defaults().firstTokenTimeout(DEADLINE)).build());

		assertThatThrownBy(() -> chat.prompt("Hello").call().content()).isInstanceOf(StreamStalledException.class);
		assertThat(reports.next().block(WAIT).outcome()).isEqualTo(Outcome.STALLED);
		// the model goes away: the abandoned call's blocked read fails now
		ai.mock.close();

		assertThat(lateErrorHandled()).contains("an abandoned attempt ended with");
		assertThat(errors()).isEmpty();
	}

	/**
	 * Spring AI's stream, as the guard's cancel leaves it: the read that was blocked when the guard
	 * gave up ends with an error, signalled (or dropped) after the cancel. Stands in for the model
	 * behind the guard, which it never calls.
	 */
	static final class LateFailingModel implements StreamAdvisor {

		private final boolean signalled;

		/** @param signalled whether the late error is signalled downstream or dropped by the source */
		LateFailingModel(boolean signalled) {
			this.signalled = signalled;
		}

		@Override
		public Flux<ChatClientResponse> adviseStream(ChatClientRequest request, StreamAdvisorChain chain) {
			return Flux.from(s -> s.onSubscribe(new Subscription() {
				private boolean sent;

				@Override
				public void request(long n) {
					if (!sent) {
						sent = true;
						for (int i = 0; i < 3; i++) {
							s.onNext(new ChatClientResponse(ChunkConversion.toChatResponse(ChatChunk.token("t" + i)),
									request.context()));
						}
					}
				}

				@Override
				public void cancel() {
					IOException late = new IOException("Read timed out (key sk-late-0123456789abcdef)");
					if (signalled) {
						s.onError(late);
					}
					else {
						Operators.onErrorDropped(late, ((CoreSubscriber<?>) s).currentContext());
					}
				}
			}));
		}

		@Override
		public String getName() {
			return "late-failing-model";
		}

		@Override
		public int getOrder() {
			return AiGuardAdvisor.DEFAULT_ORDER + 1;
		}
	}

	@ParameterizedTest(name = "late error signalled: {0}")
	@ValueSource(booleans = { true, false })
	void anAbandonedStreamsLateErrorIsNotDroppedAsAnError(boolean signalled) {
		ChatClient chat = ChatClient.builder(ai.model)
			.defaultAdvisors(AiGuardAdvisor.of(policy().stall(StallSpec.defaults().idleTimeout(DEADLINE)).build()),
					new LateFailingModel(signalled))
			.build();

		StepVerifier.create(chat.prompt("Hello").stream().content())
			.expectNextCount(3)
			.expectError(PartialStreamException.class)
			.verify(WAIT);

		assertThat(lateErrorHandled()).contains("an abandoned attempt ended with").doesNotContain("sk-late");
		assertThat(errors()).isEmpty();
	}

	/** @return the advisor's DEBUG line about the late error, once it is logged */
	private String lateErrorHandled() {
		return Flux.interval(Duration.ofMillis(10))
			.concatMapIterable(i -> List.copyOf(events.list))
			.filter(e -> e.getLevel() == Level.DEBUG && e.getLoggerName().equals(AiGuardAdvisor.class.getName()))
			.map(ILoggingEvent::getFormattedMessage)
			.blockFirst(SpringAiMock.SDK_TIMEOUT.plus(WAIT));
	}

	private List<String> errors() {
		return events.list.stream()
			.filter(e -> e.getLevel().isGreaterOrEqual(Level.ERROR))
			.map(e -> e.getLoggerName() + ": " + e.getFormattedMessage())
			.toList();
	}
}
