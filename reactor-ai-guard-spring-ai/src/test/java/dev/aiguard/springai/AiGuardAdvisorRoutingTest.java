package dev.aiguard.springai;

import java.util.List;

import dev.aiguard.GuardReport;
import dev.aiguard.core.Outcome;
import dev.aiguard.core.Priority;
import dev.aiguard.core.Tenant;
import org.junit.jupiter.api.Test;
import org.springframework.ai.chat.client.ChatClient;
import reactor.test.StepVerifier;
import reactor.util.context.Context;

import static dev.aiguard.springai.SpringAiMock.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Priority and tenant of a request: the advisor parameters win over the Reactor {@code Context}; the
 * values in force reach the guard (its report) and the advisors behind it.
 */
class AiGuardAdvisorRoutingTest extends AdvisorFixture {

	private final ChatClient chat;

	AiGuardAdvisorRoutingTest() {
		super("spring-ai-routing");
		chat = client(policy().defaultPriority(Priority.P1).build());
	}

	@Test
	void streamTakesPriorityAndTenantFromTheAdvisorParameters() {
		chat.prompt("Hello")
			.advisors(a -> a.param(AiGuardAdvisor.PRIORITY, Priority.P0).param(AiGuardAdvisor.TENANT, Tenant.of("acme")))
			.stream().content().blockLast(WAIT);

		assertThat(reports.next().block(WAIT).priority()).isEqualTo(Priority.P0);
		SpringAiMock.Probe.Attempt attempt = probe.attempts.get(0);
		assertThat(attempt.priority()).isEqualTo(Priority.P0);
		assertThat(attempt.tenant()).isEqualTo(Tenant.of("acme"));
		assertThat(attempt.params()).containsEntry(AiGuardAdvisor.PRIORITY, Priority.P0)
			.containsEntry(AiGuardAdvisor.TENANT, Tenant.of("acme"));
	}

	@Test
	void streamTakesPriorityAndTenantFromTheReactorContext() {
		chat.prompt("Hello").stream().content()
			.contextWrite(Priority.P2.asContext().putAll(Tenant.of("globex").asContext().readOnly()))
			.blockLast(WAIT);

		assertThat(reports.next().block(WAIT).priority()).isEqualTo(Priority.P2);
		SpringAiMock.Probe.Attempt attempt = probe.attempts.get(0);
		assertThat(attempt.priority()).isEqualTo(Priority.P2);
		assertThat(attempt.tenant()).isEqualTo(Tenant.of("globex"));
		assertThat(attempt.params()).containsEntry(AiGuardAdvisor.PRIORITY, Priority.P2)
			.containsEntry(AiGuardAdvisor.TENANT, Tenant.of("globex"));
	}

	@Test
	void parametersWinOverTheReactorContextAndNamesWork() {
		chat.prompt("Hello")
			.advisors(a -> a.param(AiGuardAdvisor.PRIORITY, "p0").param(AiGuardAdvisor.TENANT, "initech"))
			.stream().content()
			.contextWrite(Context.of(Priority.CONTEXT_KEY, Priority.P2, Tenant.CONTEXT_KEY, Tenant.of("globex")))
			.blockLast(WAIT);

		assertThat(reports.next().block(WAIT).priority()).isEqualTo(Priority.P0);
		assertThat(probe.attempts.get(0).priority()).isEqualTo(Priority.P0);
		assertThat(probe.attempts.get(0).tenant()).isEqualTo(Tenant.of("initech"));
	}

	@Test
	void withNeitherThePoliciesDefaultPriorityApplies() {
		chat.prompt("Hello").stream().content().blockLast(WAIT);

		assertThat(reports.next().block(WAIT).priority()).isEqualTo(Priority.P1);
		assertThat(probe.attempts.get(0).params()).doesNotContainKeys(AiGuardAdvisor.PRIORITY, AiGuardAdvisor.TENANT);
	}

	@Test
	void callTakesPriorityAndTenantFromTheAdvisorParameters() {
		chat.prompt("Hello")
			.advisors(a -> a.param(AiGuardAdvisor.PRIORITY, Priority.P2).param(AiGuardAdvisor.TENANT, Tenant.of("acme")))
			.call().content();

		assertThat(reports.next().block(WAIT).priority()).isEqualTo(Priority.P2);
		assertThat(probe.attempts.get(0).params()).containsEntry(AiGuardAdvisor.PRIORITY, Priority.P2)
			.containsEntry(AiGuardAdvisor.TENANT, Tenant.of("acme"));
	}

	@Test
	void aParameterOfTheWrongTypeIsAnErrorNamingIt() {
		StepVerifier.create(chat.prompt("Hello").advisors(a -> a.param(AiGuardAdvisor.PRIORITY, 0)).stream().content())
			.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(IllegalArgumentException.class)
				.hasMessageContaining(AiGuardAdvisor.PRIORITY).hasMessageContaining("java.lang.Integer"))
			.verify(WAIT);
		assertThatThrownBy(() -> chat.prompt("Hello").advisors(a -> a.param(AiGuardAdvisor.PRIORITY, "P7")).call().content())
			.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("P7");
		assertThatThrownBy(() -> chat.prompt("Hello").advisors(a -> a.param(AiGuardAdvisor.TENANT, List.of())).call()
			.content())
			.isInstanceOf(IllegalArgumentException.class).hasMessageContaining(AiGuardAdvisor.TENANT);
		assertThat(probe.attempts).isEmpty();
	}

	@Test
	void anUnreadablePriorityInTheContextIsRejectedByTheGuard() {
		StepVerifier.create(chat.prompt("Hello").stream().content().contextWrite(Context.of(Priority.CONTEXT_KEY, 42)))
			.expectError(IllegalArgumentException.class)
			.verify(WAIT);

		GuardReport report = reports.next().block(WAIT);
		assertThat(report.outcome()).isEqualTo(Outcome.REJECTED);
		assertThat(probe.attempts).isEmpty();
	}
}
