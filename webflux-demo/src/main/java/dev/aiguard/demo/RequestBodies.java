package dev.aiguard.demo;

import java.nio.charset.StandardCharsets;

import org.springframework.core.io.buffer.DataBuffer;
import org.springframework.core.io.buffer.DataBufferLimitException;
import org.springframework.core.io.buffer.DataBufferUtils;
import org.springframework.web.reactive.function.BodyExtractors;
import org.springframework.web.reactive.function.server.ServerRequest;
import reactor.core.publisher.Mono;

/** Reads a request body as text, reactively and within a size limit. */
final class RequestBodies {

	private RequestBodies() {
	}

	/**
	 * @return the body as UTF-8 text ({@code ""} when there is none), or a
	 *         {@link BadRequestException} with status 413 when it is longer than {@code maxBytes}
	 *         (declared or actual)
	 */
	static Mono<String> text(ServerRequest request, int maxBytes) {
		long declared = request.headers().contentLength().orElse(-1);
		if (declared > maxBytes) {
			return Mono.error(tooLarge(maxBytes));
		}
		return DataBufferUtils.join(request.body(BodyExtractors.toDataBuffers()), maxBytes)
			.map(RequestBodies::decode)
			.defaultIfEmpty("")
			.onErrorMap(DataBufferLimitException.class, e -> tooLarge(maxBytes));
	}

	private static String decode(DataBuffer buffer) {
		try {
			return buffer.toString(StandardCharsets.UTF_8);
		}
		finally {
			DataBufferUtils.release(buffer);
		}
	}

	private static BadRequestException tooLarge(int maxBytes) {
		return new BadRequestException(413, "body_too_large", "the request body is larger than " + maxBytes + " bytes");
	}
}
