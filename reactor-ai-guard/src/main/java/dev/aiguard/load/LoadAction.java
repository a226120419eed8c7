package dev.aiguard.load;

/**
 * How a request of one priority is served at one {@link LoadLevel}. The sources named below are
 * the steps of the guard's fallback ladder with that {@link dev.aiguard.core.Source}; a ladder
 * without such steps serves the request live (or sheds it, for {@link #STATIC_OR_SHED}).
 */
public enum LoadAction {
	/** Served live by the model. */
	REALTIME,
	/** The ladder's cheap steps (cache, lightweight) first; live when none of them answers. */
	CHEAPER_FIRST,
	/** The ladder's fallback model and cache first; live when none of them answers. */
	FALLBACK_FIRST,
	/** The ladder's static answer; refused as {@link #SHED} when the ladder has none. */
	STATIC_OR_SHED,
	/** Refused at once with a {@code SHED} admission rejection that carries a retry-after hint. */
	SHED
}
