package dev.aiguard.provider;

import tools.jackson.databind.DeserializationFeature;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;
import tools.jackson.databind.json.JsonMapper;

/**
 * The one {@link ObjectMapper} of the package (Jackson 3), for the trees of request and error
 * bodies: thread-safe, costly to create.
 *
 * <p>It is warmed when the class loads: Jackson builds and caches its tree (de)serializers on
 * first use under a lock, and the first requests made at once on event loops would otherwise wait
 * on that lock — a blocking call where none is allowed.
 */
final class Json {

	static final ObjectMapper MAPPER = warm(JsonMapper.builder()
		.disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
		.build());

	private Json() {
	}

	private static ObjectMapper warm(ObjectMapper mapper) {
		JsonNode tree = mapper.readTree("{\"s\":\"x\",\"n\":1,\"d\":1.5,\"b\":true,\"z\":null,\"a\":[{}]}");
		mapper.writeValueAsBytes(tree);
		return mapper;
	}
}
