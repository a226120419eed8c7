package dev.aiguard.provider;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;

/** The one {@link ObjectMapper} of the package: thread-safe once configured, costly to create. */
final class Json {

	static final ObjectMapper MAPPER = new ObjectMapper()
		.configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, false);

	private Json() {
	}
}
