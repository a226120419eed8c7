package dev.aiguard.provider;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpResponseStatus;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.netty.Connection;
import reactor.netty.DisposableServer;
import reactor.netty.NettyOutbound;
import reactor.netty.http.client.HttpClient;
import reactor.netty.http.server.HttpServer;
import reactor.netty.http.server.HttpServerRequest;
import reactor.netty.http.server.HttpServerResponse;
import reactor.netty.resources.ConnectionProvider;

/**
 * A loopback Reactor Netty server for a client test: started before each test, it answers
 * {@code POST /{scenario}/v1{endpoint}} with the canned response of the scenario, and records every
 * request (body, headers, path) and every TCP connection opened and closed.
 *
 * <p>The scenarios every provider has are answered here: {@code normal} (the whole stream),
 * {@code bytes} (the stream one byte per write), {@code cut} (three events, half of the fourth, then
 * the connection closes), {@code huge-error} (a 1 MiB 502 body), {@code no-headers} (no answer at
 * all). A test class adds its provider's scenarios by overriding {@link #respond} and handing the
 * others to {@code super.respond}.
 */
abstract class CannedServerFixture {

	private final String endpoint;
	private final String stream;

	DisposableServer server;
	final AtomicInteger connectionsOpened = new AtomicInteger();
	final Sinks.Many<Integer> connectionsClosed = Sinks.many().replay().all();
	final List<String> requestBodies = new CopyOnWriteArrayList<>();
	final List<HttpHeaders> requestHeaders = new CopyOnWriteArrayList<>();
	final List<String> requestPaths = new CopyOnWriteArrayList<>();
	final List<ConnectionProvider> pools = new CopyOnWriteArrayList<>();

	/**
	 * @param endpoint the path the client posts to below {@code /v1}, e.g. {@code /messages}
	 * @param stream the provider's complete canned stream
	 */
	CannedServerFixture(String endpoint, String stream) {
		this.endpoint = endpoint;
		this.stream = stream;
	}

	@BeforeEach
	void startServer() {
		server = HttpServer.create()
			.host("127.0.0.1")
			.port(0)
			// per TCP channel (doOnConnection would fire per HTTP request)
			.doOnChannelInit((observer, channel, remote) -> {
				int n = connectionsOpened.incrementAndGet();
				channel.closeFuture().addListener(closed -> {
					synchronized (connectionsClosed) {
						connectionsClosed.tryEmitNext(n);
					}
				});
			})
			.route(routes -> routes.post("/{scenario}/v1" + endpoint, this::serve))
			.bindNow();
	}

	@AfterEach
	void stopServer() {
		server.disposeNow();
		pools.forEach(ConnectionProvider::disposeLater);
	}

	private Publisher<Void> serve(HttpServerRequest request, HttpServerResponse response) {
		requestHeaders.add(request.requestHeaders().copy());
		requestPaths.add(request.uri());
		String scenario = request.param("scenario");
		return request.receive().aggregate().asString().defaultIfEmpty("").flatMapMany(body -> {
			requestBodies.add(body);
			return respond(scenario, response);
		});
	}

	/** @return the canned answer to {@code scenario}; an unknown one is a 404 */
	Publisher<Void> respond(String scenario, HttpServerResponse response) {
		switch (scenario) {
			case "normal":
				return sse(response, Flux.just(stream));
			case "bytes": {
				byte[] all = stream.getBytes(StandardCharsets.UTF_8);
				return response.header("content-type", "text/event-stream")
					.send(Flux.range(0, all.length).map(i -> Unpooled.wrappedBuffer(all, i, 1)), b -> true);
			}
			case "cut": {
				String fourth = stream.split("\n\n")[3];
				return sse(response, Flux.just(Fixtures.firstEvents(stream, 3), fourth.substring(0, fourth.length() / 2)))
					.then(Mono.<Void>defer(() -> {
						response.withConnection(Connection::dispose);
						return Mono.never();
					}));
			}
			case "huge-error":
				return response.status(HttpResponseStatus.BAD_GATEWAY)
					.send(Flux.range(0, 1024).map(i -> Unpooled.wrappedBuffer(new byte[1024])), b -> true);
			case "no-headers":
				return Mono.never();
			default:
				return response.status(404).sendString(Mono.just("unknown scenario " + scenario));
		}
	}

	static NettyOutbound sse(HttpServerResponse response, Flux<String> parts) {
		return response.header("content-type", "text/event-stream")
			.send(parts.map(p -> (ByteBuf) Unpooled.copiedBuffer(p, StandardCharsets.UTF_8)), b -> true);
	}

	static Publisher<Void> json(HttpServerResponse response, String body) {
		return response.header("content-type", "application/json").sendString(Mono.just(body));
	}

	/** @return the API root the client is built with for {@code scenario} */
	String baseUrl(String scenario) {
		return "http://127.0.0.1:" + server.port() + "/" + scenario + "/v1";
	}

	/** @return a client on a pool of its own, closed after the test */
	HttpClient pooled(int maxConnections) {
		ConnectionProvider pool = ConnectionProvider.create(getClass().getSimpleName() + "-" + System.nanoTime(),
				maxConnections);
		pools.add(pool);
		return HttpClient.create(pool);
	}
}
