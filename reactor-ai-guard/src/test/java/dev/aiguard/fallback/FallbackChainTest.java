package dev.aiguard.fallback;

import java.time.Duration;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;

import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.scheduler.Schedulers;
import reactor.test.scheduler.VirtualTimeScheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import dev.aiguard.core.Source;

class FallbackChainTest {

	static final Fallback<String> STATIC = Fallback.staticAnswer(List.of("sorry"));
	static final Fallback<String> LIGHT = Fallback.lightweight(r -> Flux.just("faq"));

	@Test
	void aChainNeedsAtLeastOneStep() {
		assertThatThrownBy(() -> FallbackChain.<String>builder().build())
				.isInstanceOf(IllegalArgumentException.class)
				.hasMessage("steps must hold at least one step, was []");
	}

	@Test
	void staticMustBeTheLastStep() {
		assertThatThrownBy(() -> FallbackChain.<String>builder().step(LIGHT).step(STATIC).step(LIGHT).build())
				.isInstanceOf(IllegalArgumentException.class)
				.hasMessageStartingWith("steps[1] is STATIC but not last of 3 steps");
		assertThat(FallbackChain.<String>builder().step(LIGHT).step(STATIC).build().steps()).containsExactly(LIGHT, STATIC);
	}

	@Test
	void stepsMustNotBeNullOrRealtime() {
		assertThatThrownBy(() -> FallbackChain.<String>builder().step(null))
				.isInstanceOf(IllegalArgumentException.class)
				.hasMessage("step must not be null");
		Fallback<String> realtime = TestStep.of(Source.REALTIME, Flux::empty);
		assertThatThrownBy(() -> FallbackChain.<String>builder().step(realtime))
				.isInstanceOf(IllegalArgumentException.class)
				.hasMessageStartingWith("step source must be FALLBACK_MODEL, CACHE, LIGHTWEIGHT or STATIC, was REALTIME");
		Fallback<String> sourceless = TestStep.of(null, Flux::empty);
		assertThatThrownBy(() -> FallbackChain.<String>builder().step(sourceless))
				.isInstanceOf(IllegalArgumentException.class)
				.hasMessageContaining("was null");
	}

	@Test
	void timeoutMustBePositive() {
		FallbackChain.Builder<String> b = FallbackChain.builder();
		assertThatThrownBy(() -> b.timeout(Duration.ZERO)).isInstanceOf(IllegalArgumentException.class)
				.hasMessage("timeout must be > 0, was PT0S");
		assertThatThrownBy(() -> b.timeout(Duration.ofSeconds(-1))).isInstanceOf(IllegalArgumentException.class)
				.hasMessage("timeout must be > 0, was PT-1S");
		assertThatThrownBy(() -> b.timeout(null)).isInstanceOf(IllegalArgumentException.class)
				.hasMessage("timeout must be > 0, was null");
		assertThatThrownBy(() -> b.timer(null)).isInstanceOf(IllegalArgumentException.class)
				.hasMessage("timer must not be null");
	}

	@Test
	void triggersMustNameAtLeastOne() {
		FallbackChain.Builder<String> b = FallbackChain.builder();
		assertThatThrownBy(() -> b.triggers(EnumSet.noneOf(FallbackTrigger.class)))
				.isInstanceOf(IllegalArgumentException.class)
				.hasMessage("triggers must name at least one trigger and no null, was []");
		assertThatThrownBy(() -> b.triggers(new java.util.HashSet<>(java.util.Arrays.asList(FallbackTrigger.REJECTED, null))))
				.isInstanceOf(IllegalArgumentException.class)
				.hasMessageContaining("no null");
		assertThatThrownBy(() -> b.triggers(null))
				.isInstanceOf(IllegalArgumentException.class)
				.hasMessage("triggers must name at least one trigger and no null, was null");
	}

	@Test
	void clientErrorsDoNotEnterTheLadderByDefault() {
		FallbackChain<String> chain = FallbackChain.<String>builder().step(STATIC).build();
		assertThat(chain.triggers()).containsExactlyInAnyOrder(FallbackTrigger.BREAKER_OPEN, FallbackTrigger.REJECTED,
				FallbackTrigger.BUDGET, FallbackTrigger.RETRIES_EXHAUSTED, FallbackTrigger.STALLED_BEFORE_FIRST_TOKEN, FallbackTrigger.INVALID_OUTPUT,
				FallbackTrigger.LOAD);
		assertThat(chain.isEnteredBy(FallbackTrigger.CLIENT_ERROR)).isFalse();
		assertThat(chain.isEnteredBy(FallbackTrigger.BREAKER_OPEN)).isTrue();
	}

	@Test
	void onlyKeepsTheStepsOfTheGivenSourcesInOrderWithTheSameSettings() {
		Fallback<String> faq = Fallback.lightweight(r -> Flux.just("faq"));
		Fallback<String> rules = Fallback.lightweight(r -> Flux.just("rules"));
		FallbackChain<String> chain = FallbackChain.<String>builder().step(Fallback.model(r -> Flux.just("model")))
				.step(faq).step(rules).step(STATIC)
				.triggers(EnumSet.of(FallbackTrigger.LOAD, FallbackTrigger.REJECTED))
				.timeout(java.time.Duration.ofSeconds(2))
				.build();

		FallbackChain<String> cheap = chain.only(EnumSet.of(Source.LIGHTWEIGHT)).orElseThrow();
		assertThat(cheap.steps()).containsExactly(faq, rules);
		assertThat(cheap.triggers()).isEqualTo(chain.triggers());
		assertThat(cheap.timeout()).isEqualTo(chain.timeout());
		assertThat(chain.only(EnumSet.of(Source.STATIC)).orElseThrow().steps()).containsExactly(STATIC);
		assertThat(chain.only(EnumSet.of(Source.CACHE))).isEmpty();
		assertThat(chain.steps()).as("the chain itself is unchanged").hasSize(4);
	}

	@Test
	void triggersAreConfigurable() {
		FallbackChain<String> chain = FallbackChain.<String>builder().step(STATIC)
				.triggers(Set.of(FallbackTrigger.CLIENT_ERROR, FallbackTrigger.REJECTED))
				.build();
		assertThat(chain.isEnteredBy(FallbackTrigger.CLIENT_ERROR)).isTrue();
		assertThat(chain.isEnteredBy(FallbackTrigger.REJECTED)).isTrue();
		assertThat(chain.isEnteredBy(FallbackTrigger.BREAKER_OPEN)).isFalse();
	}

	@Test
	void chainIsImmutableAndDerivable() {
		EnumSet<FallbackTrigger> triggers = EnumSet.of(FallbackTrigger.REJECTED);
		FallbackChain.Builder<String> b = FallbackChain.<String>builder().step(LIGHT).triggers(triggers);
		FallbackChain<String> chain = b.build();
		triggers.add(FallbackTrigger.BREAKER_OPEN);
		b.step(STATIC);
		assertThat(chain.steps()).containsExactly(LIGHT);
		assertThat(chain.triggers()).containsExactly(FallbackTrigger.REJECTED);
		assertThatThrownBy(() -> chain.steps().add(STATIC)).isInstanceOf(UnsupportedOperationException.class);
		assertThatThrownBy(() -> chain.triggers().add(FallbackTrigger.CLIENT_ERROR))
				.isInstanceOf(UnsupportedOperationException.class);

		FallbackChain<String> variant = chain.toBuilder().step(STATIC).timeout(Duration.ofSeconds(1)).build();
		assertThat(variant.steps()).containsExactly(LIGHT, STATIC);
		assertThat(variant.triggers()).containsExactly(FallbackTrigger.REJECTED);
		assertThat(variant.timeout()).contains(Duration.ofSeconds(1));
		assertThat(chain.timeout()).isEmpty();
	}

	@Test
	void timerIsTheInjectedOneElseParallelAsOfNow() {
		VirtualTimeScheduler clock = VirtualTimeScheduler.create();
		try {
			assertThat(FallbackChain.<String>builder().step(STATIC).timer(clock).build().timer()).isSameAs(clock);
			assertThat(FallbackChain.<String>builder().step(STATIC).build().timer()).isSameAs(Schedulers.parallel());
		}
		finally {
			clock.dispose();
		}
	}

	@Test
	void walkArgumentsAreChecked() {
		FallbackChain<String> chain = FallbackChain.<String>builder().step(STATIC).build();
		assertThatThrownBy(() -> chain.answer(null)).isInstanceOf(NullPointerException.class).hasMessage("request");
	}
}
