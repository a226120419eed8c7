package dev.aiguard.boot.autoconfigure;

import dev.aiguard.GuardPolicy;

/**
 * Adds to a policy built from properties what properties cannot express: fallback steps that need
 * code (a response cache, another model), an error classifier, report listeners, a response cache.
 * Every customizer bean is called for every policy, in {@code @Order}, after the properties are
 * applied and before {@code build()}.
 *
 * <pre>{@code
 * @Bean
 * AiGuardPolicyCustomizer auditReports(AuditLog log) {
 *     return (name, builder) -> builder.onReport(log::record);
 * }
 * }</pre>
 */
@FunctionalInterface
public interface AiGuardPolicyCustomizer {

	/**
	 * @param policyName the name under {@code aiguard.policies}
	 * @param builder the policy's builder, properties already applied
	 */
	void customize(String policyName, GuardPolicy.Builder builder);
}
