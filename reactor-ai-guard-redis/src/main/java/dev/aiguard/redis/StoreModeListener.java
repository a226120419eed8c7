package dev.aiguard.redis;

/**
 * Told when a {@link RedisBucketStore} changes mode. Called on the thread that noticed the change,
 * often a Lettuce event loop: it must not block. A listener that throws is ignored.
 *
 * <pre>{@code
 * StoreModeListener alert = change -> {
 *     if (change.to() != BucketStore.Mode.SHARED) {
 *         pager.notify("budgets on local fallback: " + change.reason());
 *     }
 * };
 * }</pre>
 */
@FunctionalInterface
public interface StoreModeListener {

	/** @param change what changed */
	void onModeChange(StoreModeChange change);
}
