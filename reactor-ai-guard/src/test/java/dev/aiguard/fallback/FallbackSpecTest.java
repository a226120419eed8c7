package dev.aiguard.fallback;

import java.util.List;
import java.util.function.Function;

import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatRequest;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class FallbackSpecTest {

	@Test
	void noneHasNoLadderNoCacheAndTheStandardKey() {
		FallbackSpec spec = FallbackSpec.none();
		assertThat(spec.chain()).isNull();
		assertThat(spec.responseCache()).isNull();
		assertThat(spec.cacheKey()).isSameAs(CacheKeys.standard());
	}

	@Test
	void settersNameTheFieldAPolicyBuilderNames() {
		FallbackSpec spec = FallbackSpec.none();
		assertThatThrownBy(() -> spec.chain(null)).isInstanceOf(IllegalArgumentException.class)
				.hasMessage("fallback must not be null");
		assertThatThrownBy(() -> spec.responseCache(null)).isInstanceOf(IllegalArgumentException.class)
				.hasMessage("responseCache must not be null");
		assertThatThrownBy(() -> spec.cacheKey(null)).isInstanceOf(IllegalArgumentException.class)
				.hasMessage("cacheKey must not be null");
	}

	@Test
	void everySetterReturnsANewSpecAndLeavesTheTemplateAlone() {
		FallbackChain<ChatChunk> chain = FallbackChain.<ChatChunk>builder()
				.step(Fallback.staticText("busy")).build();
		ResponseCache<ChatChunk> cache = new ResponseCache<>() {
			@Override
			public Mono<List<ChatChunk>> lookup(Object key) {
				return Mono.empty();
			}

			@Override
			public void store(Object key, List<ChatChunk> chunks) {
			}
		};
		Function<ChatRequest, Object> key = CacheKeys.lastUserMessage();
		FallbackSpec template = FallbackSpec.none();
		FallbackSpec spec = template.chain(chain).responseCache(cache).cacheKey(key);
		assertThat(spec.chain()).isSameAs(chain);
		assertThat(spec.responseCache()).isSameAs(cache);
		assertThat(spec.cacheKey()).isSameAs(key);
		assertThat(template.chain()).isNull();
		assertThat(template.responseCache()).isNull();
		assertThat(template.cacheKey()).isSameAs(CacheKeys.standard());
	}
}
