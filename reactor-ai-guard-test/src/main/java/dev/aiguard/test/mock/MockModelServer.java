package dev.aiguard.test.mock;

import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.DoubleSupplier;
import java.util.function.LongSupplier;
import java.util.function.UnaryOperator;

import io.netty.util.concurrent.EventExecutor;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;
import reactor.netty.DisposableServer;
import reactor.netty.http.server.HttpServer;
import reactor.netty.http.server.HttpServerRequest;
import reactor.netty.http.server.HttpServerResponse;
import reactor.netty.resources.LoopResources;
import tools.jackson.databind.node.ObjectNode;

/**
 * An OpenAI-compatible model server on Reactor Netty, bound to 127.0.0.1 (a free port unless one
 * is given), that misbehaves on request and remembers what it was sent.
 *
 * <pre>{@code
 * try (MockModelServer mock = MockModelServer.builder()
 *         .faults(FaultProfile.defaults(Duration.ofMillis(300), Duration.ofMillis(40)))
 *         .start()) {
 *     OpenAiCompatibleClient client = OpenAiCompatibleClient.builder(mock.baseUrl()).model("mock-1").build();
 *     mock.faults(mock.faults().withStallAfter(5));     // the next answers stop after 5 tokens
 *     mock.enqueue(mock.faults().withErrors(1, 429, 1)); // ...but the very next one is a 429
 *     // ... call the client
 *     assertThat(mock.lastRequest().header("content-type")).isEqualTo("application/json");
 * }
 * }</pre>
 *
 * <ul>
 * <li>{@code POST /v1/chat/completions}: the answer from {@link MockAnswers} to the last user
 * message. With {@code "stream": true}, server-sent events paced by the profile: a role chunk, one
 * chunk per token, a {@code stop} chunk, the usage chunk when {@code stream_options.include_usage}
 * is true, and {@code [DONE]}. Otherwise (OpenAI's default) one {@code chat.completion} object with
 * the same text, its {@code finish_reason} and {@code usage}, sent once the whole answer would have
 * been generated. Accepts the {@code developer} role (as {@code system}) and array content (the
 * text parts concatenated); {@code max_tokens} / {@code max_completion_tokens} below the answer's
 * length cut it there with {@code finish_reason: "length"}. A request OpenAI would refuse gets 400
 * with OpenAI's error object naming the parameter.</li>
 * <li>{@code GET /v1/models}: OpenAI's list format with {@link #MODEL}.</li>
 * <li>Any other route: 404 with OpenAI's error object, code {@code unknown_url}.</li>
 * </ul>
 *
 * Each chat request takes the next profile queued with {@link #enqueue}, else the current one
 * ({@link #faults(FaultProfile)}), and keeps it to its end. In a whole answer a stall holds the
 * response back, a drop closes the connection before any response, an in-band error becomes a
 * 500 with that error object, and {@link FaultProfile#omitTerminal()} changes nothing. A model
 * the profile names in {@link FaultProfile#failingModels()} is down: every request naming it gets
 * the profile's error status, while the other models on the same server answer.
 * Counters in {@link #stats()} record what happened, including answers the client abandoned
 * ({@code cancelled}: the connection closed before the answer ended). A profile with
 * {@link FaultProfile#withLoadPressure load pressure} answers worse the more requests are in
 * progress. A profile with a {@link FaultProfile#withProviderRateLimit provider rate limit}
 * counts the OpenAI chat requests and their tokens in a fixed window, sends the window's
 * {@code x-ratelimit-*} headers and refuses a request over it with 429. Every request, on any route,
 * is kept in a bounded log: {@link #requests()}, {@link #lastRequest()}.
 */
public final class MockModelServer implements AutoCloseable {

	/** The model name the mock reports when the request names none, and lists at {@code GET /v1/models}. */
	public static final String MODEL = "mock-1";

	/** How many requests the log keeps unless the builder says otherwise. */
	public static final int DEFAULT_CAPTURE_LIMIT = 1000;

	private final FaultProfile defaults;
	private final int port;
	private final AtomicReference<FaultProfile> faults;
	private final ConcurrentLinkedQueue<FaultProfile> queued = new ConcurrentLinkedQueue<>();
	private final RequestCapture capture;
	private final OpenAiEndpoint openAi = new OpenAiEndpoint(this);
	private final AnthropicEndpoint anthropic = new AnthropicEndpoint(this);
	private final long createdAt = System.currentTimeMillis() / 1000;

	final DoubleSupplier random;
	final AtomicLong chatRequests = new AtomicLong();
	final AtomicLong completed = new AtomicLong();
	final AtomicLong cancelled = new AtomicLong();
	final AtomicLong injectedErrors = new AtomicLong();
	final AtomicLong contextRejections = new AtomicLong();
	final AtomicLong stalled = new AtomicLong();
	final AtomicLong dropped = new AtomicLong();
	final AtomicLong inProgress = new AtomicLong();
	final AtomicLong inBandErrors = new AtomicLong();
	final AtomicLong loadRefusals = new AtomicLong();
	final AtomicLong loadSlowed = new AtomicLong();
	final AtomicLong rateLimitRefusals = new AtomicLong();
	final TokenPacer pacer = new TokenPacer();
	final ProviderWindow providerWindow;

	@Nullable
	private volatile DisposableServer server;
	@Nullable
	private LoopResources loops;

	private MockModelServer(Builder builder) {
		this.defaults = builder.faults;
		this.random = builder.random;
		this.port = builder.port;
		this.faults = new AtomicReference<>(defaults);
		this.capture = new RequestCapture(builder.captureLimit, OpenAiErrors.JSON);
		this.providerWindow = new ProviderWindow(builder.nanoClock);
	}

	/** @return a builder: no faults, no pacing, a free port, {@link Math#random()} for error draws */
	public static Builder builder() {
		return new Builder();
	}

	/** Settings of a {@link MockModelServer}; {@link #start()} builds and starts it. */
	public static final class Builder {

		private FaultProfile faults = FaultProfile.defaults(Duration.ZERO, Duration.ZERO);
		private DoubleSupplier random = Math::random;
		private int port;
		private int captureLimit = DEFAULT_CAPTURE_LIMIT;
		private LongSupplier nanoClock = System::nanoTime;

		private Builder() {
		}

		/** The clock of the provider rate limit's window ({@link FaultProfile#providerRateLimit()}), in nanoseconds. */
		Builder nanoClock(LongSupplier clock) {
			this.nanoClock = Objects.requireNonNull(clock, "clock");
			return this;
		}

		/** The profile in force at start and after {@link MockModelServer#resetFaults()}. */
		public Builder faults(FaultProfile faults) {
			this.faults = Objects.requireNonNull(faults, "faults");
			return this;
		}

		/** Draws in [0, 1) that decide {@link FaultProfile#errorRate()}; a constant makes errors certain or impossible. */
		public Builder random(DoubleSupplier random) {
			this.random = Objects.requireNonNull(random, "random");
			return this;
		}

		/** The loopback port to listen on; 0 (the default) picks a free one, reported by {@link MockModelServer#port()}. */
		public Builder port(int port) {
			if (port < 0 || port > 65_535) {
				throw new IllegalArgumentException("port must be between 0 and 65535, was " + port);
			}
			this.port = port;
			return this;
		}

		/** How many of the latest requests {@link MockModelServer#requests()} keeps, 1 to 100000 (default 1000). */
		public Builder captureLimit(int requests) {
			if (requests < 1 || requests > 100_000) {
				throw new IllegalArgumentException("captureLimit must be between 1 and 100000, was " + requests);
			}
			this.captureLimit = requests;
			return this;
		}

		/** @return a server that is not listening yet */
		public MockModelServer build() {
			return new MockModelServer(this);
		}

		/** @return a listening server */
		public MockModelServer start() {
			MockModelServer server = build();
			server.start();
			return server;
		}
	}

	/** @return the port the server listens on */
	public int port() {
		DisposableServer s = server;
		if (s == null) {
			throw new IllegalStateException("the mock model server is not running");
		}
		return s.port();
	}

	/** @return the API root for an OpenAI-compatible client, e.g. {@code http://127.0.0.1:41234/v1} */
	public String baseUrl() {
		DisposableServer s = server;
		if (s == null) {
			throw new IllegalStateException("the mock model server is not running");
		}
		return "http://127.0.0.1:" + s.port() + "/v1";
	}

	/**
	 * @return the API root for an Anthropic client, e.g. {@code http://127.0.0.1:41234/v1}: the same
	 *         answers and faults on {@code POST /v1/messages} in Anthropic's streaming format
	 */
	public String anthropicBaseUrl() {
		return baseUrl();
	}

	/** @return the profile new requests get */
	public FaultProfile faults() {
		return faults.get();
	}

	/** Sets the profile for requests that arrive from now on; answers already streaming keep theirs. */
	public void faults(FaultProfile profile) {
		faults.set(Objects.requireNonNull(profile, "profile"));
	}

	/**
	 * Changes the profile for requests that arrive from now on, atomically: concurrent updates (two
	 * switches flipped at once) each apply to the other's result, none is lost.
	 *
	 * @param change from the profile in force to the next one (may run more than once under contention)
	 * @return the profile now in force
	 */
	public FaultProfile updateFaults(UnaryOperator<FaultProfile> change) {
		Objects.requireNonNull(change, "change");
		return faults.updateAndGet(current -> Objects.requireNonNull(change.apply(current), "the changed profile"));
	}

	/** Back to the profile the server started with; the queue of {@link #enqueue} is kept. */
	public FaultProfile resetFaults() {
		faults.set(defaults);
		return defaults;
	}

	/**
	 * Queues one profile per coming chat request: the next request takes the first, the one after
	 * the second, and so on; once the queue is empty, requests get {@link #faults()} again.
	 * Concurrent requests each take a different queued profile. Every chat request takes one, a
	 * malformed one included.
	 *
	 * <pre>{@code
	 * FaultProfile now = mock.faults();
	 * mock.enqueue(now.withErrors(1, 429, 1), now.withErrors(1, 500, 0));   // 429, then 500, then answers
	 * }</pre>
	 *
	 * @param next the profiles, in the order requests take them
	 */
	public void enqueue(FaultProfile... next) {
		Objects.requireNonNull(next, "next");
		for (int i = 0; i < next.length; i++) {
			if (next[i] == null) {
				throw new IllegalArgumentException("next[" + i + "] must not be null");
			}
		}
		queued.addAll(List.of(next));
	}

	/** @return the profiles queued with {@link #enqueue} that no request has taken yet */
	public int queued() {
		return queued.size();
	}

	/**
	 * The profile the chat request that just arrived gets: the next queued one, else the current one.
	 * Every endpoint that answers like a model calls this once per request.
	 */
	FaultProfile takeProfile() {
		FaultProfile next = queued.poll();
		return next != null ? next : faults.get();
	}

	/**
	 * The profile a chat request whose body has arrived is answered with: the one it took, adjusted
	 * for the requests in progress (it included) when its {@link FaultProfile#loadPressure()} has a
	 * say — refused with the pressure's status, or with a longer first-token delay. Every endpoint
	 * that answers like a model calls this once per request, after it has counted itself in progress.
	 */
	FaultProfile underLoad(FaultProfile profile) {
		LoadPressure pressure = profile.loadPressure();
		if (pressure == null) {
			return profile;
		}
		long serving = inProgress.get();
		if (pressure.excess(serving) == 0) {
			return profile;
		}
		double refusal = pressure.errorRate(serving);
		if (refusal > 0 && random.getAsDouble() < refusal) {
			loadRefusals.incrementAndGet();
			return profile.withErrors(1, pressure.errorStatus(), pressure.retryAfterSeconds()).withErrorBody(null);
		}
		loadSlowed.incrementAndGet();
		return profile.withPace(pressure.firstTokenDelayMs(profile.firstTokenDelayMs(), serving),
				profile.tokenIntervalMs());
	}

	/**
	 * The indexes of an answer's content chunks at the profile's pace: the first after
	 * {@link FaultProfile#firstTokenDelayMs()} from subscription, each next one
	 * {@link FaultProfile#tokenIntervalMs()} later, emitted on the event loop of the response's
	 * connection by its shared tick ({@link TokenPacer}).
	 */
	Flux<Integer> paced(HttpServerResponse response, int count, FaultProfile profile) {
		return Flux.defer(() -> {
			EventExecutor[] loop = new EventExecutor[1];
			response.withConnection(connection -> loop[0] = connection.channel().eventLoop());
			if (loop[0] == null) {
				return Flux.error(new IllegalStateException("the response has no connection to pace the answer on"));
			}
			return pacer.pace(loop[0], count, profile.firstTokenDelayMs(), profile.tokenIntervalMs());
		});
	}

	/** @return every request received, oldest first (at most the capture limit: the latest ones) */
	public List<CapturedRequest> requests() {
		return capture.snapshot();
	}

	/**
	 * @return the request received last, on any route
	 * @throws IllegalStateException when none was received since start or {@link #clearRequests()}
	 */
	public CapturedRequest lastRequest() {
		CapturedRequest last = capture.last();
		if (last == null) {
			throw new IllegalStateException("the mock model server has received no request");
		}
		return last;
	}

	/** Forgets the requests received so far. */
	public void clearRequests() {
		capture.clear();
	}

	/**
	 * Between tests: the profile the server started with, no queued profile, no captured request, a
	 * fresh provider rate-limit window. The counters of {@link #stats()} keep counting.
	 */
	public void reset() {
		queued.clear();
		faults.set(defaults);
		capture.clear();
		providerWindow.reset();
	}

	/**
	 * Ends the provider rate limit's current window ({@link FaultProfile#withProviderRateLimit}): the
	 * next chat request starts a new one, with everything available.
	 */
	public void resetProviderWindow() {
		providerWindow.reset();
	}

	/** @return the profile {@link #resetFaults()} restores */
	public FaultProfile defaultFaults() {
		return defaults;
	}

	/** @return what the server has done so far */
	public Stats stats() {
		return new Stats(chatRequests.get(), completed.get(), cancelled.get(), injectedErrors.get(),
				contextRejections.get(), stalled.get(), dropped.get(), inProgress.get(), inBandErrors.get(),
				loadRefusals.get(), loadSlowed.get(), rateLimitRefusals.get());
	}

	/**
	 * Counters since start.
	 *
	 * @param requests chat requests received
	 * @param completed answers sent to the end (with or without the terminal marker, or ending in an in-band error)
	 * @param cancelled answers the client abandoned: the connection closed before the end
	 * @param injectedErrors requests answered with the profile's error status, load pressure's refusals included
	 * @param contextRejections requests refused for exceeding the context limit
	 * @param stalled answers that stopped sending on purpose
	 * @param dropped connections closed on purpose mid-answer
	 * @param inProgress requests whose response has not ended yet, however it ends (a request the client
	 *        has left must not stay here: that would be an upstream call nobody closed)
	 * @param inBandErrors answers ended by an in-band error
	 * @param loadRefusals requests refused by the profile's {@link LoadPressure} (also in {@code injectedErrors})
	 * @param loadSlowed requests whose first token the profile's {@link LoadPressure} delayed
	 * @param rateLimitRefusals requests refused with 429 by the profile's {@link ProviderRateLimit}
	 *        (not in {@code injectedErrors})
	 */
	public record Stats(long requests, long completed, long cancelled, long injectedErrors, long contextRejections,
			long stalled, long dropped, long inProgress, long inBandErrors, long loadRefusals, long loadSlowed,
			long rateLimitRefusals) {

		/** Counters without the provider rate limit's refusals. */
		public Stats(long requests, long completed, long cancelled, long injectedErrors, long contextRejections,
				long stalled, long dropped, long inProgress, long inBandErrors, long loadRefusals, long loadSlowed) {
			this(requests, completed, cancelled, injectedErrors, contextRejections, stalled, dropped, inProgress,
					inBandErrors, loadRefusals, loadSlowed, 0L);
		}
	}

	/** Binds the server; does nothing when it is running already. */
	public synchronized void start() {
		if (server == null) {
			// event loops of its own: a client or an application context that disposes Reactor Netty's
			// global resources (as stopping a Spring context does) must not take the mock down with them
			LoopResources own = LoopResources.create("aiguard-mock", 1, 2, true);
			loops = own;
			server = HttpServer.create()
				.runOn(own)
				.host("127.0.0.1")
				.port(port)
				.doOnChannelInit((observer, channel, remote) -> capture.install(channel.pipeline()))
				.route(routes -> routes
					.post("/v1/chat/completions", openAi::chat)
					.post("/v1/messages", anthropic::serve)
					.get("/v1/models", this::models)
					// keep last: what no route above takes gets OpenAI's 404
					.route(request -> true, this::unknownRoute))
				.bindNow(Duration.ofSeconds(10));
		}
	}

	/** Closes the server and every connection it holds; does nothing when it is not running. */
	public synchronized void stop() {
		DisposableServer s = server;
		server = null;
		if (s != null) {
			s.disposeNow(Duration.ofSeconds(5));
		}
		LoopResources l = loops;
		loops = null;
		if (l != null) {
			l.disposeLater(Duration.ZERO, Duration.ofSeconds(5)).block(Duration.ofSeconds(10));
		}
	}

	/** @return whether the server is listening */
	public boolean isRunning() {
		return server != null;
	}

	/** Same as {@link #stop()}. */
	@Override
	public void close() {
		stop();
	}

	private Publisher<Void> models(HttpServerRequest request, HttpServerResponse response) {
		ObjectNode list = OpenAiErrors.JSON.createObjectNode().put("object", "list");
		list.putArray("data").addObject()
			.put("id", MODEL)
			.put("object", "model")
			.put("created", createdAt)
			.put("owned_by", "reactor-ai-guard");
		return OpenAiEndpoint.send(response, 200, OpenAiErrors.write(list), 0);
	}

	private Publisher<Void> unknownRoute(HttpServerRequest request, HttpServerResponse response) {
		ObjectNode error = OpenAiErrors.error("invalid_request_error", "unknown_url", null, "Unknown request URL: "
				+ request.method().name() + " " + request.uri() + ". Please check the URL for typos.");
		// read the body first, so the answer never overtakes the request
		return request.receive().then(OpenAiEndpoint.send(response, 404, OpenAiErrors.write(error), 0));
	}
}
