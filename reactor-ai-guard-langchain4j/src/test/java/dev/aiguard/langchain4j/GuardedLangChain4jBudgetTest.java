package dev.aiguard.langchain4j;

import java.util.List;

import dev.aiguard.AiGuard;
import dev.aiguard.GuardPolicy;
import dev.aiguard.admission.AdmissionRejectedException;
import dev.aiguard.budget.BudgetSpec;
import dev.aiguard.budget.TenantLimits;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.core.Tenant;
import dev.aiguard.test.mock.MockModelServer;
import org.junit.jupiter.api.AutoClose;
import org.junit.jupiter.api.Test;
import reactor.test.StepVerifier;

import static dev.aiguard.langchain4j.MockModels.WAIT;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * A tenant's budget works at the guard's seam, whatever client it wraps: through LangChain4j's
 * real OpenAI model, a tenant over its requests per minute is refused with {@code BUDGET} before
 * the model is called, while another tenant is served.
 */
class GuardedLangChain4jBudgetTest {

	@AutoClose
	private final MockModelServer mock = MockModels.startMock();

	private static ChatRequest ask(String question) {
		return ChatRequest.of(null, List.of(ChatMessage.user(question)));
	}

	@Test
	void aTenantOverItsBudgetIsRefusedBeforeTheModelIsCalled() {
		LangChain4jStreams streams = LangChain4jStreams.of(MockModels.openAi(mock));
		AiGuard<ChatChunk> guard = AiGuard.of(GuardPolicy.builder("lc4j-budget")
				.budget(BudgetSpec.defaults().tenants(TenantLimits.unlimited().requestsPerMinute(1)))
				.build());

		List<ChatChunk> first = guard.call(ask("Hello"), streams).contextWrite(Tenant.of("acme").asContext())
				.collectList().block(WAIT);
		assertThat(first).anyMatch(ChatChunk::hasContent);

		StepVerifier.create(guard.call(ask("Hello again"), streams).contextWrite(Tenant.of("acme").asContext()))
				.expectErrorSatisfies(e -> {
					assertThat(e).isInstanceOf(AdmissionRejectedException.class)
							.hasMessageContaining("tenant 'acme' is over its budget of 1 requests per minute");
					assertThat(((AdmissionRejectedException) e).reason()).isEqualTo(AdmissionRejectedException.Reason.BUDGET);
					assertThat(((AdmissionRejectedException) e).retryAfter()).isPresent();
				})
				.verify(WAIT);
		assertThat(mock.stats().requests()).as("the refused request never reached the model").isEqualTo(1);

		List<ChatChunk> other = guard.call(ask("Hello"), streams).contextWrite(Tenant.of("globex").asContext())
				.collectList().block(WAIT);
		assertThat(other).anyMatch(ChatChunk::hasContent);
		assertThat(mock.stats().requests()).isEqualTo(2);
	}
}
