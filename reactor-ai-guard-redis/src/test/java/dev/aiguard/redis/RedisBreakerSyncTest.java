package dev.aiguard.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.codec.StringCodec;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import reactor.core.publisher.Mono;

import dev.aiguard.breaker.BreakerConfig;
import dev.aiguard.breaker.BreakerEvent;
import dev.aiguard.breaker.BreakerPermit;
import dev.aiguard.breaker.BreakerState;
import dev.aiguard.breaker.CircuitBreaker;
import dev.aiguard.core.Outcome;

/** Two instances' breakers kept in step through a real Redis: open together, probe by quota, close together, no echo. */
@ExtendWith(RedisServerExtension.class)
class RedisBreakerSyncTest {

	private static final Duration OPEN_WAIT = Duration.ofMillis(500);
	private static final Duration SPREAD = Duration.ofSeconds(2);

	private final List<AutoCloseable> open = new ArrayList<>();
	private final SimpleMeterRegistry registry = new SimpleMeterRegistry();

	@AfterEach
	void close() throws Exception {
		for (AutoCloseable c : open) {
			c.close();
		}
	}

	/** One instance: its own client, sync and breaker, the breaker's transitions recorded. */
	private final class Instance {
		final CircuitBreaker breaker;
		final RedisBreakerSync sync;
		final List<BreakerEvent.StateTransition> transitions = new CopyOnWriteArrayList<>();

		Instance(RedisServer redis, String id, int probeQuota) throws Exception {
			RedisEndpoint endpoint = RedisEndpoint.create(Instances.settings(redis));
			open.add(endpoint);
			breaker = CircuitBreaker.builder("openai").config(config()).listener(e -> {
				if (e instanceof BreakerEvent.StateTransition t) {
					transitions.add(t);
				}
			}).build();
			sync = RedisBreakerSync.builder(endpoint).instanceId(id).probeQuota(probeQuota)
					.verdictWait(Duration.ofSeconds(30)).metrics(new MicrometerRedisMetrics(registry)).build();
			open.add(0, sync);
			sync.attach(breaker).get(5, TimeUnit.SECONDS);
		}

		List<String> moves() {
			return transitions.stream().map(t -> t.from() + "->" + t.to()).toList();
		}

		void fail(int times) {
			for (int i = 0; i < times; i++) {
				breaker.tryAcquire().record(Outcome.FAILURE, -1);
			}
		}
	}

	private static BreakerConfig config() {
		return BreakerConfig.custom()
				.failureRateThreshold(0.5)
				.minimumCalls(2)
				.openWait(OPEN_WAIT)
				.openWaitJitter(0)
				.halfOpenProbes(2)
				.successesToClose(2)
				.minimumDwell(Duration.ZERO)
				.build();
	}

	private double counter(String name, String state) {
		var c = registry.find(name).tag("breaker", "openai").tag("state", state).counter();
		return c == null ? 0 : c.count();
	}

	/**
	 * Waits until a counter reaches {@code expected}: a publication is counted when Redis answers the
	 * publisher's PUBLISH, which may come after the peer got the message, and a received transition
	 * is counted after the breaker's listeners heard of it; two seconds are room for a busy machine.
	 */
	private void awaitCounter(String name, String state, double expected) {
		Await.until(name + "{state=" + state + "} = " + expected, Duration.ofSeconds(2),
				() -> counter(name, state) >= expected);
	}

	/** @return a permit once the breaker grants one (after its open wait), polled without sleeping */
	private static BreakerPermit permitWhenProbing(CircuitBreaker breaker) {
		AtomicReference<BreakerPermit> permit = new AtomicReference<>();
		Await.until(breaker.name() + " grants a probe", SPREAD.plus(OPEN_WAIT), () -> {
			BreakerPermit p = breaker.tryAcquire();
			permit.set(p);
			return p != null;
		});
		return permit.get();
	}

	/** A quiet period in which an echo, if there were one, would have travelled several times. */
	private static void quietPeriod() {
		Mono.delay(Duration.ofMillis(400)).block(Duration.ofSeconds(2));
	}

	@Test
	void aTripOpensThePeerAtOnceAndNothingEchoes(RedisServer redis) throws Exception {
		Instance a = new Instance(redis, "api-1", 1);
		Instance b = new Instance(redis, "api-2", 1);

		a.fail(2);
		assertThat(a.breaker.state()).isEqualTo(BreakerState.OPEN);
		Duration took = Await.until("the peer opens", Duration.ofSeconds(1), () -> b.breaker.state() == BreakerState.OPEN);
		quietPeriod();

		assertThat(took).isLessThan(Duration.ofSeconds(1));
		assertThat(b.breaker.tryAcquire()).as("the peer refuses without a failure of its own").isNull();
		assertThat(b.transitions).singleElement().satisfies(t -> {
			assertThat(t.from()).isEqualTo(BreakerState.CLOSED);
			assertThat(t.reason()).startsWith("peer api-1: trip policy pressure");
		});
		assertThat(a.moves()).as("no echo back to the origin").containsExactly("CLOSED->OPEN");
		awaitCounter("aiguard.redis.breaker.published", "OPEN", 1);
		awaitCounter("aiguard.redis.breaker.received", "OPEN", 1);
		assertThat(counter("aiguard.redis.breaker.published", "OPEN")).as("published once, by api-1 only")
				.isEqualTo(1);
		assertThat(counter("aiguard.redis.breaker.received", "OPEN")).isEqualTo(1);
	}

	@Test
	void withAQuotaOfOneOnlyTheOriginProbesAndItsVerdictClosesThePeer(RedisServer redis) throws Exception {
		Instance a = new Instance(redis, "api-1", 1);
		Instance b = new Instance(redis, "api-2", 1);
		a.fail(2);
		Await.until("the peer opens", Duration.ofSeconds(1), () -> b.breaker.state() == BreakerState.OPEN);

		BreakerPermit probe = permitWhenProbing(a.breaker);
		assertThat(a.breaker.state()).isEqualTo(BreakerState.HALF_OPEN);
		assertThat(b.breaker.tryAcquire()).as("no probe slot left for api-2: it waits for the verdict").isNull();
		assertThat(b.transitions.get(0).reason()).contains("waiting for their verdict");
		probe.record(Outcome.SUCCESS, 1_000);
		a.breaker.tryAcquire().record(Outcome.SUCCESS, 1_000);
		assertThat(a.breaker.state()).isEqualTo(BreakerState.CLOSED);

		Await.until("the peer closes on the verdict", Duration.ofSeconds(1),
				() -> b.breaker.state() == BreakerState.CLOSED);
		quietPeriod();
		assertThat(b.moves()).containsExactly("CLOSED->OPEN", "OPEN->CLOSED");
		assertThat(b.transitions.get(1).reason()).startsWith("peer api-1: 2 of 2 probes healthy");
		assertThat(a.moves()).containsExactly("CLOSED->OPEN", "OPEN->HALF_OPEN", "HALF_OPEN->CLOSED");
		awaitCounter("aiguard.redis.breaker.received", "CLOSED", 1);
		assertThat(counter("aiguard.redis.breaker.received", "CLOSED")).isEqualTo(1);
		assertThat(b.breaker.tryAcquire()).isNotNull();
	}

	@Test
	void withAQuotaOfTwoBothProbeTogether(RedisServer redis) throws Exception {
		Instance a = new Instance(redis, "api-1", 2);
		Instance b = new Instance(redis, "api-2", 2);
		a.fail(2);
		Await.until("the peer opens", Duration.ofSeconds(1), () -> b.breaker.state() == BreakerState.OPEN);

		BreakerPermit probeA = permitWhenProbing(a.breaker);
		BreakerPermit probeB = permitWhenProbing(b.breaker);

		assertThat(a.breaker.state()).isEqualTo(BreakerState.HALF_OPEN);
		assertThat(b.breaker.state()).isEqualTo(BreakerState.HALF_OPEN);
		assertThat(b.breaker.lastOpenWait()).as("api-1's wait, not api-2's own").isLessThanOrEqualTo(OPEN_WAIT);
		probeA.record(Outcome.CANCELLED, -1);
		probeB.record(Outcome.CANCELLED, -1);
	}

	@Test
	void aReopenStartsTheNextEpisodeOnThePeer(RedisServer redis) throws Exception {
		Instance a = new Instance(redis, "api-1", 1);
		Instance b = new Instance(redis, "api-2", 1);
		a.fail(2);
		Await.until("the peer opens", Duration.ofSeconds(1), () -> b.breaker.state() == BreakerState.OPEN);

		permitWhenProbing(a.breaker).record(Outcome.FAILURE, -1);
		a.breaker.tryAcquire().record(Outcome.FAILURE, -1);
		assertThat(a.moves()).containsExactly("CLOSED->OPEN", "OPEN->HALF_OPEN", "HALF_OPEN->OPEN");

		Await.until("the peer follows the re-open", Duration.ofSeconds(1), () -> b.transitions.size() == 2);
		assertThat(b.moves()).containsExactly("CLOSED->OPEN", "OPEN->OPEN");
		assertThat(b.breaker.untilProbe().orElseThrow()).as("still waiting for api-1's next verdict")
				.isGreaterThan(Duration.ofSeconds(5));
		awaitCounter("aiguard.redis.breaker.published", "OPEN", 2);
		assertThat(counter("aiguard.redis.breaker.published", "OPEN")).isEqualTo(2);
	}

	@Test
	void ignoresItsOwnMessagesOlderEpisodesAndGarbage(RedisServer redis) throws Exception {
		Instance b = new Instance(redis, "api-2", 1);
		RedisEndpoint raw = RedisEndpoint.create(Instances.settings(redis));
		open.add(raw);
		StatefulRedisConnection<String, String> c = raw.client().connect(StringCodec.UTF8);
		open.add(c);
		String channel = "aiguard:breaker:openai";

		c.sync().publish(channel, "v1|api-2|7|OPEN|60000|from itself");
		c.sync().publish(channel, "not a breaker message");
		c.sync().publish(channel, "v9|api-1|7|OPEN|60000|a future format");
		c.sync().publish(channel, "v1|api-1|7|FORCED_OPEN|60000|an operator state");
		c.sync().publish(channel, "v1|api-1|5|OPEN|1000|episode 5");
		Await.until("episode 5 applied", Duration.ofSeconds(1), () -> b.breaker.state() == BreakerState.OPEN);
		c.sync().publish(channel, "v1|api-1|4|CLOSED|0|a close of episode 4");
		c.sync().publish(channel, "v1|api-1|3|OPEN|1000|episode 3");
		c.sync().publish(channel, "v1|api-1|5|CLOSED|0|episode 5 healthy");
		Await.until("episode 5 closed", Duration.ofSeconds(1), () -> b.breaker.state() == BreakerState.CLOSED);

		assertThat(b.moves()).containsExactly("CLOSED->OPEN", "OPEN->CLOSED");
		assertThat(b.transitions).extracting(BreakerEvent.StateTransition::reason)
				.containsExactly("peer api-1: episode 5", "peer api-1: episode 5 healthy");
	}

	@Test
	void operatorStatesAreNeitherPublishedNorOverridden(RedisServer redis) throws Exception {
		Instance a = new Instance(redis, "api-1", 1);
		Instance b = new Instance(redis, "api-2", 1);
		b.breaker.transitionToDisabled();
		a.breaker.transitionToForcedOpen();
		a.breaker.transitionToClosed();
		a.fail(2);
		Await.until("the trip is published", Duration.ofSeconds(1),
				() -> counter("aiguard.redis.breaker.published", "OPEN") == 1);
		quietPeriod();

		assertThat(b.breaker.state()).isEqualTo(BreakerState.DISABLED);
		assertThat(counter("aiguard.redis.breaker.published", "CLOSED")).isZero();
		assertThat(counter("aiguard.redis.breaker.received", "OPEN")).isZero();
	}

	@Test
	void refusesBadSettingsNamingThem(RedisServer redis) throws Exception {
		RedisEndpoint endpoint = RedisEndpoint.create(Instances.settings(redis));
		open.add(endpoint);
		assertThatThrownBy(() -> RedisBreakerSync.builder(endpoint).instanceId("a|b"))
				.isInstanceOf(IllegalArgumentException.class).hasMessage("instanceId must be non-blank without '|', was 'a|b'");
		assertThatThrownBy(() -> RedisBreakerSync.builder(endpoint).probeQuota(0))
				.isInstanceOf(IllegalArgumentException.class).hasMessage("probeQuota must be >= 1, was 0");
		assertThatThrownBy(() -> RedisBreakerSync.builder(endpoint).verdictWait(Duration.ZERO))
				.isInstanceOf(IllegalArgumentException.class).hasMessage("verdictWait must be > 0, was PT0S");
		RedisBreakerSync sync = RedisBreakerSync.builder(endpoint).build();
		open.add(0, sync);
		CompletableFuture<Void> attached = sync.attach(CircuitBreaker.of("openai", config()));
		assertThatThrownBy(() -> sync.attach(CircuitBreaker.of("openai", config())))
				.isInstanceOf(IllegalStateException.class).hasMessageContaining("'openai' is attached already");
		attached.get(5, TimeUnit.SECONDS);
	}
}
