/**
 * Spring Boot auto-configuration of reactor-ai-guard: builds the breakers, the breaker tree, the
 * shared lanes, the load governor and one {@code AiGuard} bean per policy from {@code aiguard.*}
 * ({@link dev.aiguard.boot.autoconfigure.AiGuardProperties}), adds the Actuator endpoint, the
 * health contributor and Micrometer metrics, and fails startup on an invalid or unknown setting
 * with a message naming the property. Adjust a policy in code with
 * {@link dev.aiguard.boot.autoconfigure.AiGuardPolicyCustomizer}.
 */
@NullMarked
package dev.aiguard.boot.autoconfigure;

import org.jspecify.annotations.NullMarked;
