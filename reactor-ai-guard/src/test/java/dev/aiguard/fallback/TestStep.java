package dev.aiguard.fallback;

import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import java.util.function.Supplier;

import reactor.core.publisher.Flux;
import dev.aiguard.core.Source;

/** A fallback step for tests: any source, any answer, and a record of what happened to it. */
final class TestStep<T> implements Fallback<T> {

	final Source source;
	final Function<FallbackRequest, Flux<T>> answer;
	final boolean mayBlock;
	final AtomicInteger calls = new AtomicInteger();
	final AtomicInteger subscriptions = new AtomicInteger();
	final AtomicInteger cancellations = new AtomicInteger();
	final Queue<String> callThreads = new ConcurrentLinkedQueue<>();
	final Queue<String> order;

	TestStep(Source source, Function<FallbackRequest, Flux<T>> answer, boolean mayBlock, Queue<String> order) {
		this.source = source;
		this.answer = answer;
		this.mayBlock = mayBlock;
		this.order = order;
	}

	static <T> TestStep<T> of(Source source, Supplier<Flux<T>> answer) {
		return new TestStep<>(source, r -> answer.get(), false, new ConcurrentLinkedQueue<>());
	}

	static <T> TestStep<T> of(Source source, Supplier<Flux<T>> answer, Queue<String> order) {
		return new TestStep<>(source, r -> answer.get(), false, order);
	}

	static <T> TestStep<T> blocking(Source source, Supplier<Flux<T>> answer) {
		return new TestStep<>(source, r -> answer.get(), true, new ConcurrentLinkedQueue<>());
	}

	@Override
	public Source source() {
		return source;
	}

	@Override
	public Flux<T> answer(FallbackRequest request) {
		calls.incrementAndGet();
		callThreads.add(Thread.currentThread().getName());
		return answer.apply(request)
				.doOnSubscribe(s -> {
					subscriptions.incrementAndGet();
					order.add(source.name());
				})
				.doOnCancel(cancellations::incrementAndGet);
	}

	@Override
	public boolean mayBlock() {
		return mayBlock;
	}

	@Override
	public String toString() {
		return "TestStep[" + source + "]";
	}
}
