package dev.aiguard.benchmarks;

import org.openjdk.jmh.infra.Blackhole;
import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;

/** Requests everything and feeds every signal to the Blackhole; shared by the stream benchmarks. */
final class BlackholeSink<T> implements CoreSubscriber<T> {

	private final Blackhole bh;

	BlackholeSink(Blackhole bh) {
		this.bh = bh;
	}

	@Override
	public void onSubscribe(Subscription s) {
		s.request(Long.MAX_VALUE);
	}

	@Override
	public void onNext(T item) {
		bh.consume(item);
	}

	@Override
	public void onError(Throwable t) {
		bh.consume(t);
	}

	@Override
	public void onComplete() {
		bh.consume(true);
	}
}
