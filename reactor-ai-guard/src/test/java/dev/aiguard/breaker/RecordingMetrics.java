package dev.aiguard.breaker;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.DoubleSupplier;
import java.util.function.Supplier;

import dev.aiguard.metrics.GuardMetrics;

/** Records what the breaker reports through the metrics SPI. */
final class RecordingMetrics implements GuardMetrics {

	final List<String> transitions = new CopyOnWriteArrayList<>();
	final AtomicInteger rejected = new AtomicInteger();
	volatile Supplier<Enum<?>> state;
	volatile DoubleSupplier failureRate;
	volatile DoubleSupplier slowCallRate;
	volatile String createdName;

	@Override
	public void breakerCreated(String breaker, Supplier<Enum<?>> state, DoubleSupplier failureRate,
			DoubleSupplier slowCallRate) {
		this.createdName = breaker;
		this.state = state;
		this.failureRate = failureRate;
		this.slowCallRate = slowCallRate;
	}

	@Override
	public void breakerTransition(String breaker, Enum<?> from, Enum<?> to) {
		transitions.add(from + "->" + to);
	}

	@Override
	public void breakerRejected(String breaker) {
		rejected.incrementAndGet();
	}
}
