package dev.aiguard.redis;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;

/** Keeps a per-key map of the store bounded however many distinct keys (tenants) pass through it. */
final class Bounded {

	private Bounded() {
	}

	/**
	 * Removes up to {@code count} keys other than {@code keep}, whichever the map's iteration meets
	 * first (never blocks: the iterator is weakly consistent).
	 *
	 * @return the keys removed
	 */
	static <K, V> List<K> dropOthers(ConcurrentHashMap<K, V> map, K keep, int count) {
		List<K> dropped = new ArrayList<>(count);
		Iterator<K> keys = map.keySet().iterator();
		while (dropped.size() < count && keys.hasNext()) {
			K key = keys.next();
			if (!key.equals(keep) && map.remove(key) != null) {
				dropped.add(key);
			}
		}
		return dropped;
	}
}
