package dev.aiguard.stage;

import java.util.EnumSet;
import java.util.Set;

import dev.aiguard.core.Source;

/** Which of the fallback ladder's steps a stage asks to be walked before (or instead of) the live model. */
public enum Degradation {

	CHEAPER_FIRST(EnumSet.of(Source.CACHE, Source.LIGHTWEIGHT)),
	FALLBACK_FIRST(EnumSet.of(Source.FALLBACK_MODEL, Source.CACHE)),
	STATIC_ONLY(EnumSet.of(Source.STATIC));

	private final Set<Source> sources;

	Degradation(EnumSet<Source> sources) {
		this.sources = java.util.Collections.unmodifiableSet(sources);
	}

	/** @return the ladder's sources this degradation walks */
	public Set<Source> sources() {
		return sources;
	}
}
