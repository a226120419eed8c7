package dev.aiguard.openai;

import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;

import com.openai.core.http.AsyncStreamResponse;
import com.openai.core.http.Headers;
import com.openai.errors.OpenAIIoException;
import com.openai.errors.RateLimitException;
import dev.aiguard.provider.ProviderConnectionException;
import dev.aiguard.provider.RateLimitedException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.reactivestreams.Subscription;
import reactor.core.Exceptions;
import reactor.core.publisher.BaseSubscriber;
import reactor.core.publisher.Hooks;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;
import reactor.test.StepVerifier;
import reactor.test.util.RaceTestUtils;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

/** The bridge from the SDK's push-style stream to a Flux, against a scripted SDK stream. */
class FluxAsyncStreamTest {

	// like the default close scheduler: threads that may block (a single() scheduler's may not)
	private final Scheduler closer = Schedulers.newBoundedElastic(1, 100, "closer");

	@AfterEach
	void dispose() {
		closer.dispose();
		Hooks.resetOnErrorDropped();
	}

	/** An SDK stream the test drives: it keeps the handler, counts closes and where they ran. */
	static final class ScriptedStream implements AsyncStreamResponse<String> {

		volatile Handler<? super String> handler;
		final AtomicInteger closes = new AtomicInteger();
		final List<String> closedOn = new CopyOnWriteArrayList<>();
		final List<Boolean> closedOnNonBlocking = new CopyOnWriteArrayList<>();
		RuntimeException failOnClose;
		RuntimeException failOnSubscribe;

		@Override
		public AsyncStreamResponse<String> subscribe(Handler<? super String> h) {
			if (failOnSubscribe != null) {
				throw failOnSubscribe;
			}
			this.handler = h;
			return this;
		}

		@Override
		public AsyncStreamResponse<String> subscribe(Handler<? super String> h, Executor executor) {
			return subscribe(h);
		}

		@Override
		public CompletableFuture<Void> onCompleteFuture() {
			return new CompletableFuture<>();
		}

		@Override
		public void close() {
			closes.incrementAndGet();
			closedOn.add(Thread.currentThread().getName());
			closedOnNonBlocking.add(Schedulers.isInNonBlockingThread());
			if (failOnClose != null) {
				throw failOnClose;
			}
		}

		void push(String... values) {
			for (String v : values) {
				handler.onNext(v);
			}
		}

		void complete() {
			handler.onComplete(Optional.empty());
		}
	}

	private FluxAsyncStream<String> flux(ScriptedStream sdk, int capacity) {
		return new FluxAsyncStream<>(() -> sdk, capacity, closer);
	}

	@Test
	void emitsWhatTheSdkPushesThenCompletes() {
		ScriptedStream sdk = new ScriptedStream();

		StepVerifier.create(flux(sdk, 8))
			.then(() -> sdk.push("a", "b"))
			.expectNext("a", "b")
			.then(sdk::complete)
			.expectComplete()
			.verify(Duration.ofSeconds(5));
		assertThat(sdk.closes).as("the SDK closes a finished stream itself").hasValue(0);
	}

	@Test
	void startsOneSdkStreamPerSubscription() {
		AtomicInteger started = new AtomicInteger();
		Supplier<AsyncStreamResponse<String>> start = () -> {
			started.incrementAndGet();
			ScriptedStream sdk = new ScriptedStream();
			return new AsyncStreamResponse<>() {
				@Override
				public AsyncStreamResponse<String> subscribe(Handler<? super String> handler) {
					sdk.subscribe(handler);
					handler.onNext("only");
					handler.onComplete(Optional.empty());
					return this;
				}

				@Override
				public AsyncStreamResponse<String> subscribe(Handler<? super String> handler, Executor executor) {
					return subscribe(handler);
				}

				@Override
				public CompletableFuture<Void> onCompleteFuture() {
					return CompletableFuture.completedFuture(null);
				}

				@Override
				public void close() {
				}
			};
		};
		FluxAsyncStream<String> flux = new FluxAsyncStream<>(start, 4, closer);

		assertThat(started).hasValue(0);
		StepVerifier.create(flux.repeat(2)).expectNext("only", "only", "only").verifyComplete();
		assertThat(started).hasValue(3);
	}

	@Test
	void honoursZeroDemand() {
		ScriptedStream sdk = new ScriptedStream();

		StepVerifier.create(flux(sdk, 8), 0)
			.then(() -> sdk.push("a", "b", "c"))
			.then(sdk::complete)
			.expectNoEvent(Duration.ofMillis(50))
			.thenRequest(1)
			.expectNext("a")
			.thenRequest(2)
			.expectNext("b", "c")
			.expectComplete()
			.verify(Duration.ofSeconds(5));
	}

	@Test
	void aFullBufferParksTheSdksThreadUntilTheSubscriberAsks() {
		ScriptedStream sdk = new ScriptedStream();
		AtomicReference<Thread> producer = new AtomicReference<>();
		AtomicInteger pushed = new AtomicInteger();

		StepVerifier.create(flux(sdk, 2), 0)
			.then(() -> {
				Thread t = new Thread(() -> {
					for (String v : List.of("a", "b", "c", "d", "e")) {
						sdk.handler.onNext(v);
						pushed.incrementAndGet();
					}
					sdk.complete();
				}, "sdk-reader");
				producer.set(t);
				t.start();
			})
			.then(() -> SdkMock.await(() -> producer.get().getState() == Thread.State.WAITING ? 1 : 0, 1))
			.then(() -> assertThat(pushed).as("two buffered, the third waits").hasValue(2))
			.thenRequest(5)
			.expectNext("a", "b", "c", "d", "e")
			.expectComplete()
			.verify(Duration.ofSeconds(5));
		assertThat(pushed).hasValue(5);
	}

	@Test
	void aFullBufferOnANonBlockingThreadFailsWithOverflowAndStopsTheSdk() {
		ScriptedStream sdk = new ScriptedStream();
		Scheduler parallel = Schedulers.newParallel("sdk-on-parallel", 1);
		AtomicReference<Throwable> thrownToSdk = new AtomicReference<>();
		try {
			StepVerifier.create(flux(sdk, 2), 0)
				.then(() -> parallel.schedule(() -> {
					try {
						sdk.push("a", "b", "c");
					}
					catch (RuntimeException e) {
						thrownToSdk.set(e);
					}
				}))
				.then(() -> SdkMock.await(() -> thrownToSdk.get() == null ? 0 : 1, 1))
				.thenRequest(5)
				// what was buffered first, then the error
				.expectNext("a", "b")
				.expectErrorSatisfies(e -> assertThat(Exceptions.isOverflow(e)).as("overflow: %s", e).isTrue())
				.verify(Duration.ofSeconds(5));
		}
		finally {
			parallel.dispose();
		}
		assertThat(Exceptions.isOverflow(thrownToSdk.get())).isTrue();
	}

	@Test
	void cancelClosesTheSdkStreamOnceOnTheCloseScheduler() {
		ScriptedStream sdk = new ScriptedStream();

		StepVerifier.create(flux(sdk, 8))
			.then(() -> sdk.push("a"))
			.expectNext("a")
			.thenCancel()
			.verify(Duration.ofSeconds(5));

		SdkMock.await(() -> sdk.closes.get(), 1);
		assertThat(sdk.closedOn).singleElement().asString().startsWith("closer");
	}

	@Test
	void cancelFromANonBlockingThreadNeverClosesThere() {
		ScriptedStream sdk = new ScriptedStream();
		Scheduler parallel = Schedulers.newParallel("subscriber", 1);
		try {
			StepVerifier.create(flux(sdk, 8).take(1).subscribeOn(parallel))
				.then(() -> SdkMock.await(() -> sdk.handler == null ? 0 : 1, 1))
				.then(() -> parallel.schedule(() -> sdk.push("a")))
				.expectNext("a")
				.expectComplete()
				.verify(Duration.ofSeconds(5));
		}
		finally {
			parallel.dispose();
		}
		SdkMock.await(() -> sdk.closes.get(), 1);
		assertThat(sdk.closedOnNonBlocking).containsExactly(false);
	}

	@Test
	void theNextChunkAfterACancelIsRefusedSoTheSdkStopsReading() {
		ScriptedStream sdk = new ScriptedStream();
		StepVerifier.create(flux(sdk, 8)).then(() -> sdk.push("a")).expectNext("a").thenCancel().verify(Duration.ofSeconds(5));

		assertThatExceptionOfType(java.util.concurrent.CancellationException.class).isThrownBy(() -> sdk.push("b"));
		sdk.handler.onComplete(Optional.of(new OpenAIIoException("Stream failed")));
		SdkMock.await(() -> sdk.closes.get(), 1);
	}

	@Test
	void aCancelBeforeTheStartStartsNothing() {
		AtomicInteger started = new AtomicInteger();
		FluxAsyncStream<String> flux = new FluxAsyncStream<>(() -> {
			started.incrementAndGet();
			return new ScriptedStream();
		}, 4, closer);

		flux.subscribe(new BaseSubscriber<>() {
			@Override
			protected void hookOnSubscribe(Subscription subscription) {
				subscription.cancel();
			}
		});

		assertThat(started).hasValue(0);
	}

	@Test
	void aCancelWhileTheSdkStreamStartsClosesItOnceStarted() {
		ScriptedStream sdk = new ScriptedStream();
		AtomicReference<Subscription> subscription = new AtomicReference<>();
		FluxAsyncStream<String> flux = new FluxAsyncStream<>(() -> {
			subscription.get().cancel();
			return sdk;
		}, 4, closer);

		flux.subscribe(new BaseSubscriber<>() {
			@Override
			protected void hookOnSubscribe(Subscription s) {
				subscription.set(s);
			}
		});

		SdkMock.await(() -> sdk.closes.get(), 1);
	}

	@Test
	void sdkErrorsReachTheSubscriberTyped() {
		ScriptedStream sdk = new ScriptedStream();
		RateLimitException limited = RateLimitException.builder()
			.headers(Headers.builder().put("Retry-After", "3").build())
			.build();

		StepVerifier.create(flux(sdk, 8))
			.then(() -> sdk.handler.onComplete(Optional.of(new CompletionException(limited))))
			.expectErrorSatisfies(e -> assertThat(e).isInstanceOfSatisfying(RateLimitedException.class,
					r -> assertThat(r.retryAfter()).contains(Duration.ofSeconds(3))))
			.verify(Duration.ofSeconds(5));
	}

	@Test
	void aFailingStartIsAnError() {
		FluxAsyncStream<String> flux = new FluxAsyncStream<>(() -> {
			throw new OpenAIIoException("Request failed", new java.net.ConnectException("Connection refused"));
		}, 4, closer);

		StepVerifier.create(flux).expectError(ProviderConnectionException.class).verify(Duration.ofSeconds(5));
	}

	@Test
	void aSdkThatRefusesTheHandlerIsAnErrorAndIsClosed() {
		ScriptedStream sdk = new ScriptedStream();
		sdk.failOnSubscribe = new IllegalStateException("Cannot subscribe more than once");

		StepVerifier.create(flux(sdk, 4))
			.expectErrorMessage("Cannot subscribe more than once")
			.verify(Duration.ofSeconds(5));
		SdkMock.await(() -> sdk.closes.get(), 1);
	}

	@Test
	void aFailingCloseIsDroppedNotThrown() {
		ScriptedStream sdk = new ScriptedStream();
		sdk.failOnClose = new IllegalStateException("close failed");
		List<Throwable> dropped = new CopyOnWriteArrayList<>();
		Hooks.onErrorDropped(dropped::add);

		flux(sdk, 4).subscribe().dispose();

		SdkMock.await(() -> dropped.size(), 1);
		assertThat(dropped.get(0)).hasMessage("close failed");
	}

	@Test
	void cancelRacingChunksClosesOnceAndDeliversNoMoreThanAsked() {
		for (int round = 0; round < 200; round++) {
			ScriptedStream sdk = new ScriptedStream();
			List<String> received = new CopyOnWriteArrayList<>();
			AtomicReference<Subscription> subscription = new AtomicReference<>();
			flux(sdk, 64).subscribe(new BaseSubscriber<>() {
				@Override
				protected void hookOnSubscribe(Subscription s) {
					subscription.set(s);
					s.request(3);
				}

				@Override
				protected void hookOnNext(String value) {
					received.add(value);
				}
			});
			RaceTestUtils.race(() -> subscription.get().cancel(), () -> {
				try {
					sdk.push("a", "b", "c", "d");
				}
				catch (java.util.concurrent.CancellationException refused) {
					// the SDK would stop reading here
				}
			});
			SdkMock.await(() -> sdk.closes.get(), 1);
			assertThat(received.size()).isLessThanOrEqualTo(3);
		}
	}

	@Test
	void aBufferBelowOneIsRefusedByName() {
		assertThatIllegalArgumentException().isThrownBy(() -> new FluxAsyncStream<>(ScriptedStream::new, 0, closer))
			.withMessage("bufferSize must be at least 1, was 0");
	}
}
