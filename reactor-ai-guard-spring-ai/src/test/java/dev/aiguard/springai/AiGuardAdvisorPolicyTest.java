package dev.aiguard.springai;

import java.time.Duration;
import java.util.List;

import dev.aiguard.GuardPolicy;
import dev.aiguard.GuardReport;
import dev.aiguard.core.Outcome;
import dev.aiguard.core.Source;
import dev.aiguard.fallback.Fallback;
import dev.aiguard.fallback.FallbackChain;
import dev.aiguard.fallback.ResponseCache;
import dev.aiguard.retry.ContinuationStrategy;
import dev.aiguard.retry.MidStreamPolicy;
import dev.aiguard.stall.StallSpec;
import dev.aiguard.chat.ChatChunk;
import org.junit.jupiter.api.Test;
import org.springframework.ai.chat.client.ChatClient;
import org.springframework.ai.chat.client.ChatClientResponse;
import org.springframework.core.Ordered;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;
import reactor.test.StepVerifier;

import static dev.aiguard.springai.SpringAiMock.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** What the advisor makes of a policy's fallbacks and notices, and the policies it refuses. */
class AiGuardAdvisorPolicyTest extends AdvisorFixture {

	AiGuardAdvisorPolicyTest() {
		super("spring-ai-policy");
	}

	@Test
	void aStaticFallbackStreamsAsSpringAiResponses() {
		ai.mock.faults(ai.mock.faults().withErrors(1.0, 500, 0));
		ChatClient chat = ChatClient.builder(ai.model).defaultAdvisors(AiGuardAdvisor.of(policy()
			.fallback(FallbackChain.<ChatChunk>builder().step(Fallback.staticText("Busy, try again.")).build())
			.build())).build();

		List<ChatClientResponse> responses = chat.prompt("Hello").stream().chatClientResponse().collectList().block(WAIT);

		assertThat(responses).extracting(r -> r.chatResponse().getResult().getOutput().getText())
			.containsExactly("Busy, ", "try ", "again.", "");
		assertThat(responses.get(3).chatResponse().getResult().getMetadata().getFinishReason()).isEqualTo("STOP");
		GuardReport report = reports.next().block(WAIT);
		assertThat(report.source()).isEqualTo(Source.STATIC);
	}

	@Test
	void aMidStreamNoticeEndsAStalledAnswer() {
		ai.mock.faults(ai.mock.faults().withStallAfter(2));
		ChatClient chat = ChatClient.builder(ai.model).defaultAdvisors(AiGuardAdvisor.of(policy()
			.stall(StallSpec.defaults().idleTimeout(Duration.ofMillis(300)))
			.midStream(MidStreamPolicy.notice(" [interrupted]"))
			.build())).build();

		StepVerifier.create(chat.prompt("Hello").stream().content())
			.expectNextCount(2)
			.expectNext(" [interrupted]")
			.verifyComplete();
		assertThat(reports.next().block(WAIT).outcome()).isEqualTo(Outcome.STALLED);
		assertThat(ai.noneInProgress().block(WAIT)).isZero();
	}

	@Test
	void theDefaultsPlaceTheAdvisorJustBeforeTheModel() {
		AiGuardAdvisor advisor = AiGuardAdvisor.of(policy().build());

		assertThat(advisor.getName()).isEqualTo(AiGuardAdvisor.DEFAULT_NAME);
		assertThat(advisor.getOrder()).isEqualTo(Ordered.LOWEST_PRECEDENCE - 1000);
		AiGuardAdvisor named = AiGuardAdvisor.builder(policy().build()).name("guard").order(5)
			.callScheduler(Schedulers.boundedElastic()).build();
		assertThat(named.getName()).isEqualTo("guard");
		assertThat(named.getOrder()).isEqualTo(5);
		assertThat(named.policy().name()).isEqualTo("spring-ai-policy");
	}

	@Test
	void aPolicyTheAdvisorCannotAnswerWithIsRefusedNamingTheComponent() {
		GuardPolicy strings = policy()
			.fallback(FallbackChain.<String>builder().step(Fallback.staticAnswer(List.of("busy"))).build()).build();
		assertThatThrownBy(() -> AiGuardAdvisor.of(strings)).isInstanceOf(IllegalArgumentException.class)
			.hasMessageContaining("fallback step").hasMessageContaining("java.lang.String");

		GuardPolicy continuing = policy().midStream(MidStreamPolicy.continueWith(ContinuationStrategy.ASSISTANT_PREFILL, 1))
			.build();
		assertThatThrownBy(() -> AiGuardAdvisor.of(continuing)).isInstanceOf(IllegalArgumentException.class)
			.hasMessageContaining("continue");

		GuardPolicy chunkCache = policy().responseCache(new ChatChunkCache()).build();
		assertThatThrownBy(() -> AiGuardAdvisor.of(chunkCache)).isInstanceOf(IllegalArgumentException.class)
			.hasMessageContaining("response cache");

		assertThatThrownBy(() -> AiGuardAdvisor.builder(policy().build()).name(" "))
			.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("name");
		assertThatThrownBy(() -> AiGuardAdvisor.builder(policy().build()).inspector(null))
			.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("inspector");
	}

	@Test
	void aFallbackOfSpringAiResponsesIsAccepted() {
		ai.mock.faults(ai.mock.faults().withErrors(1.0, 500, 0));
		org.springframework.ai.chat.model.ChatResponse cached = new org.springframework.ai.chat.model.ChatResponse(
				List.of(new org.springframework.ai.chat.model.Generation(
						new org.springframework.ai.chat.messages.AssistantMessage("From the FAQ."),
						org.springframework.ai.chat.metadata.ChatGenerationMetadata.builder().finishReason("STOP").build())));
		ChatClient chat = ChatClient.builder(ai.model).defaultAdvisors(AiGuardAdvisor.of(policy()
			.fallback(FallbackChain.builder().step(Fallback.lightweight(req -> Flux.just(cached), false)).build())
			.build())).build();

		assertThat(chat.prompt("Hello").call().content()).isEqualTo("From the FAQ.");
		assertThat(reports.next().block(WAIT).source()).isEqualTo(Source.LIGHTWEIGHT);
	}

	/** A cache of the library's chunks, which the advisor's answers are not. */
	private static final class ChatChunkCache implements ResponseCache<ChatChunk> {

		@Override
		public Mono<List<ChatChunk>> lookup(Object key) {
			return Mono.empty();
		}

		@Override
		public void store(Object key, List<ChatChunk> chunks) {
		}

		@Override
		public Class<?> chunkType() {
			return ChatChunk.class;
		}
	}
}
