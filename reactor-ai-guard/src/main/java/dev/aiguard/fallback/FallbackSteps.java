package dev.aiguard.fallback;

import java.util.ArrayList;
import java.util.List;
import java.util.function.BiFunction;
import java.util.function.Function;

import dev.aiguard.breaker.BreakerPath;
import dev.aiguard.breaker.BreakerPermit;
import dev.aiguard.breaker.BreakerTree;
import dev.aiguard.core.Outcome;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatRequest;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import dev.aiguard.core.Source;

/** The steps {@link Fallback}'s factories build. */
final class FallbackSteps {

	private FallbackSteps() {
	}

	static <V> V require(String field, @Nullable V value) {
		if (value == null) {
			throw new IllegalArgumentException(field + " must not be null");
		}
		return value;
	}

	static <T> List<T> copyChunks(@Nullable List<? extends T> chunks) {
		if (chunks == null || chunks.isEmpty()) {
			throw new IllegalArgumentException("chunks must hold at least one chunk, was " + chunks);
		}
		List<T> copy = new ArrayList<>(chunks.size());
		for (int i = 0; i < chunks.size(); i++) {
			T chunk = chunks.get(i);
			if (chunk == null) {
				throw new IllegalArgumentException("chunks[" + i + "] must not be null");
			}
			copy.add(chunk);
		}
		return List.copyOf(copy);
	}

	/** Splits into words, each keeping the whitespace after it; leading whitespace joins the first. */
	static List<ChatChunk> textChunks(@Nullable String text) {
		if (text == null || text.isBlank()) {
			throw new IllegalArgumentException("text must not be blank, was "
					+ (text == null ? "null" : "'" + text + "'"));
		}
		List<ChatChunk> chunks = new ArrayList<>();
		int start = 0;
		int i = 0;
		int n = text.length();
		while (i < n && Character.isWhitespace(text.charAt(i))) {
			i++;
		}
		while (i < n) {
			while (i < n && !Character.isWhitespace(text.charAt(i))) {
				i++;
			}
			while (i < n && Character.isWhitespace(text.charAt(i))) {
				i++;
			}
			chunks.add(ChatChunk.token(text.substring(start, i)));
			start = i;
		}
		chunks.add(ChatChunk.finish("stop"));
		chunks.add(ChatChunk.done());
		return List.copyOf(chunks);
	}

	static final class ModelStep<T> implements Fallback<T> {

		private final Function<? super ChatRequest, ? extends Publisher<T>> factory;
		@Nullable
		private final Function<? super Flux<T>, ? extends Publisher<T>> guard;

		ModelStep(Function<? super ChatRequest, ? extends Publisher<T>> factory,
				@Nullable Function<? super Flux<T>, ? extends Publisher<T>> guard) {
			this.factory = factory;
			this.guard = guard;
		}

		@Override
		public Source source() {
			return Source.FALLBACK_MODEL;
		}

		@Override
		public Flux<T> answer(FallbackRequest request) {
			ChatRequest chat = request.chatRequest();
			if (chat == null) {
				return noChatRequest();
			}
			return Flux.defer(() -> {
				Flux<T> stream = Flux.from(factory.apply(chat));
				return guard == null ? stream : guard.apply(stream);
			});
		}

		@Override
		public String toString() {
			return guard == null ? "Fallback[FALLBACK_MODEL]" : "Fallback[FALLBACK_MODEL, guarded]";
		}
	}

	/** What a {@code FALLBACK_MODEL} step answers in the transform form, which has no request to send. */
	static <T> Flux<T> noChatRequest() {
		return Flux.error(new IllegalStateException(
				"a FALLBACK_MODEL step needs the ChatRequest, which only the call form provides"));
	}

	static final class SiblingStep<T> implements Fallback<T> {

		private final BreakerTree tree;
		private final BiFunction<? super BreakerPath, ? super ChatRequest, ? extends Publisher<T>> client;

		SiblingStep(BreakerTree tree, BiFunction<? super BreakerPath, ? super ChatRequest, ? extends Publisher<T>> client) {
			this.tree = tree;
			this.client = client;
		}

		@Override
		public Source source() {
			return Source.FALLBACK_MODEL;
		}

		@Override
		public Flux<T> answer(FallbackRequest request) {
			ChatRequest chat = request.chatRequest();
			if (chat == null) {
				return noChatRequest();
			}
			BreakerPath failed = request.breakerPath();
			if (failed == null || failed.tree() != tree) {
				return Flux.error(new IllegalStateException("a siblings step of breaker tree '" + tree.name()
						+ "' needs a policy whose breaker is a path of that tree, was " + failed));
			}
			return Flux.defer(() -> {
				for (BreakerPath alternative : tree.alternativesTo(failed)) {
					BreakerPermit permit = alternative.tryAcquire(request.priority());
					if (permit != null) {
						return open(alternative, chat, permit);
					}
				}
				return Flux.error(new IllegalStateException("no CLOSED alternative to '" + failed.name()
						+ "' in breaker tree '" + tree.name() + "'"));
			});
		}

		private Flux<T> open(BreakerPath path, ChatRequest chat, BreakerPermit permit) {
			Publisher<T> source;
			try {
				source = client.apply(path, chat);
			}
			catch (Throwable t) {
				permit.record(Outcome.FAILURE, -1L);
				return Flux.error(t);
			}
			if (source == null) {
				permit.record(Outcome.FAILURE, -1L);
				return Flux.error(new IllegalStateException("the siblings client returned null for " + path.name()));
			}
			long start = tree.clock().nanoTime();
			long[] firstAt = {-1L}; // one subscription: the signals below never overlap
			return Flux.from(source)
					.doOnNext(chunk -> {
						if (firstAt[0] < 0) {
							firstAt[0] = tree.clock().nanoTime();
						}
					})
					.doOnComplete(() -> permit.record(firstAt[0] < 0 ? Outcome.INCOMPLETE : Outcome.SUCCESS,
							firstAt[0] < 0 ? -1L : firstAt[0] - start))
					.doOnError(e -> permit.record(Outcome.FAILURE, firstAt[0] < 0 ? -1L : firstAt[0] - start))
					.doOnCancel(() -> permit.record(Outcome.CANCELLED, -1L));
		}

		@Override
		public String toString() {
			return "Fallback[FALLBACK_MODEL, siblings in " + tree.name() + "]";
		}
	}

	static final class CacheStep<T> implements Fallback<T> {

		private final ResponseCache<T> cache;

		CacheStep(ResponseCache<T> cache) {
			this.cache = cache;
		}

		@Override
		public Class<?> chunkType() {
			return cache.chunkType();
		}

		@Override
		public Source source() {
			return Source.CACHE;
		}

		@Override
		public Flux<T> answer(FallbackRequest request) {
			Object key = request.cacheKey();
			if (key == null) {
				return Flux.empty();
			}
			return Mono.defer(() -> cache.lookup(key)).flatMapIterable(chunks -> chunks);
		}

		@Override
		public boolean mayBlock() {
			return cache.mayBlock();
		}

		@Override
		public String toString() {
			return "Fallback[CACHE, " + cache + "]";
		}
	}

	static final class LightweightStep<T> implements Fallback<T> {

		private final Function<? super FallbackRequest, ? extends Publisher<T>> function;
		private final boolean mayBlock;

		LightweightStep(Function<? super FallbackRequest, ? extends Publisher<T>> function, boolean mayBlock) {
			this.function = function;
			this.mayBlock = mayBlock;
		}

		@Override
		public Source source() {
			return Source.LIGHTWEIGHT;
		}

		@Override
		public Flux<T> answer(FallbackRequest request) {
			return Flux.defer(() -> function.apply(request));
		}

		@Override
		public boolean mayBlock() {
			return mayBlock;
		}

		@Override
		public String toString() {
			return "Fallback[LIGHTWEIGHT" + (mayBlock ? ", may block]" : "]");
		}
	}

	static final class StaticStep<T> implements Fallback<T> {

		private final List<T> chunks;
		private final Flux<T> answer;

		@SuppressWarnings("unchecked")
		StaticStep(List<T> chunks) {
			this.chunks = chunks;
			// replayed from an array: the cheapest source Reactor has; the array is only ever read
			this.answer = Flux.fromArray((T[]) chunks.toArray());
		}

		@Override
		public Source source() {
			return Source.STATIC;
		}

		@Override
		public Flux<T> answer(FallbackRequest request) {
			return answer;
		}

		/** The class every chunk of the answer shares (the most specific), known from the chunks themselves. */
		@Override
		public Class<?> chunkType() {
			Class<?> common = chunks.get(0).getClass();
			for (T chunk : chunks) {
				while (!common.isInstance(chunk)) {
					common = common.getSuperclass();
				}
			}
			return common;
		}

		List<T> chunks() {
			return chunks;
		}

		@Override
		public String toString() {
			return "Fallback[STATIC, " + chunks.size() + " chunks]";
		}
	}
}
