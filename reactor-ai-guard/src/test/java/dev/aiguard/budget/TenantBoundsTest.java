package dev.aiguard.budget;

import java.lang.management.ManagementFactory;
import java.math.BigDecimal;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;

import tools.jackson.databind.json.JsonMapper;
import dev.aiguard.admission.AdmissionRejectedException;
import dev.aiguard.core.Priority;
import dev.aiguard.metrics.GuardMetrics;
import dev.aiguard.metrics.MicrometerGuardMetrics;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.RepeatedTest;
import org.junit.jupiter.api.Test;
import reactor.test.util.RaceTestUtils;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Untrusted tenant ids do not grow the gate, its store, the meters or the status view without
 * bound: idle tenants are let go once their buckets are full again, a cap holds the rest, per-tenant
 * series are opt-in and capped, and the summary lists a few tenants whatever their number.
 */
class TenantBoundsTest {

	private final AtomicLong nanos = new AtomicLong();
	private final LocalBucketStore store = LocalBucketStore.create(nanos::get);
	private final BudgetSpec spec = BudgetSpec.defaults()
		.prices(PriceTable.in("USD").model("m", new BigDecimal("0.15"), new BigDecimal("0.60")))
		.tenants(TenantLimits.unlimited().requestsPerMinute(60).tokensPerMinute(40_000).costPerDay(new BigDecimal("5")));

	/** Remembers the last answer. */
	static final class Sink implements BudgetGate.Admission {
		boolean admitted;
		long tokens;
		long cost;

		@Override
		public void budgetAdmitted(long tokensTaken, long costTaken) {
			admitted = true;
			tokens = tokensTaken;
			cost = costTaken;
		}

		@Override
		public void budgetRefused(AdmissionRejectedException refusal) {
			admitted = false;
		}
	}

	@Test
	void aHundredThousandTenantsLeaveTheGateTheStoreTheMetersAndTheSummaryBounded() throws Exception {
		int cap = 1_000;
		int series = 50;
		SimpleMeterRegistry registry = new SimpleMeterRegistry();
		BudgetGate gate = BudgetGate.create("chat", spec.maxTenants(cap), store,
				GuardMetrics.isolated(new MicrometerGuardMetrics(registry, series)), nanos::get);
		long heapBefore = usedHeapAfterGc();
		Sink sink = new Sink();
		for (int i = 0; i < 100_000; i++) {
			nanos.addAndGet(Duration.ofMillis(10).toNanos()); // 100 000 tenants in about 17 minutes
			BudgetGate.TenantBudget t = gate.tenant("tenant-" + i);
			gate.admit(t, Priority.P1, 100, gate.promptCost("m", 100), sink);
			assertThat(sink.admitted).isTrue();
			gate.settle(t, 150, sink.tokens, gate.costNanos("m", 100, 50), sink.cost, 0);
			gate.record(t, "m", false, 100, 50, gate.costNanos("m", 100, 50), i % 10 == 0);
		}
		// the gate holds at most its cap, the store three buckets a held tenant
		assertThat(gate.tenantCount()).isLessThanOrEqualTo(cap);
		assertThat(store.immediate().size()).isLessThanOrEqualTo(3 * cap);
		// series: 50 tenants of their own and __other__; 3 gauges per tenant of its own at most
		long aiguard = registry.getMeters().stream().filter(m -> m.getId().getName().startsWith("aiguard.")).count();
		long gauges = registry.getMeters().stream()
			.filter(m -> m.getId().getName().startsWith("aiguard.budget.remaining.")).count();
		assertThat(gauges).isLessThanOrEqualTo(3L * series);
		// per tenant with series: tokens x2, cost, retry tokens x2, retry cost, 3 gauges = 9; + __other__'s 6;
		// + the 4 store mode gauges (measured: 175)
		assertThat(aiguard).isLessThanOrEqualTo(9L * series + 6 + 4);
		assertThat(registry.getMeters().stream().map(Meter::getId)
			.filter(id -> "aiguard.tokens".equals(id.getName()))
			.map(id -> id.getTag("tenant")).distinct().count()).isLessThanOrEqualTo(series + 1);
		// the status view: the count and ten tenants, whatever the number of tenants
		TenantSummary summary = gate.summary(10);
		assertThat(summary.tenants()).isEqualTo(gate.tenantCount());
		assertThat(summary.mostDrained()).hasSizeLessThanOrEqualTo(10);
		int payload = JsonMapper.builder().build().writeValueAsBytes(summary).length;
		assertThat(payload).isLessThan(16 * 1024);
		// retained heap: what is left after a GC, with the gate and registry still reachable. Measured
		// 3 MB; holding every tenant with series of its own (cap and series at 200 000) retained
		// 494 MB and 630 004 meters. 16 MB leaves room for the JVM's own noise.
		long retained = usedHeapAfterGc() - heapBefore;
		assertThat(retained).isLessThan(16L * 1024 * 1024);
		assertThat(gate.tenantCount()).isPositive(); // keeps the gate reachable up to here
		assertThat(registry.getMeters()).isNotEmpty();
	}

	private static long usedHeapAfterGc() {
		for (int i = 0; i < 3; i++) {
			System.gc();
		}
		return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
	}

	@Test
	void readingABucketMakesNone() {
		BucketSpec rpm = BucketSpec.of("tenant.requests", 60, Duration.ofMinutes(1));
		assertThat(store.immediate().available(rpm, "acme")).isEqualTo(60);
		assertThat(store.immediate().size()).isZero();
	}

	@Test
	void anIdleTenantIsLetGoOnlyOnceItsBucketsAreFullAgain() {
		BudgetGate gate = BudgetGate.create("chat", spec.tenantIdle(Duration.ofMinutes(10)), store, GuardMetrics.noop(),
				nanos::get);
		Sink sink = new Sink();
		gate.admit(gate.tenant("acme"), Priority.P1, 20_000, 0, sink);
		gate.settle(gate.tenant("acme"), 40_000, sink.tokens, 0, sink.cost, 0); // tokens emptied
		// idle ten minutes: the tokens have refilled (40 000 a minute) but 10 min is not a day for the cost
		nanos.addAndGet(Duration.ofMinutes(10).toNanos());
		gate.sweepTenants(4);
		assertThat(gate.tenantCount()).isZero(); // the cost bucket lost only 1 micro-unit: full again long ago
		assertThat(store.immediate().size()).isZero();
		// drained: kept while it refills
		gate.admit(gate.tenant("acme"), Priority.P1, 40_000, 0, sink);
		assertThat(sink.admitted).isTrue();
		nanos.addAndGet(Duration.ofMinutes(10).toNanos());
		store.immediate().takeRegardless(gate.tenant("acme").tokens, "acme", 800_000); // twenty minutes of debt
		nanos.addAndGet(Duration.ofMinutes(10).toNanos());
		gate.sweepTenants(4);
		assertThat(gate.tenantCount()).isOne();
		assertThat(store.immediate().available(gate.tenant("acme").tokens, "acme")).isNegative();
	}

	@Test
	void beyondTheCapTheIdlestTenantMakesRoomWhateverItHolds() {
		BudgetGate gate = BudgetGate.create("chat", spec.maxTenants(2), store, GuardMetrics.noop(), nanos::get);
		Sink sink = new Sink();
		gate.admit(gate.tenant("a"), Priority.P1, 1, 0, sink);
		nanos.addAndGet(1_000L);
		gate.admit(gate.tenant("b"), Priority.P1, 1, 0, sink);
		nanos.addAndGet(1_000L);
		gate.admit(gate.tenant("c"), Priority.P1, 1, 0, sink);
		assertThat(gate.tenantCount()).isEqualTo(2);
		// "a" went, with its buckets: it starts full when it returns
		assertThat(store.immediate().available(gate.tenant("b").requests, "a")).isEqualTo(60);
	}

	/** A request that resolved its tenant before a sweep lets the tenant go still takes exactly once. */
	@RepeatedTest(100)
	void aTakeRacingTheSweepOfItsTenantCountsOnceInOneBucket() {
		BudgetSpec one = BudgetSpec.defaults().tenants(TenantLimits.unlimited().requestsPerMinute(60));
		BudgetGate gate = BudgetGate.create("chat", one, store, GuardMetrics.noop(), nanos::get);
		BudgetGate.TenantBudget acme = gate.tenant("acme");
		store.immediate().giveBack(acme.requests, "acme", 1); // the bucket exists, full
		nanos.addAndGet(Duration.ofMinutes(11).toNanos()); // idle: the sweep may let it go
		Sink sink = new Sink();
		RaceTestUtils.race(() -> gate.admit(acme, Priority.P1, 1, 0, sink), () -> gate.sweepTenants(1));
		assertThat(sink.admitted).isTrue();
		assertThat(store.immediate().size()).isOne();
		assertThat(store.immediate().available(acme.requests, "acme")).isEqualTo(59);
		assertThat(gate.tenantCount()).isOne(); // held, so the drained bucket has a holder
	}

	/** The store's own rule: a bucket let go while a take lands keeps that take, in one bucket. */
	@RepeatedTest(100)
	void forgettingABucketRacingATakeLosesNoTake() {
		BucketSpec rpm = BucketSpec.of("tenant.requests", 60, Duration.ofMinutes(1));
		BucketStore.Immediate now = store.immediate();
		now.giveBack(rpm, "acme", 1); // the bucket exists, full
		RaceTestUtils.race(() -> now.tryTake(rpm, "acme", 1), () -> now.forget(rpm, "acme", false));
		assertThat(now.available(rpm, "acme")).isEqualTo(59);
		assertThat(now.size()).isOne();
	}
}
