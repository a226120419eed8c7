package dev.aiguard.demo;

import dev.aiguard.test.mock.MockModelServer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.SmartLifecycle;

/**
 * Stops the embedded mock with the context and starts it again with it. Stopping a context (at
 * shutdown, or when Spring's test framework pauses a cached one) disposes Reactor Netty's global
 * event loops, which the mock's server runs on: a mock left running would listen on nothing. So it
 * stops before those loops go and, when the context starts again, binds anew (another free port,
 * unless {@code aiguard.mock.port} fixes it) and logs where.
 *
 * <pre>{@code
 * context.stop();     // the mock stops
 * context.start();    // the mock listens again; the upstream client follows its new base URL
 * }</pre>
 */
final class MockServerLifecycle implements SmartLifecycle {

	private static final Logger log = LoggerFactory.getLogger(MockServerLifecycle.class);

	private final MockModelServer mock;

	/** @param mock started already: the first start of the context finds it running */
	MockServerLifecycle(MockModelServer mock) {
		this.mock = mock;
	}

	@Override
	public void start() {
		if (!mock.isRunning()) {
			mock.start();
			logAddress(mock);
		}
	}

	@Override
	public void stop() {
		mock.stop();
	}

	@Override
	public boolean isRunning() {
		return mock.isRunning();
	}

	/** After Reactor Netty's resources (phase 0) start, before they stop; with the web server. */
	@Override
	public int getPhase() {
		return SmartLifecycle.DEFAULT_PHASE - 2048;
	}

	/** The one INFO line that says where the mock listens, in words a client can use. */
	static void logAddress(MockModelServer mock) {
		log.info("Embedded mock model listening at {} (an OpenAI-compatible base URL: streaming "
				+ "POST /chat/completions, any model name, any API key)", mock.baseUrl());
	}
}
