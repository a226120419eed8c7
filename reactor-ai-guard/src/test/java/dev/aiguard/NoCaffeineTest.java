package dev.aiguard;

import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.fallback.Fallback;
import dev.aiguard.fallback.FallbackChain;
import dev.aiguard.fallback.ResponseCache;
import dev.aiguard.provider.ProviderServerException;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Runs in its own Surefire execution with Caffeine removed from the classpath (see the module's
 * pom): the fallback ladder, and a response cache of the application's own, must work without
 * the optional Caffeine dependency, and asking for the Caffeine cache must say what is missing.
 */
class NoCaffeineTest {

	@Test
	void caffeineIsReallyAbsent() {
		assertThatThrownBy(() -> Class.forName("com.github.benmanes.caffeine.cache.Caffeine"))
				.isInstanceOf(ClassNotFoundException.class);
	}

	@Test
	void theCaffeineCacheNamesTheMissingDependency() {
		assertThatIllegalStateException().isThrownBy(ResponseCache::caffeine)
				.withMessageContaining("com.github.ben-manes.caffeine:caffeine");
	}

	@Test
	void aStaticFallbackAnswersWithoutCaffeine() {
		GuardPolicy policy = GuardPolicy.builder("no-caffeine")
				.fallback(FallbackChain.<ChatChunk>builder().step(Fallback.staticText("busy")).build())
				.build();
		StepVerifier.create(Flux.<ChatChunk>error(unavailable())
						.transform(AiGuard.of(policy)))
				.expectNextMatches(c -> c.text().equals("busy"))
				.thenConsumeWhile(c -> c.text().isEmpty())
				.verifyComplete();
	}

	@Test
	void anApplicationsOwnCacheServesWithoutCaffeine() {
		MapCache cache = new MapCache();
		GuardPolicy policy = GuardPolicy.builder("own-cache")
				.responseCache(cache)
				.fallback(FallbackChain.<ChatChunk>builder().step(Fallback.cache(cache)).build())
				.build();
		AiGuard<ChatChunk> guard = AiGuard.of(policy);
		ChatRequest request = ChatRequest.of("m", List.of(ChatMessage.user("hello")));

		StepVerifier.create(guard.call(request, r -> Flux.just(ChatChunk.token("hi"), ChatChunk.done())))
				.expectNextCount(2)
				.verifyComplete();
		StepVerifier.create(guard.call(request,
						r -> Flux.<ChatChunk>error(unavailable())))
				.expectNextMatches(c -> c.text().equals("hi"))
				.thenConsumeWhile(c -> true)
				.verifyComplete();
	}

	static ProviderServerException unavailable() {
		return new ProviderServerException("test", 503, "server_error", null, "HTTP 503: unavailable", null);
	}

	/** The simplest cache an application could bring. */
	static final class MapCache implements ResponseCache<ChatChunk> {

		final Map<Object, List<ChatChunk>> entries = new ConcurrentHashMap<>();

		@Override
		public Mono<List<ChatChunk>> lookup(Object key) {
			return Mono.justOrEmpty(entries.get(key));
		}

		@Override
		public void store(Object key, List<ChatChunk> chunks) {
			entries.put(key, List.copyOf(chunks));
		}
	}
}
