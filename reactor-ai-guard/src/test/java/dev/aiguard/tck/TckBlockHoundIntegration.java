package dev.aiguard.tck;

import reactor.blockhound.BlockHound;
import reactor.blockhound.integration.BlockHoundIntegration;

/**
 * Lets the TCK's own subscribers record what they receive when the library delivers it on a
 * Reactor thread. They hand each signal to the test thread through an {@code ArrayBlockingQueue},
 * whose lock may be contended for an instant by the test thread's poll: BlockHound would report
 * that park inside the TCK's {@code onNext}, not in library code. Only those TCK methods are
 * allowed; the library's code on the same threads is still watched. Registered for the test run
 * in {@code META-INF/services}.
 */
public final class TckBlockHoundIntegration implements BlockHoundIntegration {

	@Override
	public void applyTo(BlockHound.Builder builder) {
		builder.allowBlockingCallsInside("org.reactivestreams.tck.TestEnvironment$Receptacle", "add");
		builder.allowBlockingCallsInside("org.reactivestreams.tck.TestEnvironment$Receptacle", "complete");
		builder.allowBlockingCallsInside("org.reactivestreams.tck.TestEnvironment$Promise", "complete");
		builder.allowBlockingCallsInside("org.reactivestreams.tck.TestEnvironment$Promise", "completeImmediatly");
	}
}
