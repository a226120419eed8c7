package dev.aiguard.springai;

import dev.aiguard.provider.ProviderErrors;
import dev.aiguard.provider.ProviderException;
import org.springframework.http.HttpHeaders;
import org.springframework.web.reactive.function.client.WebClientRequestException;
import org.springframework.web.reactive.function.client.WebClientResponseException;

/**
 * The errors of Spring's {@code WebClient}. Loaded only when {@code spring-webflux} is on the class
 * path ({@link SpringAiErrors} checks first).
 */
final class WebClientErrors {

	private WebClientErrors() {
	}

	/** @return the typed error for an HTTP error answer, or {@code null} when {@code e} is not one */
	static ProviderException fromResponse(Throwable e, String provider) {
		if (!(e instanceof WebClientResponseException)) {
			return null;
		}
		WebClientResponseException response = (WebClientResponseException) e;
		HttpHeaders headers = response.getHeaders();
		return ProviderErrors.fromHttp(provider, response.getStatusCode().value(), headers::getFirst,
				response.getResponseBodyAsString());
	}

	/** @return whether {@code e} is a failure to send the request or read the answer */
	static boolean isTransport(Throwable e) {
		return e instanceof WebClientRequestException;
	}
}
