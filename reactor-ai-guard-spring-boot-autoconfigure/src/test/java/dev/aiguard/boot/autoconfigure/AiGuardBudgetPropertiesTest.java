package dev.aiguard.boot.autoconfigure;

import java.math.BigDecimal;
import java.time.Duration;
import java.util.List;

import dev.aiguard.AiGuard;
import dev.aiguard.GuardPolicy;
import dev.aiguard.admission.AdmissionRejectedException;
import dev.aiguard.budget.BucketStore;
import dev.aiguard.budget.BudgetSpec;
import dev.aiguard.budget.LocalBucketStore;
import dev.aiguard.budget.PromptCapAction;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.core.Priority;
import dev.aiguard.core.Tenant;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import reactor.core.publisher.Flux;
import reactor.test.StepVerifier;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code aiguard.budgets.*} and {@code aiguard.policies.<name>.budget}: the budget a policy gets
 * from properties, the bucket store the policies share (the in-process one, or the application's),
 * a refusal through a guard built from properties, and values that fail startup naming their
 * property.
 */
class AiGuardBudgetPropertiesTest {

	private static final String AT = "aiguard.budgets";

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(AiGuardAutoConfiguration.class));

	@Test
	void aPolicyWithoutBudgetHasNone() {
		runner.withPropertyValues("aiguard.policies.chat.default-priority=P1", AT + ".tenant.requests-per-minute=5")
			.run(context -> assertThat(context.getBean(AiGuardRegistry.class).guard("chat").policy().budget()).isNull());
	}

	@Test
	void thePropertiesGiveThePolicyItsBudget() {
		runner.withPropertyValues("aiguard.policies.chat.budget=true", AT + ".prompt-cap=8000",
				AT + ".on-prompt-over-cap=truncate", AT + ".output-cap=2000", AT + ".currency=EUR",
				AT + ".prices.gpt-4o-mini.input=0.15", AT + ".prices.gpt-4o-mini.output=0.60",
				AT + ".tenant.requests-per-minute=60", AT + ".tenant.tokens-per-minute=40000",
				AT + ".tenant.cost-per-day=5", AT + ".tenants.acme.requests-per-minute=600", AT + ".reserves.p0=0.1",
				AT + ".provider.key=openai-main", AT + ".provider.requests-per-minute=500",
				AT + ".provider.tokens-per-minute=200000", AT + ".max-wait=5s", AT + ".default-tenant=anonymous",
				AT + ".default-model=gpt-4o-mini")
			.run(context -> {
				GuardPolicy policy = context.getBean(AiGuardRegistry.class).guard("chat").policy();
				BudgetSpec budget = policy.budget();
				assertThat(budget.promptCap()).isEqualTo(8000);
				assertThat(budget.promptCapAction()).isEqualTo(PromptCapAction.TRUNCATE);
				assertThat(budget.outputCap()).isEqualTo(2000);
				assertThat(budget.prices().currency()).isEqualTo("EUR");
				assertThat(budget.prices().cost("gpt-4o-mini", 1_000_000, 1_000_000)).isEqualByComparingTo("0.75");
				assertThat(budget.tenants().requestsPerMinute()).isEqualTo(60);
				assertThat(budget.tenants().tokensPerMinute()).isEqualTo(40_000);
				assertThat(budget.tenants().costPerDay()).isEqualByComparingTo(new BigDecimal("5"));
				assertThat(budget.limitsOf("acme").requestsPerMinute()).isEqualTo(600);
				assertThat(budget.reserves()).containsEntry(Priority.P0, 0.1);
				assertThat(budget.providerKey()).isEqualTo("openai-main");
				assertThat(budget.provider().tokensPerMinute()).isEqualTo(200_000);
				assertThat(budget.maxWait()).isEqualTo(Duration.ofSeconds(5));
				assertThat(budget.defaultTenant()).isEqualTo("anonymous");
				assertThat(budget.defaultModel()).isEqualTo("gpt-4o-mini");
				assertThat(policy.bucketStore()).isSameAs(context.getBean(BucketStore.class))
					.isInstanceOf(LocalBucketStore.class);
			});
	}

	@Test
	void theTenantBoundsComeFromThePropertiesAndTheEndpointSummarisesTenants() {
		runner.withBean(io.micrometer.core.instrument.MeterRegistry.class,
				io.micrometer.core.instrument.simple.SimpleMeterRegistry::new)
			.withPropertyValues("aiguard.policies.chat.budget=true", AT + ".tenant.requests-per-minute=60",
					AT + ".tenant-idle=2m", AT + ".max-tenants=3", AT + ".tenant-series=1")
			.run(context -> {
				GuardPolicy policy = context.getBean(AiGuardRegistry.class).guard("chat").policy();
				assertThat(policy.budget().tenantIdle()).isEqualTo(Duration.ofMinutes(2));
				assertThat(policy.budget().maxTenants()).isEqualTo(3);
				for (int i = 0; i < 20; i++) {
					policy.budgetGate().admit(policy.budgetGate().tenant("t" + i), Priority.P1, 1, 0,
							new dev.aiguard.budget.BudgetGate.Admission() {
								@Override
								public void budgetAdmitted(long tokensTaken, long costTaken) {
								}

								@Override
								public void budgetRefused(AdmissionRejectedException refusal) {
								}
							});
				}
				@SuppressWarnings("unchecked")
				java.util.Map<String, Object> view = (java.util.Map<String, Object>) AiGuardEndpoint
					.budget(policy.budgetGate().summary(AiGuardEndpoint.TOP_TENANTS));
				assertThat(view).containsEntry("tenants", 3).containsEntry("maxTenants", 3);
				assertThat((List<?>) view.get("mostDrained")).hasSize(3);
				io.micrometer.core.instrument.MeterRegistry meters = context
					.getBean(io.micrometer.core.instrument.MeterRegistry.class);
				assertThat(meters.getMeters()).filteredOn(m -> m.getId().getName().startsWith("aiguard.budget.remaining.")
					&& "tenant".equals(m.getId().getTag("scope"))).hasSizeLessThanOrEqualTo(1);
			});
	}

	@Test
	void badTenantBoundsFailStartupNamingTheirProperty() {
		runner.withPropertyValues("aiguard.policies.chat.budget=true", AT + ".tenant.requests-per-minute=60",
				AT + ".max-tenants=0")
			.run(context -> assertThat(context).hasFailed()
				.getFailure()
				.hasStackTraceContaining("aiguard.budgets.max-tenants"));
		runner.withBean(io.micrometer.core.instrument.MeterRegistry.class,
				io.micrometer.core.instrument.simple.SimpleMeterRegistry::new)
			.withPropertyValues("aiguard.policies.chat.budget=true", AT + ".tenant-series=-1")
			.run(context -> assertThat(context).hasFailed()
				.getFailure()
				.hasStackTraceContaining("aiguard.budgets.tenant-series"));
	}

	@Test
	void everyPolicySharesTheContextsStoreAndAnApplicationsOwnReplacesIt() {
		LocalBucketStore own = LocalBucketStore.create();
		runner.withBean("myStore", BucketStore.class, () -> own)
			.withPropertyValues("aiguard.policies.a.budget=true", "aiguard.policies.b.budget=true",
					AT + ".tenant.requests-per-minute=1")
			.run(context -> {
				AiGuardRegistry registry = context.getBean(AiGuardRegistry.class);
				assertThat(registry.guard("a").policy().bucketStore()).isSameAs(own);
				assertThat(registry.guard("b").policy().bucketStore()).isSameAs(own);
				assertThat(context).doesNotHaveBean("aiGuardBucketStore");
			});
	}

	@Test
	void aTenantOverItsBudgetIsRefusedThroughTheConfiguredGuard() {
		runner.withPropertyValues("aiguard.policies.chat.budget=true", AT + ".tenant.requests-per-minute=1")
			.run(context -> {
				AiGuard<ChatChunk> guard = context.getBean(AiGuardRegistry.class).guard("chat");
				ChatRequest request = ChatRequest.of("m", List.of(ChatMessage.user("hi")));
				StepVerifier.create(guard.call(request, r -> Flux.just(ChatChunk.token("hi"), ChatChunk.done()))
						.contextWrite(Tenant.of("acme").asContext()))
					.expectNextCount(2).verifyComplete();
				StepVerifier.create(guard.call(request, r -> Flux.just(ChatChunk.token("hi"), ChatChunk.done()))
						.contextWrite(Tenant.of("acme").asContext()))
					.expectErrorSatisfies(e -> assertThat(((AdmissionRejectedException) e).reason())
						.isEqualTo(AdmissionRejectedException.Reason.BUDGET))
					.verify(Duration.ofSeconds(1));
			});
	}

	@Test
	void badValuesFailStartupNamingTheProperty() {
		refused(AT + ".reserves.p0", "1.5", AT + ".reserves.p0", AT + ".tenant.requests-per-minute=5");
		refused(AT + ".reserves.p9", "0.1", AT + ".reserves.p9", AT + ".tenant.requests-per-minute=5");
		refused(AT + ".tenant.requests-per-minute", "0", AT + ".tenant.requests-per-minute");
		refused(AT + ".on-prompt-over-cap", "shorten", AT + ".on-prompt-over-cap");
		refused(AT + ".prices.m.input", "0.1", AT + ".prices.m.output");
		refused(AT + ".provider.requests-per-minute", "10", AT + ".provider.key");
		refused(AT + ".encodings.gpt-4o", "no_such_encoding", AT + ".encodings.gpt-4o");
		refused(AT + ".output-cap", "-1", AT + ".output-cap");
	}

	private void refused(String property, String value, String named, String... others) {
		runner.withPropertyValues("aiguard.policies.chat.budget=true", property + "=" + value).withPropertyValues(others)
			.run(context -> {
				assertThat(context).hasFailed();
				Throwable failure = context.getStartupFailure();
				InvalidGuardPropertyException e = null;
				for (Throwable t = failure; t != null; t = t.getCause()) {
					if (t instanceof InvalidGuardPropertyException found) {
						e = found;
						break;
					}
				}
				assertThat(e).as("an InvalidGuardPropertyException in %s", failure).isNotNull();
				assertThat(e.property()).isEqualTo(named);
				assertThat(e.getMessage()).contains(named);
			});
	}
}
