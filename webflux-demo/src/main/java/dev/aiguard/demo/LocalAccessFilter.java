package dev.aiguard.demo;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.web.server.reactive.context.ReactiveWebServerInitializedEvent;
import org.springframework.context.ApplicationListener;
import org.springframework.core.Ordered;
import org.springframework.http.HttpMethod;
import org.springframework.http.HttpStatus;
import org.springframework.http.InvalidMediaTypeException;
import org.springframework.http.MediaType;
import org.springframework.http.server.reactive.ServerHttpRequest;
import org.springframework.http.server.reactive.ServerHttpResponse;
import org.springframework.web.server.ServerWebExchange;
import org.springframework.web.server.WebFilter;
import org.springframework.web.server.WebFilterChain;
import reactor.core.publisher.Mono;
import tools.jackson.databind.json.JsonMapper;

/**
 * Keeps the demo to the person who started it, against the web pages that person visits. Every
 * request, the page and Actuator included, passes four checks, in this order:
 *
 * <ol>
 * <li><b>Host</b> names this server: a loopback name ({@code localhost}, {@code 127.0.0.1},
 * {@code [::1]}), {@code server.address}, or one of {@code aiguard.access.allowed-hosts}, with the
 * bound port. Anything else is 421 {@code misdirected_request}: a DNS-rebound name
 * ({@code attacker.example:8080} resolving to 127.0.0.1) reaches nothing, not even a read.</li>
 * <li><b>Origin</b>, when the browser sends one, is this server's own ({@code http://} or
 * {@code https://} plus an allowed Host). Anything else ({@code null} included) is 403
 * {@code forbidden_origin}: another site's page cannot send a form, a {@code text/plain} fetch or
 * a preflight here.</li>
 * <li>A {@code POST}, {@code PUT} or {@code PATCH} under {@code /api/} carries
 * {@code Content-Type: application/json}, else 415 {@code unsupported_media_type}: the body types
 * a page may send cross-site without asking (form, {@code text/plain}) never reach a handler.</li>
 * <li>A request that changes something ({@code POST}, {@code PUT}, {@code PATCH}, {@code DELETE}),
 * except asking a question ({@code POST /api/chat}), carries the demo's access token in
 * {@value #TOKEN_HEADER}, else 403 {@code token_required}. That covers the fault switches, the
 * live policy and the Actuator's breaker and lane changes.</li>
 * </ol>
 *
 * The token is printed at start in the page's address ({@code http://127.0.0.1:8080/#token=...}),
 * which the page reads and sends with its changes; it is compared in constant time.
 *
 * <pre>{@code
 * curl -X PATCH http://127.0.0.1:8080/api/faults -H 'Content-Type: application/json' \
 *      -H 'X-Demo-Token: <token from the start log>' -d '{"errorRate": 1.0}'
 * }</pre>
 */
final class LocalAccessFilter implements WebFilter, Ordered, ApplicationListener<ReactiveWebServerInitializedEvent> {

	/** The request header that carries the access token. */
	static final String TOKEN_HEADER = "X-Demo-Token";

	private static final Set<String> LOOPBACK_NAMES = Set.of("localhost", "127.0.0.1", "[::1]");

	private static final Logger log = LoggerFactory.getLogger(LocalAccessFilter.class);

	private final Set<String> hostNames;
	/** The name the start log's address uses: {@code server.address}, or 127.0.0.1 when it is a wildcard or unset. */
	private final String pageHost;
	private final String tokenText;
	private final byte[] token;
	private final JsonMapper json;
	/** The bound port; -1 until the server has started (nothing is served before). */
	private volatile int port = -1;

	/**
	 * @param serverAddress {@code server.address}, or empty; a wildcard ({@code 0.0.0.0}, {@code ::})
	 *        adds no name
	 * @param allowedHosts further host names (without port) the demo answers to
	 * @param token the access token for changes
	 */
	LocalAccessFilter(@Nullable String serverAddress, List<String> allowedHosts, String token, JsonMapper json) {
		Set<String> names = new LinkedHashSet<>(LOOPBACK_NAMES);
		String bound = serverAddress == null || serverAddress.isBlank() || isWildcard(serverAddress.trim()) ? null
				: hostName(serverAddress.trim());
		if (bound != null) {
			names.add(bound);
		}
		this.pageHost = bound == null ? "127.0.0.1" : bound;
		allowedHosts.stream().filter(h -> !h.isBlank()).map(h -> hostName(h.trim())).forEach(names::add);
		this.hostNames = Set.copyOf(names);
		if (token.isBlank()) {
			throw new IllegalArgumentException("aiguard.access.token must not be blank");
		}
		this.tokenText = token;
		this.token = token.getBytes(StandardCharsets.UTF_8);
		this.json = json;
		// Jackson builds its serializer for a type under a lock on first use: not on an event loop
		json.writeValueAsBytes(new LinkedHashMap<>(Map.of("error", "warm", "message", "up")));
	}

	/** Before every other filter, so nothing runs for a request refused here. */
	@Override
	public int getOrder() {
		return Ordered.HIGHEST_PRECEDENCE;
	}

	/** The port is known once the server listens, and changes when a stopped context starts again. */
	@Override
	public void onApplicationEvent(ReactiveWebServerInitializedEvent event) {
		port = event.getWebServer().getPort();
		log.info("Demo page: {} (the address carries the access token that the page's changes need; "
				+ "API clients send it as {})", pageAddress(), TOKEN_HEADER);
	}

	/** @return the access token (for the demo's own tests and tools in this process) */
	String token() {
		return tokenText;
	}

	/** @return the page's address with the token in its fragment, which browsers never send to a server */
	String pageAddress() {
		return "http://" + pageHost + ":" + port + "/#token=" + tokenText;
	}

	/** @return a new random token: 32 bytes from {@link SecureRandom}, URL-safe Base64 */
	static String newToken() {
		byte[] bytes = new byte[32];
		new SecureRandom().nextBytes(bytes);
		return Base64.getUrlEncoder().withoutPadding().encodeToString(bytes);
	}

	@Override
	public Mono<Void> filter(ServerWebExchange exchange, WebFilterChain chain) {
		ServerHttpRequest request = exchange.getRequest();
		if (!isOwnAuthority(request.getHeaders().getFirst("Host"))) {
			return refuse(exchange, HttpStatus.MISDIRECTED_REQUEST, "misdirected_request",
					"this demo answers only to its own address (a loopback name and its port)");
		}
		String origin = request.getHeaders().getOrigin();
		if (origin != null && !isOwnOrigin(origin)) {
			return refuse(exchange, HttpStatus.FORBIDDEN, "forbidden_origin",
					"requests from another site's page are refused");
		}
		HttpMethod method = request.getMethod();
		String path = request.getPath().pathWithinApplication().value();
		if (hasBody(method) && path.startsWith("/api/") && !isJson(request)) {
			return refuse(exchange, HttpStatus.UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type",
					"the API accepts only Content-Type: application/json");
		}
		if (changes(method) && !(HttpMethod.POST.equals(method) && "/api/chat".equals(path))
				&& !hasToken(request.getHeaders().getFirst(TOKEN_HEADER))) {
			return refuse(exchange, HttpStatus.FORBIDDEN, "token_required", "changes need the " + TOKEN_HEADER
					+ " header: open the page at the address the demo printed at start, which carries it");
		}
		return chain.filter(exchange);
	}

	/** @param authority a {@code Host} header ({@code name}, {@code name:port}, {@code [v6]:port}) */
	boolean isOwnAuthority(@Nullable String authority) {
		if (authority == null || authority.isBlank()) {
			return false;
		}
		String a = authority.trim().toLowerCase(Locale.ROOT);
		int colon = a.lastIndexOf(':');
		String name = a;
		int given = 80;
		// a colon inside an IPv6 literal's brackets is not the port's
		if (colon > a.lastIndexOf(']')) {
			name = a.substring(0, colon);
			try {
				given = Integer.parseInt(a.substring(colon + 1));
			}
			catch (NumberFormatException e) {
				return false;
			}
		}
		return given == port && hostNames.contains(name);
	}

	private boolean isOwnOrigin(String origin) {
		String o = origin.trim().toLowerCase(Locale.ROOT);
		String authority = o.startsWith("http://") ? o.substring(7) : o.startsWith("https://") ? o.substring(8) : null;
		return authority != null && !authority.contains("/") && isOwnAuthority(authority);
	}

	private boolean hasToken(@Nullable String given) {
		return given != null && MessageDigest.isEqual(token, given.getBytes(StandardCharsets.UTF_8));
	}

	private static boolean isJson(ServerHttpRequest request) {
		try {
			MediaType type = request.getHeaders().getContentType();
			return type != null && MediaType.APPLICATION_JSON.equalsTypeAndSubtype(type);
		}
		catch (InvalidMediaTypeException e) {
			return false;
		}
	}

	private static boolean hasBody(@Nullable HttpMethod method) {
		return HttpMethod.POST.equals(method) || HttpMethod.PUT.equals(method) || HttpMethod.PATCH.equals(method);
	}

	private static boolean changes(@Nullable HttpMethod method) {
		return hasBody(method) || HttpMethod.DELETE.equals(method);
	}

	private Mono<Void> refuse(ServerWebExchange exchange, HttpStatus status, String code, String message) {
		Map<String, String> body = new LinkedHashMap<>();
		body.put("error", code);
		body.put("message", message);
		ServerHttpResponse response = exchange.getResponse();
		response.setStatusCode(status);
		response.getHeaders().setContentType(MediaType.APPLICATION_JSON);
		byte[] bytes = json.writeValueAsBytes(body);
		return response.writeWith(Mono.fromSupplier(() -> response.bufferFactory().wrap(bytes)));
	}

	private static boolean isWildcard(String address) {
		return "0.0.0.0".equals(address) || "::".equals(address) || "[::]".equals(address)
				|| "0:0:0:0:0:0:0:0".equals(address);
	}

	/** @return the name as a {@code Host} header writes it: lower case, an IPv6 literal in brackets */
	private static String hostName(String address) {
		String a = address.toLowerCase(Locale.ROOT);
		return a.contains(":") && !a.startsWith("[") ? "[" + a + "]" : a;
	}
}
