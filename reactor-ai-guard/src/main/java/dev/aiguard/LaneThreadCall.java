package dev.aiguard;

import java.util.function.Supplier;

import dev.aiguard.stage.Lane;
import dev.aiguard.stall.StallSpec;
import dev.aiguard.stall.watch.StallWatch;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;

/**
 * A blocking upstream's call, made once the hop onto the request's lane thread lands. The attempt
 * may have been cancelled or preempted meanwhile, its lane taken back (the lanes claim it before
 * the request hears of the preemption), or its wait for the thread may have run out: then the
 * upstream is never called, and the one who stopped the attempt ends it. Otherwise the attempt's
 * deadlines start here.
 */
final class LaneThreadCall<T> implements Supplier<Publisher<T>> {

	private final GuardedStream<T> request;
	private final Supplier<Publisher<? extends T>> call;
	/** Set when the attempt is subscribed, before the hop is scheduled: the hop never reads it unset. */
	@SuppressWarnings("NullAway.Init")
	StallWatch<T> watch;

	LaneThreadCall(GuardedStream<T> request, Supplier<Publisher<? extends T>> call) {
		this.request = request;
		this.call = call;
	}

	/**
	 * @return the longest an attempt waits for a lane thread before its upstream is called: the queue
	 *         wait of the request's lane; without lanes, the first-token timeout (or no bound without one)
	 */
	static long waitNanos(@Nullable Lane lane, StallSpec stall) {
		if (lane != null) {
			return lane.threadWaitNanos();
		}
		long firstToken = stall.firstTokenNanos();
		return firstToken > 0L ? firstToken : Long.MAX_VALUE;
	}

	@Override
	@SuppressWarnings("unchecked") // a publisher of T's subtypes only ever hands out Ts
	public Publisher<T> get() {
		Lane lane = request.lane;
		if (request.cancelled != 0 || request.preemption != null || lane != null && !lane.held()
				|| !watch.startUpstream()) {
			return Flux.never();
		}
		return (Publisher<T>) call.get();
	}
}
