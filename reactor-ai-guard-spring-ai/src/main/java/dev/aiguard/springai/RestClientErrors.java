package dev.aiguard.springai;

import dev.aiguard.provider.ProviderErrors;
import dev.aiguard.provider.ProviderException;
import org.springframework.http.HttpHeaders;
import org.springframework.web.client.ResourceAccessException;
import org.springframework.web.client.RestClientResponseException;

/**
 * The errors of Spring's {@code RestClient} / {@code RestTemplate}. Loaded only when
 * {@code spring-web} is on the class path ({@link SpringAiErrors} checks first).
 */
final class RestClientErrors {

	private RestClientErrors() {
	}

	/** @return the typed error for an HTTP error answer, or {@code null} when {@code e} is not one */
	static ProviderException fromResponse(Throwable e, String provider) {
		if (!(e instanceof RestClientResponseException)) {
			return null;
		}
		RestClientResponseException response = (RestClientResponseException) e;
		HttpHeaders headers = response.getResponseHeaders();
		return ProviderErrors.fromHttp(provider, response.getStatusCode().value(),
				name -> headers == null ? null : headers.getFirst(name), response.getResponseBodyAsString());
	}

	/** @return whether {@code e} is an I/O failure of the client (refused, reset, timed out) */
	static boolean isTransport(Throwable e) {
		return e instanceof ResourceAccessException;
	}
}
