package dev.aiguard.breaker;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class BreakerSpecTest {

	@Test
	void noneAsksNoBreaker() {
		BreakerSpec spec = BreakerSpec.none();
		assertThat(spec.breaker()).isNull();
		assertThat(spec.config()).isNull();
		assertThat(spec.path()).isNull();
	}

	@Test
	void everySetterNamesTheBreakerField() {
		BreakerSpec spec = BreakerSpec.none();
		assertThatThrownBy(() -> spec.breaker(null)).isInstanceOf(IllegalArgumentException.class)
				.hasMessage("breaker must not be null");
		assertThatThrownBy(() -> spec.config(null)).isInstanceOf(IllegalArgumentException.class)
				.hasMessage("breaker must not be null");
		assertThatThrownBy(() -> spec.path(null)).isInstanceOf(IllegalArgumentException.class)
				.hasMessage("breaker must not be null");
	}

	@Test
	void theLastChoiceClearsTheOthers() {
		CircuitBreaker shared = CircuitBreaker.builder("shared").build();
		BreakerConfig config = BreakerConfig.defaults();
		BreakerPath path = BreakerTree.builder("llm").provider("p", "e").build().path("p", "e");

		BreakerSpec own = BreakerSpec.none().breaker(shared).config(config);
		assertThat(own.config()).isSameAs(config);
		assertThat(own.breaker()).isNull();
		assertThat(own.path()).isNull();

		BreakerSpec tree = own.path(path);
		assertThat(tree.path()).isSameAs(path);
		assertThat(tree.config()).isNull();
		assertThat(tree.breaker()).isNull();

		BreakerSpec back = tree.breaker(shared);
		assertThat(back.breaker()).isSameAs(shared);
		assertThat(back.path()).isNull();
		assertThat(back.config()).isNull();
		// the template each spec was derived from is unchanged
		assertThat(own.config()).isSameAs(config);
		assertThat(tree.path()).isSameAs(path);
	}
}
