package dev.aiguard;

import java.util.List;

import dev.aiguard.chat.ChatChunk;
import dev.aiguard.validation.InvalidOutputException;
import dev.aiguard.validation.RepetitionDetector;
import dev.aiguard.validation.Validators;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.test.StepVerifier;

import static org.assertj.core.api.Assertions.assertThatIllegalStateException;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Runs in its own Surefire execution with {@code com.networknt:json-schema-validator} removed from
 * the classpath (see the module's pom): output validation without the JSON Schema validator must
 * work, and asking for that validator must say what is missing.
 */
class NoJsonSchemaTest {

	@Test
	void theSchemaLibraryIsReallyAbsent() {
		assertThatThrownBy(() -> Class.forName("com.networknt.schema.SchemaRegistry"))
				.isInstanceOf(ClassNotFoundException.class);
	}

	@Test
	void theJsonSchemaValidatorNamesTheMissingDependency() {
		assertThatIllegalStateException().isThrownBy(Validators::jsonSchema)
				.withMessageContaining("com.networknt:json-schema-validator");
		assertThatIllegalStateException().isThrownBy(() -> Validators.jsonSchema("{\"type\":\"object\"}"))
				.withMessageContaining("com.networknt:json-schema-validator");
	}

	@Test
	void theOtherValidatorsWorkWithoutIt() {
		GuardPolicy policy = GuardPolicy.builder("no-json-schema")
				.validate(Validators.emptyAnswer(), Validators.finishReason())
				.validateStreaming(RepetitionDetector.defaults())
				.build();
		StepVerifier.create(Flux.just(ChatChunk.token("fine"), ChatChunk.finish("stop"), ChatChunk.done())
						.transform(AiGuard.of(policy)))
				.expectNextCount(3)
				.verifyComplete();
		StepVerifier.create(Flux.fromIterable(List.of(ChatChunk.finish("stop"), ChatChunk.done()))
						.transform(AiGuard.of(policy)))
				.expectNextCount(2)
				.expectError(InvalidOutputException.class)
				.verify();
	}
}
