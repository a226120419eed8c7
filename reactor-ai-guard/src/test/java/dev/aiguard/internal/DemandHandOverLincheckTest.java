package dev.aiguard.internal;

import java.util.concurrent.atomic.AtomicLong;

import dev.aiguard.QuiescentActorsGenerator;
import dev.aiguard.QuiescentActorsGenerator.Quiescent;
import org.jetbrains.lincheck.datastructures.IntGen;
import org.jetbrains.lincheck.datastructures.ModelCheckingOptions;
import org.jetbrains.lincheck.datastructures.Operation;
import org.jetbrains.lincheck.datastructures.Param;
import org.jetbrains.lincheck.datastructures.StressOptions;
import org.junit.jupiter.api.Test;
import org.reactivestreams.Subscription;
import reactor.core.publisher.Operators;

/**
 * Lincheck: {@link DemandHandOver} against {@link Spec}: the subscriber's demand racing the hand
 * over to the next inner subscription is neither lost nor asked twice. Each new inner is asked
 * for what the subscriber requested minus what the previous ones delivered, and demand that
 * arrives later reaches whichever inner is current.
 *
 * <p>Roles as in the guard: the first attempt is subscribed before anything is requested; any
 * thread may {@code request}; one producer (the thread on which an attempt delivers, ends and the
 * next begins) delivers items and hands over, so those two operations share a
 * {@code nonParallelGroup}. An inner delivers at most what it was asked for; {@code handOver(k)}
 * lets the ending inner deliver up to {@code k} more items first, so every hand-over has
 * something to subtract.
 *
 * <p>What Lincheck cannot check directly: the drain loop lets whichever thread owns it apply the
 * others' demand and hand-overs, so a {@code request} may return before its demand reached the
 * inner (that is the design: the owner serves it before it leaves the loop). Each operation
 * therefore returns once the loop is idle (a spin on its work counter, which the model checker
 * schedules around), and {@code state()} (reads of drain-owned fields) runs only in the sequential
 * parts ({@link Quiescent}).
 */
class DemandHandOverLincheckTest {

	/** An inner subscription that counts what it was asked for and what it delivered. */
	static final class Inner implements Subscription {

		final AtomicLong requested = new AtomicLong();
		final AtomicLong delivered = new AtomicLong();

		@Override
		public void request(long n) {
			requested.accumulateAndGet(n, Operators::addCap);
		}

		@Override
		public void cancel() {
		}
	}

	static final class Ladder extends DemandHandOver<Inner> {

		@Override
		protected long consumedBy(Inner previous) {
			return previous.delivered.get();
		}
	}

	public static class HandOver {

		final Ladder ladder = new Ladder();
		/** The inner the producer handed over last; read and written by the producer only. */
		Inner current;

		public HandOver() {
			current = new Inner();
			ladder.handOver(current);
		}

		void awaitDrained() {
			while (ladder.wip != 0) {
				Thread.onSpinWait();
			}
		}

		@Operation
		public void request(@Param(gen = IntGen.class, conf = "1:3") int n) {
			ladder.addDemand(n);
			awaitDrained();
		}

		@Operation
		public void requestUnbounded() {
			ladder.addDemand(Long.MAX_VALUE);
			awaitDrained();
		}

		/** The current inner delivers up to {@code k} more items and ends; the next one takes over. */
		@Operation(nonParallelGroup = "producer")
		public long handOver(@Param(gen = IntGen.class, conf = "0:2") int k) {
			long d = deliver(k);
			Inner next = new Inner();
			current = next;
			ladder.handOver(next);
			awaitDrained();
			return d;
		}

		/** The current inner delivers up to {@code k} items, never more than it was asked for. */
		@Operation(nonParallelGroup = "producer")
		public long deliver(@Param(gen = IntGen.class, conf = "1:3") int k) {
			Inner c = current;
			long d = Math.min(k, c.requested.get() - c.delivered.get());
			c.delivered.addAndGet(d);
			return d;
		}

		@Quiescent
		@Operation
		public String state() {
			Inner c = current;
			return "asked=" + c.requested.get() + " delivered=" + c.delivered.get() + " outstanding="
					+ ladder.outstandingDemand();
		}
	}

	@Test
	void demandAndHandOverAreLinearizable() {
		new ModelCheckingOptions()
				.iterations(20)
				.invocationsPerIteration(150)
				.threads(3)
				.actorsPerThread(2)
				.actorsBefore(2)
				.actorsAfter(1)
				.executionGenerator(QuiescentActorsGenerator.class)
				.sequentialSpecification(Spec.class)
				.check(HandOver.class);
	}

	@Test
	void demandAndHandOverUnderStress() {
		new StressOptions()
				.iterations(8)
				.invocationsPerIteration(300)
				.threads(3)
				.actorsPerThread(2)
				.actorsBefore(2)
				.actorsAfter(1)
				.executionGenerator(QuiescentActorsGenerator.class)
				.sequentialSpecification(Spec.class)
				.check(HandOver.class);
	}

	/** Demand as arithmetic: what was requested, what each inner was asked for and delivered. */
	public static final class Spec {

		private long outstanding;
		private long asked;
		private long delivered;

		public void request(int n) {
			add(n);
		}

		public void requestUnbounded() {
			add(Long.MAX_VALUE);
		}

		private void add(long n) {
			outstanding = Operators.addCap(outstanding, n);
			asked = Operators.addCap(asked, n);
		}

		public long handOver(int k) {
			long d = deliver(k);
			if (outstanding != Long.MAX_VALUE) {
				outstanding -= delivered; // what the ended inner delivered is not asked for again
			}
			asked = outstanding;
			delivered = 0;
			return d;
		}

		public long deliver(int k) {
			long d = Math.min(k, asked - delivered);
			delivered += d;
			return d;
		}

		public String state() {
			return "asked=" + asked + " delivered=" + delivered + " outstanding=" + outstanding;
		}
	}
}
