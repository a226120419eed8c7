package dev.aiguard.boot.starter;

import org.springframework.boot.security.autoconfigure.actuate.web.reactive.EndpointRequest;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.http.HttpMethod;
import org.springframework.security.config.Customizer;
import org.springframework.security.config.web.server.ServerHttpSecurity;
import org.springframework.security.web.server.SecurityWebFilterChain;
import org.springframework.security.web.server.context.NoOpServerSecurityContextRepository;

/**
 * The Actuator's security as docs/spring-boot.md recommends it: health for anyone (details by role,
 * {@code management.endpoint.health.show-details}), every other read for operators and
 * administrators, every write ({@code POST /actuator/aiguard/...}) for administrators only.
 */
@Configuration(proxyBeanMethods = false)
class ActuatorSecurity {

	@Bean
	SecurityWebFilterChain actuatorFilterChain(ServerHttpSecurity http) {
		return http.securityMatcher(EndpointRequest.toAnyEndpoint())
			.authorizeExchange(exchanges -> exchanges
				.matchers(EndpointRequest.to("health")).permitAll()
				.matchers(EndpointRequest.toAnyEndpoint().withHttpMethod(HttpMethod.GET))
					.hasAnyRole("AIGUARD_OPS", "AIGUARD_ADMIN")
				.anyExchange().hasRole("AIGUARD_ADMIN"))
			.httpBasic(Customizer.withDefaults())
			// no session cookie: each call carries its own credentials, so CSRF tokens add nothing here
			.securityContextRepository(NoOpServerSecurityContextRepository.getInstance())
			.csrf(ServerHttpSecurity.CsrfSpec::disable)
			.build();
	}
}
