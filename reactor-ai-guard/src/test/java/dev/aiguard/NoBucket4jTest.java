package dev.aiguard;

import java.math.BigDecimal;
import java.util.List;

import dev.aiguard.budget.BudgetSpec;
import dev.aiguard.budget.PriceTable;
import dev.aiguard.budget.TenantLimits;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.chat.Usage;
import dev.aiguard.testing.Reports;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.test.StepVerifier;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Runs in its own Surefire execution with Bucket4j removed from the classpath (see the module's
 * pom): the guard, and the budget features that need no buckets (caps, prices), work without the
 * optional dependency, and a budget that needs buckets says at build() what is missing.
 */
class NoBucket4jTest {

	@Test
	void bucket4jIsReallyAbsent() {
		assertThatThrownBy(() -> Class.forName("io.github.bucket4j.Bucket")).isInstanceOf(ClassNotFoundException.class);
	}

	@Test
	void aGuardWithoutBudgetsWorks() {
		StepVerifier.create(Flux.just(ChatChunk.token("hi"), ChatChunk.done()).transform(AiGuard.of(
				GuardPolicy.builder("no-bucket4j").build())))
				.expectNextCount(2).verifyComplete();
	}

	@Test
	void capsAndPricesNeedNoBuckets() {
		Reports reports = new Reports();
		AiGuard<ChatChunk> guard = AiGuard.of(GuardPolicy.builder("caps").onReport(reports)
				.budget(BudgetSpec.defaults().outputCap(1).prices(PriceTable.in("USD")
						.model("m", new BigDecimal("1"), new BigDecimal("2"))))
				.build());
		StepVerifier.create(guard.call(ChatRequest.of("m", List.of(ChatMessage.user("hello"))),
				r -> Flux.just(ChatChunk.usage(new Usage(1_000_000, 0)), ChatChunk.token("a"), ChatChunk.token("b"))))
				.expectNextCount(2).verifyComplete();
		assertThat(reports.last().outputCapped()).isTrue();
		assertThat(reports.last().spend().cost()).isEqualByComparingTo("1");
		assertThat(guard.policy().bucketStore()).isNull();
	}

	@Test
	void aBudgetThatNeedsBucketsNamesTheMissingDependencyAtBuild() {
		assertThatThrownBy(() -> GuardPolicy.builder("tenants")
				.budget(BudgetSpec.defaults().tenants(TenantLimits.unlimited().requestsPerMinute(1)))
				.build())
				.isInstanceOf(IllegalArgumentException.class)
				.hasMessageContaining("com.bucket4j:bucket4j_jdk17-core")
				.hasMessageContaining("budget needs a bucketStore(..)");
	}
}
