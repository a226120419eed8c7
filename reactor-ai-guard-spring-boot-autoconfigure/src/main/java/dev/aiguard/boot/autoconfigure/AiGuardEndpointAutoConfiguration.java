package dev.aiguard.boot.autoconfigure;

import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.actuate.audit.AuditEventRepository;
import org.springframework.boot.actuate.autoconfigure.endpoint.condition.ConditionalOnAvailableEndpoint;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;

/**
 * The {@code aiguard} Actuator endpoint, when Actuator is on the class path, the guards are
 * configured and the endpoint is exposed ({@code management.endpoints.web.exposure.include}).
 */
@AutoConfiguration(after = AiGuardAutoConfiguration.class,
		afterName = "org.springframework.boot.actuate.autoconfigure.audit.AuditAutoConfiguration")
@ConditionalOnClass(name = "org.springframework.boot.actuate.autoconfigure.endpoint.condition.ConditionalOnAvailableEndpoint")
@ConditionalOnBean(AiGuardRegistry.class)
public class AiGuardEndpointAutoConfiguration {

	@Bean
	@ConditionalOnMissingBean
	@ConditionalOnAvailableEndpoint(AiGuardEndpoint.class)
	AiGuardEndpoint aiGuardEndpoint(AiGuardRegistry registry, RecentReports reports,
			ObjectProvider<AuditEventRepository> audit) {
		return new AiGuardEndpoint(registry, reports, audit.getIfAvailable());
	}
}
