package dev.aiguard.demo;

import java.lang.management.LockInfo;
import java.lang.management.ManagementFactory;
import java.lang.management.MonitorInfo;
import java.lang.management.ThreadInfo;
import java.util.concurrent.TimeoutException;

import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.LifecycleMethodExecutionExceptionHandler;
import org.junit.jupiter.api.extension.TestExecutionExceptionHandler;
import reactor.netty.http.HttpResources;

/**
 * Prints every thread's whole stack when a test (or its set-up) fails because it waited too long:
 * a blocking read of a response or a stream that timed out. A request that is never answered says
 * nothing about why; the dump taken at that moment shows what the server's event loops, the
 * guard's workers and the mock were doing. Registered for every test of this module through
 * {@code META-INF/services} (JUnit's extension auto-detection); the failure itself is rethrown as is.
 */
public final class ThreadDumpOnTimeout implements TestExecutionExceptionHandler, LifecycleMethodExecutionExceptionHandler {

	@Override
	public void handleTestExecutionException(ExtensionContext context, Throwable failure) throws Throwable {
		dumpWhenWaited(context, failure);
		throw failure;
	}

	@Override
	public void handleBeforeEachMethodExecutionException(ExtensionContext context, Throwable failure) throws Throwable {
		dumpWhenWaited(context, failure);
		throw failure;
	}

	@Override
	public void handleAfterEachMethodExecutionException(ExtensionContext context, Throwable failure) throws Throwable {
		dumpWhenWaited(context, failure);
		throw failure;
	}

	private static void dumpWhenWaited(ExtensionContext context, Throwable failure) {
		if (waited(failure)) {
			System.out.println(dump(context.getUniqueId()));
		}
	}

	/** @return whether the failure, or one of its causes, is a timeout */
	static boolean waited(Throwable failure) {
		for (Throwable t = failure; t != null; t = t.getCause() == t ? null : t.getCause()) {
			if (t instanceof TimeoutException || (t.getMessage() != null && t.getMessage().contains("Timeout on blocking read"))) {
				return true;
			}
		}
		return false;
	}

	/** @return every live thread with its state, locks and whole stack, headed by {@code why} */
	static String dump(String why) {
		StringBuilder out = new StringBuilder(64 * 1024);
		out.append("==== thread dump: ").append(why).append(" timed out\n");
		out.append("Reactor Netty global resources: ").append(System.identityHashCode(HttpResources.get())).append('\n');
		for (ThreadInfo info : ManagementFactory.getThreadMXBean().dumpAllThreads(true, true)) {
			out.append('"').append(info.getThreadName()).append("\" #").append(info.getThreadId())
				.append(info.isDaemon() ? " daemon " : " ").append(info.getThreadState());
			if (info.getLockName() != null) {
				out.append(" on ").append(info.getLockName());
			}
			if (info.getLockOwnerName() != null) {
				out.append(" owned by \"").append(info.getLockOwnerName()).append('"');
			}
			out.append('\n');
			StackTraceElement[] stack = info.getStackTrace();
			MonitorInfo[] monitors = info.getLockedMonitors();
			for (int i = 0; i < stack.length; i++) {
				out.append("\tat ").append(stack[i]).append('\n');
				for (MonitorInfo monitor : monitors) {
					if (monitor.getLockedStackDepth() == i) {
						out.append("\t- locked ").append(monitor).append('\n');
					}
				}
			}
			for (LockInfo sync : info.getLockedSynchronizers()) {
				out.append("\t- holds ").append(sync).append('\n');
			}
			out.append('\n');
		}
		return out.append("==== end of thread dump\n").toString();
	}
}
