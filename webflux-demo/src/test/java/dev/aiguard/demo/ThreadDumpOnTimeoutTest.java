package dev.aiguard.demo;

import java.util.concurrent.TimeoutException;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class ThreadDumpOnTimeoutTest {

	@Test
	void aBlockingReadThatTimedOutIsAWaitAndAnAssertionIsNot() {
		TimeoutException cause = new TimeoutException("Timeout on blocking read for 20000000000 NANOSECONDS");
		assertThat(ThreadDumpOnTimeout.waited(new IllegalStateException(cause.getMessage(), cause))).isTrue();
		assertThat(ThreadDumpOnTimeout.waited(new AssertionError("expected: 200 but was: 500"))).isFalse();
		assertThat(ThreadDumpOnTimeout.waited(new RuntimeException(new IllegalStateException("closed")))).isFalse();
	}

	@Test
	void theDumpHoldsEveryThreadWithItsWholeStack() {
		String dump = ThreadDumpOnTimeout.dump("[test]");
		assertThat(dump).startsWith("==== thread dump: [test] timed out")
			.contains("\"" + Thread.currentThread().getName() + "\"")
			.contains("ThreadDumpOnTimeoutTest.theDumpHoldsEveryThreadWithItsWholeStack")
			.endsWith("==== end of thread dump\n");
	}
}
