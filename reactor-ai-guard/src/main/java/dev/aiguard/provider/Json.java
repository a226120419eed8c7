package dev.aiguard.provider;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * The one {@link ObjectMapper} of the package: thread-safe once configured, costly to create.
 *
 * <p>It is warmed when the class loads: Jackson builds and caches its tree (de)serializers on
 * first use under a lock, and the first streams decoded at once on event loops would otherwise
 * wait on that lock — a blocking call where none is allowed.
 */
final class Json {

	static final ObjectMapper MAPPER = warm(new ObjectMapper()
		.configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, false));

	private Json() {
	}

	private static ObjectMapper warm(ObjectMapper mapper) {
		try {
			JsonNode tree = mapper.readTree("{\"s\":\"x\",\"n\":1,\"d\":1.5,\"b\":true,\"z\":null,\"a\":[{}]}");
			mapper.writeValueAsBytes(tree);
		}
		catch (JsonProcessingException impossible) {
			throw new IllegalStateException("Jackson could not read its own warm-up document", impossible);
		}
		return mapper;
	}
}
