package dev.aiguard.boot.autoconfigure;

import java.util.List;

import dev.aiguard.AiGuard;
import dev.aiguard.GuardPolicy;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.validation.InvalidOutputException;
import dev.aiguard.validation.OutputValidator;
import dev.aiguard.validation.RepetitionDetector;
import dev.aiguard.validation.Validators;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import reactor.core.publisher.Flux;
import reactor.test.StepVerifier;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code aiguard.policies.<name>.validate.*}: the validators a policy gets from properties, what
 * they do to an answer, and the values that fail startup naming their property.
 */
class AiGuardValidationPropertiesTest {

	private static final String AT = "aiguard.policies.chat.validate";

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(AiGuardAutoConfiguration.class));

	private static ChatRequest ask() {
		return ChatRequest.of(null, List.of(ChatMessage.user("hi")));
	}

	@Test
	void withoutValidatePropertiesAPolicyValidatesNothing() {
		runner.withPropertyValues("aiguard.policies.chat.default-priority=P1").run(context -> {
			GuardPolicy policy = context.getBean(AiGuardRegistry.class).guard("chat").policy();
			assertThat(policy.validators()).isEmpty();
			assertThat(policy.streamingValidators()).isEmpty();
		});
	}

	@Test
	void thePropertiesGiveThePolicyItsValidators() {
		runner.withPropertyValues(AT + ".empty-answer=true", AT + ".finish-reasons=content_filter,length",
				AT + ".repetition.enabled=true", AT + ".repetition.ngram=3", AT + ".repetition.max-period=32",
				AT + ".repetition.min-repeats=4", AT + ".repetition.min-span=40").run(context -> {
					GuardPolicy policy = context.getBean(AiGuardRegistry.class).guard("chat").policy();
					assertThat(policy.validators()).extracting(OutputValidator::name)
						.containsExactly("empty", "finish-reason");
					assertThat(policy.validators().get(0)).isSameAs(Validators.emptyAnswer());
					assertThat(policy.streamingValidators()).singleElement().isInstanceOfSatisfying(
							RepetitionDetector.class, d -> {
								assertThat(d.ngram()).isEqualTo(3);
								assertThat(d.maxPeriod()).isEqualTo(32);
								assertThat(d.minRepeats()).isEqualTo(4);
								assertThat(d.minSpan()).isEqualTo(40);
							});
				});
		runner.withPropertyValues(AT + ".repetition.enabled=true").run(context -> {
			RepetitionDetector d = (RepetitionDetector) context.getBean(AiGuardRegistry.class).guard("chat").policy()
				.streamingValidators().get(0);
			RepetitionDetector defaults = RepetitionDetector.defaults();
			assertThat(List.of(d.ngram(), d.maxPeriod(), d.minRepeats(), d.minSpan()))
				.isEqualTo(List.of(defaults.ngram(), defaults.maxPeriod(), defaults.minRepeats(), defaults.minSpan()));
		});
	}

	@Test
	void theConfiguredValidatorsJudgeAnswers() {
		runner.withPropertyValues(AT + ".empty-answer=true", AT + ".finish-reasons=content_filter").run(context -> {
			AiGuard<ChatChunk> chat = context.getBean(AiGuardRegistry.class).guard("chat");

			StepVerifier.create(chat.call(ask(), r -> Flux.just(ChatChunk.finish("stop"), ChatChunk.done())))
				.thenConsumeWhile(chunk -> !chunk.hasContent())
				.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(InvalidOutputException.class)
					.satisfies(i -> assertThat(((InvalidOutputException) i).validator()).isEqualTo("empty")))
				.verify();
			StepVerifier.create(chat.call(ask(),
					r -> Flux.just(ChatChunk.token("Hello"), ChatChunk.finish("content_filter"), ChatChunk.done())))
				.thenConsumeWhile(chunk -> true)
				.expectError()
				.verify();
			StepVerifier.create(chat.call(ask(),
					r -> Flux.just(ChatChunk.token("Hello"), ChatChunk.finish("stop"), ChatChunk.done())))
				.thenConsumeWhile(chunk -> true)
				.verifyComplete();
		});
	}

	@Test
	void aBadValueFailsStartupNamingTheProperty() {
		refused(AT + ".finish-reasons", "content_filter, ,length", AT + ".finish-reasons");
		refused(AT + ".repetition.ngram", "0", AT + ".repetition.ngram", AT + ".repetition.enabled=true");
		refused(AT + ".repetition.max-period", "5000", AT + ".repetition.max-period", AT + ".repetition.enabled=true");
		refused(AT + ".repetition.min-repeats", "1", AT + ".repetition.min-repeats", AT + ".repetition.enabled=true");
		refused(AT + ".repetition.min-span", "1", AT + ".repetition.min-span", AT + ".repetition.enabled=true");
		// a setting of a detector that is off is a mistake, not ignored
		refused(AT + ".repetition.min-span", "80", AT + ".repetition.min-span");
	}

	private void refused(String property, String value, String named, String... others) {
		runner.withPropertyValues(property + "=" + value).withPropertyValues(others).run(context -> {
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
