package dev.aiguard;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.List;

import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.core.Scannable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Hooks;
import reactor.test.StepVerifier;

import static org.assertj.core.api.Assertions.assertThat;

/** The guard is an operator Reactor's assembly tooling sees: it goes through {@code Flux.onAssembly}. */
class AssemblyTest {

	static final AiGuard<ChatChunk> GUARD = AiGuard.of(GuardPolicy.builder("assembly").build());

	@AfterEach
	void resetHooks() {
		Hooks.resetOnOperatorDebug();
	}

	static String traceOf(Throwable error) {
		StringWriter out = new StringWriter();
		error.printStackTrace(new PrintWriter(out));
		return out.toString();
	}

	@Test
	void theGuardIsAScannableOperatorNamedAfterItsPolicy() {
		Flux<ChatChunk> guarded = Flux.<ChatChunk>never().transform(GUARD);
		assertThat(Scannable.from(guarded).name()).isEqualTo("aiGuard(assembly)");
		Flux<ChatChunk> called = GUARD.call(ChatRequest.of("m", List.of(ChatMessage.user("hi"))), r -> Flux.never());
		assertThat(Scannable.from(called).name()).isEqualTo("aiGuardCall(assembly)");
	}

	@Test
	void onOperatorDebugRecordsWhereTheGuardWasAssembled() {
		Hooks.onOperatorDebug();
		Flux<ChatChunk> guarded = Flux.<ChatChunk>error(new IllegalStateException("boom")).transform(GUARD);

		assertThat(Scannable.from(guarded).parents().map(Scannable::name)).contains("aiGuard(assembly)");
		StepVerifier.create(guarded)
				.expectErrorSatisfies(e -> assertThat(traceOf(e)).contains("AssemblyTest.onOperatorDebugRecordsWhereTheGuardWasAssembled"))
				.verify();
	}

	@Test
	void aCheckpointAfterTheGuardNamesItInTheTraceback() {
		Flux<ChatChunk> guarded = Flux.<ChatChunk>error(new IllegalStateException("boom")).transform(GUARD)
				.checkpoint("after the guard");
		StepVerifier.create(guarded)
				.expectErrorSatisfies(e -> assertThat(traceOf(e)).contains("checkpoint ⇢ after the guard"))
				.verify();
	}
}
