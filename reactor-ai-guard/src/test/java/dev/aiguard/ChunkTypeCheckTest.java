package dev.aiguard;

import java.util.List;

import dev.aiguard.chat.ChatChunk;
import dev.aiguard.core.ChunkInspector;
import dev.aiguard.fallback.Fallback;
import dev.aiguard.fallback.FallbackChain;
import dev.aiguard.fallback.ResponseCache;
import dev.aiguard.fallback.ResponseCacheSpec;
import dev.aiguard.retry.MidStreamPolicy;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

/** A policy component of another chunk type than the guard's is refused when the guard is built. */
class ChunkTypeCheckTest {

	static final ChunkInspector<String> STRINGS = ChunkInspector.of(String.class, s -> !s.isEmpty(), s -> false,
			s -> false, s -> null);

	@Test
	void aFallbackChainOfAnotherChunkTypeFailsAtOfNamingBothTypes() {
		GuardPolicy policy = GuardPolicy.builder("typed")
				.fallback(FallbackChain.<String>builder().step(Fallback.staticAnswer(List.of("busy"))).build())
				.build();
		assertThatIllegalArgumentException().isThrownBy(() -> AiGuard.of(policy))
				.withMessageContaining("fallback chain").withMessageContaining("java.lang.String")
				.withMessageContaining("dev.aiguard.chat.ChatChunk");
		assertThat(AiGuard.of(policy, STRINGS)).isNotNull();
	}

	@Test
	void aChatNoticeOnAGuardOfAnotherTypeFailsAtOf() {
		GuardPolicy policy = GuardPolicy.builder("typed").midStream(MidStreamPolicy.notice("[cut short]")).build();
		assertThatIllegalArgumentException().isThrownBy(() -> AiGuard.of(policy, STRINGS))
				.withMessageContaining("mid-stream policy").withMessageContaining("dev.aiguard.chat.ChatChunk")
				.withMessageContaining("java.lang.String");
		assertThat(AiGuard.of(policy)).isNotNull();
	}

	@Test
	void aResponseCacheOfAnotherChunkTypeFailsAtOf() {
		GuardPolicy policy = GuardPolicy.builder("typed")
				.responseCache(ResponseCache.caffeine(String.class, ResponseCacheSpec.defaults())).build();
		assertThatIllegalArgumentException().isThrownBy(() -> AiGuard.of(policy))
				.withMessageContaining("response cache").withMessageContaining("java.lang.String")
				.withMessageContaining("dev.aiguard.chat.ChatChunk");
		assertThat(AiGuard.of(policy, STRINGS)).isNotNull();
	}

	@Test
	void anInspectorOfUnknownTypeIsNotChecked() {
		GuardPolicy policy = GuardPolicy.builder("untyped").midStream(MidStreamPolicy.notice("[cut short]")).build();
		ChunkInspector<ChatChunk> untyped = ChunkInspector.of(c -> true, c -> false, c -> false, c -> null);
		assertThat(AiGuard.of(policy, untyped)).isNotNull();
	}
}
