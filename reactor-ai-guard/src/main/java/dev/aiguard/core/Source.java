package dev.aiguard.core;

/** Where an answer came from, best first. */
public enum Source {
	/** The configured model answered live. */
	REALTIME,
	/** Another model or provider answered. */
	FALLBACK_MODEL,
	/** A cached answer to the same request was replayed. */
	CACHE,
	/** A cheap local function answered (FAQ matching, rules). */
	LIGHTWEIGHT,
	/** A fixed message. */
	STATIC
}
