package dev.aiguard.core;

import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;
import reactor.util.context.Context;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class TenantTest {

	@Test
	void travelsInTheContextAsATenantOrItsId() {
		StepVerifier.create(Mono.deferContextual(ctx -> Mono.just(Tenant.from(ctx).orElseThrow()))
				.contextWrite(Tenant.of("acme").asContext()))
			.expectNext(Tenant.of("acme"))
			.verifyComplete();
		assertThat(Tenant.from(Context.of(Tenant.CONTEXT_KEY, "globex"))).contains(Tenant.of("globex"));
		assertThat(Tenant.from(Context.empty())).isEmpty();
	}

	@Test
	void badIdsAndBadContextValuesFailNamingTheProblem() {
		assertThatThrownBy(() -> Tenant.of("")).isInstanceOf(IllegalArgumentException.class)
			.hasMessageContaining("1 to 128");
		assertThatThrownBy(() -> Tenant.of("x".repeat(129))).hasMessageContaining("had 129");
		assertThatThrownBy(() -> Tenant.of("a b")).hasMessageContaining("blanks");
		assertThatThrownBy(() -> Tenant.of("a\nb")).hasMessageContaining("'a?b'");
		for (String blank : new String[] { "a\u00a0b", "a\u2007b", "a\u202fb", "a\u3000b", "a\u200bb", "\ufeffab" }) {
			assertThatThrownBy(() -> Tenant.of(blank)).as("%s", blank.codePoints().toArray())
				.isInstanceOf(IllegalArgumentException.class)
				.hasMessageContaining("blanks");
		}
		assertThatThrownBy(() -> Tenant.from(Context.of(Tenant.CONTEXT_KEY, 42)))
			.isInstanceOf(IllegalArgumentException.class)
			.hasMessageContaining("java.lang.Integer");
		assertThat(Tenant.of("acme")).hasToString("acme");
	}
}
