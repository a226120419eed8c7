package dev.aiguard.fallback;

import java.util.function.Function;

import dev.aiguard.chat.ChatRequest;
import org.jspecify.annotations.Nullable;

/**
 * The fallback capability of a policy: the degradation ladder, the cache complete realtime answers
 * are stored in, and the key a request is cached under. Immutable and copy-on-write: every setter
 * checks its argument and returns a new spec.
 *
 * <pre>{@code
 * FallbackSpec fallback = FallbackSpec.none()
 *     .chain(FallbackChain.<ChatChunk>builder().step(Fallback.cache(cache)).build())
 *     .responseCache(cache)
 *     .cacheKey(CacheKeys.standard());
 * }</pre>
 *
 * Defaults: no ladder, no cache, {@link CacheKeys#standard()}. The messages name the fields as a
 * policy builder does: {@code fallback}, {@code responseCache}, {@code cacheKey}.
 */
public final class FallbackSpec {

	private static final FallbackSpec NONE = new FallbackSpec(null, null, CacheKeys.standard());

	@Nullable
	private final FallbackChain<?> chain;
	@Nullable
	private final ResponseCache<?> responseCache;
	private final Function<ChatRequest, Object> cacheKey;

	private FallbackSpec(@Nullable FallbackChain<?> chain, @Nullable ResponseCache<?> responseCache,
			Function<ChatRequest, Object> cacheKey) {
		this.chain = chain;
		this.responseCache = responseCache;
		this.cacheKey = cacheKey;
	}

	/** @return no ladder and no cache, with the standard cache key */
	public static FallbackSpec none() {
		return NONE;
	}

	/** @param ladder the degradation ladder; its chunk type must be the guarded stream's */
	public FallbackSpec chain(FallbackChain<?> ladder) {
		return new FallbackSpec(FallbackSteps.require("fallback", ladder), responseCache, cacheKey);
	}

	/**
	 * @param cache where complete, successful realtime answers are stored (call form only); its
	 *        chunk type must be the guarded stream's
	 */
	public FallbackSpec responseCache(ResponseCache<?> cache) {
		return new FallbackSpec(chain, FallbackSteps.require("responseCache", cache), cacheKey);
	}

	/** @param keyFunction the cache key of a request */
	public FallbackSpec cacheKey(Function<ChatRequest, Object> keyFunction) {
		return new FallbackSpec(chain, responseCache, FallbackSteps.require("cacheKey", keyFunction));
	}

	/** @return the degradation ladder, or {@code null} */
	@Nullable
	public FallbackChain<?> chain() {
		return chain;
	}

	/** @return where complete realtime answers are stored, or {@code null} */
	@Nullable
	public ResponseCache<?> responseCache() {
		return responseCache;
	}

	public Function<ChatRequest, Object> cacheKey() {
		return cacheKey;
	}

	@Override
	public String toString() {
		return "FallbackSpec{chain=" + chain + ", responseCache=" + responseCache + ", cacheKey=" + cacheKey + '}';
	}
}
