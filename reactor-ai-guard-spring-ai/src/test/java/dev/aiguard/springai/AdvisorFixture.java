package dev.aiguard.springai;

import dev.aiguard.GuardPolicy;
import org.junit.jupiter.api.AutoClose;
import org.springframework.ai.chat.client.ChatClient;

/**
 * What the advisor tests share: a {@link SpringAiMock} of each test's own (closed after the test,
 * also when the test replaced it with another), the reports of the policies it builds, and a
 * {@link SpringAiMock.Probe} behind the guard.
 *
 * <pre>{@code
 * class AiGuardAdvisorCallTest extends AdvisorFixture {
 *     AiGuardAdvisorCallTest() {
 *         super("spring-ai-call");
 *     }
 *
 *     @Test
 *     void aCallIsGuarded() {
 *         ChatClient chat = client(policy().build());
 *         ...
 *     }
 * }
 * }</pre>
 */
abstract class AdvisorFixture {

	@AutoClose
	SpringAiMock ai = new SpringAiMock();
	final SpringAiMock.Reports reports = new SpringAiMock.Reports();
	final SpringAiMock.Probe probe = new SpringAiMock.Probe();
	private final String policyName;

	/** @param policyName the name of every policy {@link #policy()} starts */
	AdvisorFixture(String policyName) {
		this.policyName = policyName;
	}

	/** @return a policy builder with the test class's name whose reports go to {@link #reports} */
	GuardPolicy.Builder policy() {
		return GuardPolicy.builder(policyName).onReport(reports::add);
	}

	/** @return a client of the mock's model, guarded by {@code policy}, with the {@link #probe} behind the guard */
	ChatClient client(GuardPolicy policy) {
		return ChatClient.builder(ai.model).defaultAdvisors(AiGuardAdvisor.of(policy), probe).build();
	}
}
