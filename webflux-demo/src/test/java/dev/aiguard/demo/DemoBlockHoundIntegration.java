package dev.aiguard.demo;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;

import reactor.blockhound.BlockHound;
import reactor.blockhound.BlockingOperationError;
import reactor.blockhound.integration.BlockHoundIntegration;

/**
 * BlockHound as this module's tests use it. It keeps a note of every blocking call caught, then
 * fails the call as BlockHound does by default: an error thrown on an event loop can end up as an
 * error event, a dropped error or a log line, and the note lets a test ask afterwards whether
 * anything blocked while it ran ({@link FaultSoakTest} does). Registered through
 * {@code META-INF/services}, so the BlockHound installed by blockhound-junit-platform loads it.
 *
 * <p>One wait is allowed: Netty 4.2's adaptive allocator, when threads contend for its shared
 * magazines, grows the magazine array and retires the old magazines under their
 * {@code StampedLock} write lock. That lock only guards the magazine's own bookkeeping for a few
 * instructions (no I/O, no waiting for another request), the same kind of wait as the
 * {@code PoolArena} lock Netty's own BlockHound integration allows for the pooled allocator; the
 * soak met it on event loops and timer threads alike once hundreds of streams ran at once.
 */
public final class DemoBlockHoundIntegration implements BlockHoundIntegration {

	/** Calls noted in full; further ones are only counted. */
	private static final int KEPT = 20;

	private static final AtomicLong CAUGHT = new AtomicLong();
	private static final ConcurrentLinkedQueue<Note> NOTES = new ConcurrentLinkedQueue<>();

	/** One caught call: its number since the JVM started, and where it happened. */
	private record Note(long number, String text) {
	}

	@Override
	public void applyTo(BlockHound.Builder builder) {
		builder.allowBlockingCallsInside("io.netty.buffer.AdaptivePoolingAllocator$MagazineGroup", "tryExpandMagazines");
		builder.blockingMethodCallback(method -> {
			BlockingOperationError error = new BlockingOperationError(method);
			long n = CAUGHT.incrementAndGet();
			if (NOTES.size() < KEPT) {
				NOTES.add(new Note(n, "#" + n + " on " + Thread.currentThread().getName() + ": " + error.getMessage()
						+ '\n' + stackOf(error)));
			}
			throw error;
		});
	}

	/** @return how many blocking calls were caught since the JVM started */
	static long caught() {
		return CAUGHT.get();
	}

	/** @return the first few calls caught after the {@code caught}-th, with thread and stack */
	static List<String> notesAfter(long caught) {
		List<String> notes = new ArrayList<>();
		for (Note n : NOTES) {
			if (n.number() > caught) {
				notes.add(n.text());
			}
		}
		return notes;
	}

	private static String stackOf(Throwable error) {
		StringBuilder b = new StringBuilder();
		StackTraceElement[] frames = error.getStackTrace();
		for (int i = 0; i < Math.min(frames.length, 25); i++) {
			b.append("    at ").append(frames[i]).append('\n');
		}
		return b.toString();
	}
}
