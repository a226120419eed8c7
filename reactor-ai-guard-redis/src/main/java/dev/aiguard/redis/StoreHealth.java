package dev.aiguard.redis;

import java.net.SocketAddress;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReferenceFieldUpdater;

import io.lettuce.core.RedisChannelHandler;
import io.lettuce.core.RedisCommandTimeoutException;
import io.lettuce.core.RedisConnectionStateListener;
import org.jspecify.annotations.Nullable;
import reactor.core.Disposable;

import dev.aiguard.budget.BucketStore.Mode;

/**
 * A {@link RedisBucketStore}'s mode and how it moves: the {@link FallbackRule} judges the facts (an
 * operation answered or timed out, a ping answered or not, a lost connection), this enforces the
 * verdict — it tells the listeners and meters of a change, then shows it, and pings Redis while the
 * store is in fallback.
 *
 * <p><b>Order of a change.</b> One compare-and-swap on the phase decides each change; the meters and
 * listeners hear of it next; only then does {@link #mode()} show the new mode. So whoever sees
 * {@code SHARED} can count on the listeners having had the event.
 */
final class StoreHealth {

	/**
	 * The mode, and the mode a change decided on while its listeners are told ({@code next}, else
	 * {@code null}).
	 */
	private record Phase(Mode mode, @Nullable Mode next) {
	}

	private static final AtomicReferenceFieldUpdater<StoreHealth, Phase> PHASE = AtomicReferenceFieldUpdater
			.newUpdater(StoreHealth.class, Phase.class, "phase");

	private final String name;
	private final Mode fallbackMode;
	private final List<StoreModeListener> listeners;
	private final RedisMetrics metrics;
	private final RedisEndpoint endpoint;
	private final StoreConnections links;
	private final FallbackRule rule;
	private final CompletableFuture<Void> firstShared = new CompletableFuture<>();
	/** The most one probe may take: connecting (the connect timeout) and the handshake's first answer. */
	private final long probeBoundMillis;
	private final AtomicBoolean probeInFlight = new AtomicBoolean();
	private final RedisConnectionStateListener connectionWatch = new ConnectionWatch();

	private volatile Phase phase;
	/** Counts the falls from SHARED to the fallback. */
	private volatile long fallbacks;
	private volatile String fallbackReason = "not connected yet";
	private volatile @Nullable Disposable probing;
	private volatile boolean closed;

	StoreHealth(String name, Mode fallbackMode, List<StoreModeListener> listeners, RedisMetrics metrics,
			RedisEndpoint endpoint, StoreConnections links) {
		this.name = name;
		this.fallbackMode = fallbackMode;
		this.listeners = List.copyOf(listeners);
		this.metrics = metrics;
		this.endpoint = endpoint;
		this.links = links;
		RedisSettings settings = endpoint.settings();
		this.rule = new FallbackRule(settings.fallbackAfterTimeouts(), settings.commandTimeout().toNanos(),
				settings.sharedAfterProbes());
		this.phase = new Phase(fallbackMode, null);
		this.probeBoundMillis = settings.connectTimeout().plus(settings.commandTimeout()).toMillis();
	}

	/** Registers the mode gauge, watches the connections and connects. */
	void start() {
		safely(() -> metrics.storeRegistered(name, this::mode));
		endpoint.client().addListener(connectionWatch);
		startProbing();
		probe(); // no connection yet: this connects (nothing is written on a connection from this thread)
	}

	/** @return the mode the store shows */
	Mode mode() {
		return phase.mode;
	}

	/** @return the mode the store falls back to */
	Mode fallbackMode() {
		return fallbackMode;
	}

	/** @return how many times the store fell back so far (a fallback's local shares start from that) */
	long fallbacks() {
		return fallbacks;
	}

	/** @return why the store is (or was last) in fallback */
	String fallbackReason() {
		return fallbackReason;
	}

	/** @return a future completed the first time the store is shared */
	CompletableFuture<Void> firstShared() {
		return firstShared.copy();
	}

	/** An operation was answered in time. */
	void answered() {
		rule.answered();
	}

	/**
	 * An operation failed. A timeout counts towards the fall-back rule ({@link FallbackRule}); any other
	 * failure (the connection lost, commands refused while disconnected, an error reply) moves the
	 * store to its fallback at once.
	 */
	void failed(Throwable error) {
		Throwable cause = error instanceof CompletionException && error.getCause() != null ? error.getCause() : error;
		if (timedOut(cause)) {
			if (rule.timedOut(links.nowNanos())) {
				lost(rule.timeoutsInARow() + " operations in a row without an answer within the command timeout of "
						+ endpoint.settings().commandTimeout());
			}
			return;
		}
		lost(cause.getClass().getSimpleName() + ": " + cause.getMessage());
	}

	/** @return whether {@code error} or one of its causes is a timeout (ours, or Lettuce's, however wrapped) */
	private static boolean timedOut(Throwable error) {
		for (Throwable t = error; t != null; t = t.getCause() == t ? null : t.getCause()) {
			if (t instanceof TimeoutException || t instanceof RedisCommandTimeoutException) {
				return true;
			}
		}
		return false;
	}

	/** Redis counts as down: from SHARED to the fallback mode. */
	private void lost(String reason) {
		if (move(Mode.SHARED, fallbackMode, reason)) {
			startProbing();
		}
	}

	/**
	 * Moves from {@code from} to {@code to} unless another change is being told or the mode is another:
	 * the listeners and meters hear of it first, then {@link #mode()} shows it.
	 *
	 * @return whether this call made the change
	 */
	private boolean move(Mode from, Mode to, String reason) {
		Phase now = phase;
		if (closed || now.next != null || now.mode != from) {
			return false;
		}
		Phase moving = new Phase(from, to);
		if (!PHASE.compareAndSet(this, now, moving)) {
			return false;
		}
		rule.reset();
		if (to != Mode.SHARED) {
			fallbacks++;
			fallbackReason = reason;
		}
		changed(from, to, reason);
		// close() may have set the fallback meanwhile: it wins
		PHASE.compareAndSet(this, moving, new Phase(to, null));
		return true;
	}

	private void changed(Mode from, Mode to, String reason) {
		safely(() -> metrics.storeModeChanged(name, from, to));
		if (!listeners.isEmpty()) {
			StoreModeChange change = new StoreModeChange(name, from, to, reason, Instant.now());
			for (StoreModeListener l : listeners) {
				safely(() -> l.onModeChange(change));
			}
		}
	}

	/**
	 * Schedules the next probe one probe interval from now, replacing one already scheduled: probes
	 * follow each other at least an interval apart, whatever woke one up early (a reconnection), so
	 * {@code sharedAfterProbes} answers in a row span at least that many intervals less one.
	 */
	private synchronized void startProbing() {
		Disposable previous = probing;
		probing = closed || phase.mode == Mode.SHARED ? null
				: links.after(endpoint.settings().probeInterval(), this::probe);
		if (previous != null) {
			previous.dispose();
		}
	}

	private synchronized void stopProbing() {
		Disposable p = probing;
		probing = null;
		if (p != null) {
			p.dispose();
		}
	}

	/**
	 * Connects when there is no connection yet, else pings on the probe connection; one probe at a
	 * time, on the worker only (but for the first, which only connects). Back to SHARED once enough
	 * pings in a row were answered.
	 */
	private void probe() {
		if (closed || phase.mode == Mode.SHARED) {
			return;
		}
		if (!probeInFlight.compareAndSet(false, true)) {
			startProbing(); // the one in flight may end late: the next is due all the same
			return;
		}
		CompletableFuture<Void> attempt;
		try {
			attempt = links.probe();
		}
		catch (RuntimeException e) {
			attempt = CompletableFuture.failedFuture(e);
		}
		// a connect or a ping Lettuce never completes must not stop the probing
		links.deadline(attempt, probeBoundMillis).whenComplete((ok, error) -> {
			probeInFlight.set(false);
			if (error != null) {
				rule.probeFailed();
				if (fallbackReason.startsWith("not connected")) {
					fallbackReason = "not connected yet: " + error.getMessage();
				}
			}
			else {
				boolean first = !firstShared.isDone();
				if (rule.probeAnswered(first)) {
					String why = first ? "connected to redis" : "redis answered " + rule.probesInARow() + " pings in a row";
					if (move(fallbackMode, Mode.SHARED, why)) {
						firstShared.complete(null);
					}
				}
			}
			startProbing(); // the next one, unless shared or closed
		});
	}

	/** Lettuce tells of a lost or re-established connection before any command fails. */
	private final class ConnectionWatch implements RedisConnectionStateListener {

		@Override
		public void onRedisDisconnected(RedisChannelHandler<?, ?> handler) {
			if (links.owns(handler)) {
				rule.probeFailed(); // answers before the loss do not count towards the return
				lost("connection to redis lost");
			}
		}

		@Override
		public void onRedisConnected(RedisChannelHandler<?, ?> handler, SocketAddress address) {
			if (links.owns(handler)) {
				links.onWorker(StoreHealth.this::probe);
			}
		}
	}

	/** Stops probing and watching; the store stays in its fallback mode from here on. */
	void close() {
		closed = true;
		stopProbing();
		endpoint.client().removeListener(connectionWatch);
		PHASE.set(this, new Phase(fallbackMode, null));
	}

	static void safely(Runnable callback) {
		try {
			callback.run();
		}
		catch (Throwable t) {
			// a throwing listener or metrics implementation must not break the store
		}
	}
}
