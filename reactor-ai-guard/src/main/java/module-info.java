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
	requires static com.fasterxml.jackson.databind;
	requires static reactor.netty.core;
	requires static reactor.netty.http;
	requires static io.netty.buffer;
	requires static io.netty.common;
	requires static io.netty.transport;
	requires static io.netty.codec.http;
	requires static spring.core;
	requires static jtokkit;
	requires static com.github.benmanes.caffeine;
	requires static com.networknt.schema;
	requires static io.github.bucket4j.core;
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

	provides reactor.blockhound.integration.BlockHoundIntegration
			with dev.aiguard.internal.AiGuardBlockHoundIntegration;
}
