/**
 * reactor-ai-guard: resilience for streaming LLM answers on Project Reactor. Exports the public
 * packages only; {@code dev.aiguard.internal} stays inside. Every integration but Reactor itself is
 * optional ({@code requires static}): the jar works on the class path and on the module path alike.
 */
module dev.aiguard {
	requires transitive reactor.core;
	requires transitive org.reactivestreams;
	requires static org.jspecify;
	requires java.management;
	requires static jdk.management;

	requires static micrometer.core;
	requires static micrometer.observation;
	requires static tools.jackson.core;
	requires static tools.jackson.databind;
	requires static reactor.netty.core;
	requires static reactor.netty.http;
	requires static io.netty.buffer;
	requires static io.netty.common;
	requires static io.netty.transport;
	requires static io.netty.codec.http;
	requires static spring.core;
	// jtokkit 1.1.0's jar names no module (no module-info, no Automatic-Module-Name), so its name is
	// derived from the file name, "jtokkit", and the compiler warns about that. Static, so it only
	// matters to a module-path application that counts tokens with it; consumer-tests' module-path
	// project adds it by that name, so a jtokkit that names itself otherwise fails the build.
	requires static jtokkit;
	requires static com.github.benmanes.caffeine;
	requires static com.networknt.schema;
	requires static io.github.bucket4j.core;
	// only to compile AiGuardBlockHoundIntegration
	requires static reactor.blockhound;

	exports dev.aiguard;
	exports dev.aiguard.core;
	exports dev.aiguard.admission;
	exports dev.aiguard.breaker;
	exports dev.aiguard.budget;
	exports dev.aiguard.chat;
	exports dev.aiguard.fallback;
	exports dev.aiguard.load;
	exports dev.aiguard.metrics;
	exports dev.aiguard.provider;
	exports dev.aiguard.retry;
	exports dev.aiguard.sse;
	exports dev.aiguard.stall;
	exports dev.aiguard.truncation;
	exports dev.aiguard.validation;

	// No "provides" of BlockHound's integration: a provides clause needs its service type's module at
	// start-up even when the requires is static, so a module path without BlockHound would not start.
	// The integration is registered through META-INF/services, which BlockHound reads on the class
	// path, where tests that install it run.
}
