package dev.aiguard.redis;

import dev.aiguard.budget.BucketStore;

/**
 * A {@link RedisBucketStore} in {@link BucketStore.Mode#FALLBACK_CLOSED} refused a request because it
 * cannot reach Redis. The guard treats it as a refusal without a known wait. Carries no stack trace:
 * it is an answer, not a bug, and it may be thrown for every request while Redis is down.
 *
 * <pre>{@code
 * store.tryTake(spec, "acme", 1).exceptionally(e -> {
 *     if (e.getCause() instanceof SharedStoreUnavailableException) { ... } // Redis down, fail-closed
 *     return Take.ofRefused(Long.MAX_VALUE);
 * });
 * }</pre>
 */
public final class SharedStoreUnavailableException extends RuntimeException {

	private static final long serialVersionUID = 1L;

	private final String store;

	/**
	 * @param store the store's name
	 * @param reason why Redis counts as down
	 */
	public SharedStoreUnavailableException(String store, String reason) {
		super("budget store '" + store + "' cannot reach Redis and fails closed: " + reason, null, false, false);
		this.store = store;
	}

	/** @return the name of the store that refused */
	public String store() {
		return store;
	}
}
