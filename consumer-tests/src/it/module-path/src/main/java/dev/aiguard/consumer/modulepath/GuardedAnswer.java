package dev.aiguard.consumer.modulepath;

import java.time.Duration;

import dev.aiguard.AiGuard;
import dev.aiguard.GuardPolicy;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.stall.StallSpec;
import dev.aiguard.truncation.TokenCounter;
import reactor.core.publisher.Flux;

/** Code of a named module using the guard: one guarded answer, and an exact token count. */
public final class GuardedAnswer {

	private GuardedAnswer() {
	}

	/** @return the text of a guarded three-token answer */
	public static String answer() {
		AiGuard<ChatChunk> guard = AiGuard.of(GuardPolicy.builder("chat")
			.stall(StallSpec.defaults().firstTokenTimeout(Duration.ofSeconds(10)))
			.build());
		return Flux.just(ChatChunk.token("on the "), ChatChunk.token("module "), ChatChunk.token("path"),
				ChatChunk.finish("stop"), ChatChunk.done())
			.transform(guard)
			.mapNotNull(ChatChunk::text)
			.reduce("", String::concat)
			.block(Duration.ofSeconds(30));
	}

	/** @return the cl100k_base token count of {@code text}, with jtokkit read by the library's module */
	public static int tokens(String text) {
		return TokenCounter.jtokkit("cl100k_base").count(text);
	}
}
