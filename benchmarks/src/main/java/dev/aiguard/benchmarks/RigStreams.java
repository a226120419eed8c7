package dev.aiguard.benchmarks;

import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Function;

import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.test.mock.MockAnswers;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Subscription;
import reactor.core.publisher.BaseSubscriber;
import reactor.core.publisher.Flux;
import reactor.core.publisher.SignalType;

/**
 * The streams of the load rig's pass in progress: K {@link Slot}s, each keeping one answer open
 * and asking for the next when it ends, and what they count (open streams, tokens, completed and
 * failed answers, first-token times). {@link LoadRig} sets the pass's variant and measurement
 * window here and reads the counters.
 */
final class RigStreams {

	private final ScheduledExecutorService ramp = Executors.newSingleThreadScheduledExecutor(r -> {
		Thread t = new Thread(r, "rig-ramp");
		t.setDaemon(true);
		return t;
	});

	// the pass in progress
	volatile Function<ChatRequest, Flux<ChatChunk>> variant = request -> Flux.empty();
	volatile boolean stopping;
	volatile int expectedTokens;
	volatile long answerNanos;
	volatile long windowStart = Long.MAX_VALUE;
	volatile long windowEnd = Long.MAX_VALUE;
	final AtomicLong open = new AtomicLong();
	final AtomicLong peakOpen = new AtomicLong();
	final LongAdder tokens = new LongAdder();
	final LongAdder completed = new LongAdder();
	final LongAdder failed = new LongAdder();
	final Map<String, LongAdder> failures = new ConcurrentHashMap<>();
	/** Where the pass in progress records first-token times: shared by the passes of one variant at one K. */
	volatile LatencyHistogram ttft = new LatencyHistogram();
	/**
	 * In a paired pass, the two variants the slots alternate between (even slots the first) and
	 * where each records its first-token times; {@code null} otherwise.
	 */
	@Nullable
	volatile Paired paired;

	/** What a paired pass runs: the variant of even slots, then of odd ones, and their first-token times. */
	record Paired(Function<ChatRequest, Flux<ChatChunk>> even, Function<ChatRequest, Flux<ChatChunk>> odd,
			LatencyHistogram evenTtft, LatencyHistogram oddTtft) {
	}

	/**
	 * Readies the counters for a pass of {@code v} whose first-token times go to {@code ttftInto};
	 * the measurement window is closed until the pass opens it.
	 */
	void reset(Function<ChatRequest, Flux<ChatChunk>> v, LatencyHistogram ttftInto) {
		variant = v;
		stopping = false;
		windowStart = Long.MAX_VALUE;
		windowEnd = Long.MAX_VALUE;
		open.set(0);
		peakOpen.set(0);
		tokens.reset();
		completed.reset();
		failed.reset();
		failures.clear();
		ttft = ttftInto;
	}

	/** Starts {@code slot}'s first answer in {@code delayNanos}, on the rig's ramp thread. */
	void launch(Slot slot, long delayNanos) {
		ramp.schedule(slot::launch, delayNanos, TimeUnit.NANOSECONDS);
	}

	Slot[] slots(int k, int answerTokens) {
		Slot[] slots = new Slot[k];
		for (int i = 0; i < k; i++) {
			ChatRequest request = ChatRequest.of(null,
					List.of(ChatMessage.user(MockAnswers.numbered("s" + i, answerTokens))));
			slots[i] = new Slot(request, i);
		}
		return slots;
	}

	/** One of the K places that keep a stream open: when its answer ends it asks for the next one. */
	final class Slot {

		private final ChatRequest request;
		/** Even slots and odd ones run different variants in a paired pass. */
		private final boolean even;
		@Nullable
		private volatile Run current;

		Slot(ChatRequest request, int index) {
			this.request = request;
			this.even = index % 2 == 0;
		}

		void launch() {
			if (stopping) {
				current = null;
				return;
			}
			Run run = new Run(this);
			current = run;
			run.start();
		}

		void cancel() {
			Run run = current;
			if (run != null) {
				run.dispose();
			}
		}
	}

	/** One streamed answer: counts its tokens, times its first one, checks it is whole. */
	private final class Run extends BaseSubscriber<ChatChunk> {

		private final Slot slot;
		private long start;
		private int received;
		private boolean terminal;
		private boolean failedRun;
		/** Where this stream's first-token time goes: the pass's, or its half's in a paired pass. */
		private LatencyHistogram ttftInto;

		Run(Slot slot) {
			this.slot = slot;
		}

		void start() {
			long now = open.incrementAndGet();
			peakOpen.accumulateAndGet(now, Math::max);
			Paired p = paired;
			Function<ChatRequest, Flux<ChatChunk>> v = p == null ? variant : slot.even ? p.even() : p.odd();
			ttftInto = p == null ? ttft : slot.even ? p.evenTtft() : p.oddTtft();
			start = System.nanoTime();
			v.apply(slot.request).subscribe(this);
		}

		@Override
		protected void hookOnSubscribe(Subscription subscription) {
			subscription.request(Long.MAX_VALUE);
		}

		@Override
		protected void hookOnNext(ChatChunk chunk) {
			if (chunk.hasContent()) {
				if (received == 0) {
					long first = System.nanoTime();
					if (start >= windowStart && first <= windowEnd) {
						ttftInto.record(first - start);
					}
				}
				received++;
				tokens.increment();
			}
			if (chunk.terminal()) {
				terminal = true;
			}
		}

		@Override
		protected void hookOnComplete() {
			if (received == expectedTokens && terminal) {
				completed.increment();
			}
			else {
				fail("incomplete answer: " + received + " tokens, terminal " + terminal);
			}
		}

		@Override
		protected void hookOnError(Throwable error) {
			fail(error.getClass().getSimpleName() + ": " + error.getMessage());
		}

		@Override
		protected void hookOnCancel() {
			fail("cancelled by the rig");
		}

		private void fail(String why) {
			failedRun = true;
			failed.increment();
			failures.computeIfAbsent(why.length() > 160 ? why.substring(0, 160) : why, key -> new LongAdder()).increment();
		}

		@Override
		protected void hookFinally(SignalType type) {
			open.decrementAndGet();
			if (type == SignalType.CANCEL) {
				return;
			}
			// an answer that ended early (a fallback, an error) is not followed at once by the next:
			// a slot asks at most once per answer's duration, so failures cannot turn into a storm
			// the next request is sent from the rig's thread, not from inside this completion: by then
			// the ended stream has given back whatever permit (lane, bulkhead) it held
			long early = start + answerNanos - System.nanoTime();
			if (!failedRun || early <= 0) {
				ramp.execute(slot::launch);
			}
			else {
				ramp.schedule(slot::launch, early, TimeUnit.NANOSECONDS);
			}
		}
	}
}
