package dev.aiguard.redis;

import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolver;

/**
 * Gives each test method its own {@link RedisServer} (a parameter of the test method) and stops it
 * after the test, whatever the outcome.
 *
 * <pre>{@code
 * @ExtendWith(RedisServerExtension.class)
 * class SomeTest {
 *     @Test
 *     void works(RedisServer redis) { ... redis.kill(); ... redis.restart(); ... }
 * }
 * }</pre>
 */
final class RedisServerExtension implements ParameterResolver, AfterEachCallback {

	private static final ExtensionContext.Namespace NS = ExtensionContext.Namespace.create(RedisServerExtension.class);

	@Override
	public boolean supportsParameter(ParameterContext parameter, ExtensionContext context) {
		return parameter.getParameter().getType() == RedisServer.class;
	}

	@Override
	public Object resolveParameter(ParameterContext parameter, ExtensionContext context) {
		RedisServer server = RedisServer.start();
		context.getStore(NS).put(parameter.getIndex(), server);
		return server;
	}

	@Override
	public void afterEach(ExtensionContext context) {
		for (int i = 0; i < 8; i++) {
			RedisServer server = context.getStore(NS).remove(i, RedisServer.class);
			if (server != null) {
				server.close();
			}
		}
	}
}
