package dev.aiguard.redis;

import reactor.blockhound.BlockHound;
import reactor.blockhound.integration.BlockHoundIntegration;

/**
 * What BlockHound lets through in this module's tests. A task handed to a connection worker while the
 * worker's own executor shuts down takes the executor's main lock on the way out
 * ({@code ThreadPoolExecutor.tryTerminate}); when that lock is contended on a Lettuce event loop,
 * BlockHound's error is thrown from inside the lock's queue and leaves the lock held by no thread, so the
 * next closer parks forever. The wait itself is the executor's own bookkeeping at shutdown, bounded by
 * the other holder's few instructions; the error's side effect, not the wait, is what hung the suite.
 */
public final class RedisTestsBlockHoundIntegration implements BlockHoundIntegration {

	@Override
	public void applyTo(BlockHound.Builder builder) {
		builder.allowBlockingCallsInside("java.util.concurrent.ThreadPoolExecutor", "tryTerminate");
	}
}
