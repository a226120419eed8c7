package dev.aiguard.boot.autoconfigure;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import dev.aiguard.admission.PriorityLanes;
import dev.aiguard.core.Outcome;
import dev.aiguard.core.Priority;
import dev.aiguard.load.HealthSignal;
import dev.aiguard.load.HealthSignals;
import dev.aiguard.load.LoadAction;
import dev.aiguard.load.LoadGovernor;
import dev.aiguard.load.LoadLevel;
import dev.aiguard.load.LoadState;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import reactor.core.publisher.Flux;

import static org.assertj.core.api.Assertions.assertThat;

/** {@code aiguard.load.*}: the governor bean, its settings, its place in the policies and its mistakes. */
class AiGuardLoadAutoConfigurationTest {

	private static final Duration WAIT = Duration.ofSeconds(5);

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(AiGuardAutoConfiguration.class))
		.withPropertyValues("aiguard.lanes.p0.concurrency=4", "aiguard.lanes.p1.concurrency=2",
				"aiguard.lanes.p2.concurrency=2", "aiguard.policies.chat.lanes=true");

	/** On, deciding once an hour: a test calls decide() itself, never at the same time as the timer. */
	private static final String[] ON = { "aiguard.load.enabled=true", "aiguard.load.capacity=20",
			"aiguard.load.interval=1h" };

	@Test
	void offByDefault() {
		runner.run(context -> {
			assertThat(context).hasNotFailed().doesNotHaveBean(LoadGovernor.class);
			assertThat(context.getBean(AiGuardRegistry.class).load()).isEmpty();
			assertThat(context).doesNotHaveBean("aiGuardCpuSignal");
		});
	}

	@Test
	void enabledTheGovernorIsABeanStartedWithTheContextAndDisposedWithIt() {
		LoadGovernor[] seen = new LoadGovernor[1];
		runner.withPropertyValues(ON).withPropertyValues("aiguard.load.interval=20ms").run(context -> {
			LoadGovernor governor = context.getBean(LoadGovernor.class);
			seen[0] = governor;
			assertThat(governor.name()).isEqualTo("load");
			assertThat(context.getBean(AiGuardRegistry.class).load()).containsSame(governor);
			// started: it decides every interval on its own
			LoadState decided = Flux.interval(Duration.ofMillis(5)).map(tick -> governor.state())
				.filter(s -> s.intervals() >= 2).blockFirst(WAIT);
			assertThat(decided.subScores()).containsKeys(HealthSignals.CPU, HealthSignals.MEMORY);
			assertThat(governor.isDisposed()).isFalse();
		});
		assertThat(seen[0].isDisposed()).as("disposed with the context").isTrue();
	}

	@Test
	void settingsAndRuleOverridesComeFromProperties() {
		runner.withPropertyValues(ON)
			.withPropertyValues("aiguard.load.name=chat-load", "aiguard.load.horizon=3", "aiguard.load.warmup-intervals=0",
					"aiguard.load.rules.degraded.p1.action=shed", "aiguard.load.rules.warning.p2.lane-factor=0.25",
					"aiguard.load.signals.cpu=0", "aiguard.load.signals.memory=0")
			.run(context -> {
				LoadGovernor governor = context.getBean(LoadGovernor.class);
				assertThat(governor.name()).isEqualTo("chat-load");
				assertThat(governor.rules().action(LoadLevel.DEGRADED, Priority.P1)).isEqualTo(LoadAction.SHED);
				assertThat(governor.rules().action(LoadLevel.DEGRADED, Priority.P2)).as("a default kept")
					.isEqualTo(LoadAction.SHED);
				assertThat(governor.rules().laneFactor(LoadLevel.WARNING, Priority.P2)).isEqualTo(0.25);
				assertThat(governor.decide().subScores()).containsOnlyKeys(HealthSignals.RESPONSE_TIME,
						HealthSignals.ERROR_RATE);
				// no warm-up: the forecast takes part from the first decision, over three intervals
				assertThat(governor.decide().mode()).isEqualTo(LoadState.Mode.FORECAST);
				assertThat(governor.state().forecast()).hasSize(3);
			});
	}

	@Test
	void oneFailureLeavesTheDefaultsHealthyAndTheSignalSettingsReachTheGovernor() {
		String[] errorsOnly = {"aiguard.load.signals.cpu=0", "aiguard.load.signals.memory=0",
				"aiguard.load.signals.response-time=0"};
		runner.withPropertyValues(ON).withPropertyValues(errorsOnly).run(context -> {
			LoadGovernor governor = context.getBean(LoadGovernor.class);
			governor.ended(Outcome.FAILURE);
			assertThat(governor.decide().level()).as("one attempt is under min-samples").isEqualTo(LoadLevel.HEALTHY);
			assertThat(governor.state().subScores().get("error-rate")).isNaN();
		});
		runner.withPropertyValues(ON).withPropertyValues(errorsOnly)
			.withPropertyValues("aiguard.load.min-samples=0", "aiguard.load.score-smoothing=1",
					"aiguard.load.signal-window=1h", "aiguard.load.rise-after=0s")
			.run(context -> {
				LoadGovernor governor = context.getBean(LoadGovernor.class);
				governor.ended(Outcome.FAILURE);
				assertThat(governor.decide().level()).as("every sample counts, no smoothing, no confirmation")
					.isEqualTo(LoadLevel.CRITICAL);
			});
	}

	@Test
	void theSharedLanesFollowTheLevelUnlessTurnedOff() {
		runner.withPropertyValues(ON)
			.withPropertyValues("aiguard.load.signals.cpu=0", "aiguard.load.signals.memory=0",
					"aiguard.load.load-smoothing=1", "aiguard.load.load-thresholds=0.9,Infinity,Infinity")
			.run(context -> {
				LoadGovernor governor = context.getBean(LoadGovernor.class);
				PriorityLanes lanes = context.getBean(AiGuardRegistry.class).lanes().orElseThrow();
				for (int i = 0; i < 100_000; i++) {
					governor.arrived(Priority.P1);
				}
				assertThat(governor.decide().level()).as("Infinity: the load alone stops at WARNING")
					.isEqualTo(LoadLevel.WARNING);
				assertThat(lanes.concurrency(Priority.P2)).as("P2's lane halved at WARNING").isEqualTo(1);
				assertThat(lanes.concurrency(Priority.P1)).as("keep-total: P2's other permit goes to P1").isEqualTo(3);
				assertThat(lanes.concurrency(Priority.P0)).isEqualTo(4);
			});
		runner.withPropertyValues(ON)
			.withPropertyValues("aiguard.load.lane-resizing=scale", "aiguard.load.signals.cpu=0",
					"aiguard.load.signals.memory=0", "aiguard.load.load-smoothing=1")
			.run(context -> {
				LoadGovernor governor = context.getBean(LoadGovernor.class);
				PriorityLanes lanes = context.getBean(AiGuardRegistry.class).lanes().orElseThrow();
				for (int i = 0; i < 100_000; i++) {
					governor.arrived(Priority.P1);
				}
				assertThat(governor.decide().level()).isEqualTo(LoadLevel.WARNING);
				assertThat(lanes.concurrency(Priority.P2)).isEqualTo(1);
				assertThat(lanes.concurrency(Priority.P1)).as("scale: the permit is dropped").isEqualTo(2);
			});
		runner.withPropertyValues(ON)
			.withPropertyValues("aiguard.load.lanes=false", "aiguard.load.signals.cpu=0", "aiguard.load.signals.memory=0",
					"aiguard.load.load-smoothing=1")
			.run(context -> {
				LoadGovernor governor = context.getBean(LoadGovernor.class);
				for (int i = 0; i < 100_000; i++) {
					governor.arrived(Priority.P1);
				}
				assertThat(governor.decide().level()).isEqualTo(LoadLevel.WARNING);
				assertThat(context.getBean(AiGuardRegistry.class).lanes().orElseThrow().concurrency(Priority.P2))
					.isEqualTo(2);
			});
	}

	@Test
	void aHealthSignalBeanJoinsTheScoreWithItsWeight() {
		HealthSignal queue = HealthSignals.of("queue", interval -> 42.0);
		runner.withPropertyValues(ON).withPropertyValues("aiguard.load.signals.queue=0.5")
			.withBean("queueSignal", HealthSignal.class, () -> queue)
			.run(context -> assertThat(context.getBean(LoadGovernor.class).decide().subScores())
				.containsEntry("queue", 42.0));
		runner.withPropertyValues(ON).withBean("queueSignal", HealthSignal.class, () -> queue)
			.run(context -> expectInvalid(context.getStartupFailure(), "aiguard.load.signals.queue"));
	}

	@Test
	void withAMeterRegistryTheCpuComesFromMicrometerAndTheGaugesGoThere() {
		runner.withPropertyValues(ON).withBean(MeterRegistry.class, SimpleMeterRegistry::new).run(context -> {
			assertThat(context).hasBean("aiGuardCpuSignal");
			assertThat(context.getBean("aiGuardCpuSignal", HealthSignal.class).name()).isEqualTo(HealthSignals.CPU);
			assertThat(context.getBean(MeterRegistry.class).find("aiguard.load.level").gauge()).isNotNull();
		});
	}

	@Test
	void theApplicationsOwnGovernorWinsAndIsTheOneThePoliciesPass() {
		LoadGovernor mine = LoadGovernor.builder("mine").capacity(5).build();
		runner.withPropertyValues(ON).withBean("myGovernor", LoadGovernor.class, () -> mine).run(context -> {
			assertThat(context.getBeansOfType(LoadGovernor.class)).containsOnlyKeys("myGovernor");
			assertThat(context.getBean(AiGuardRegistry.class).load()).containsSame(mine);
			assertThat(context.getBean(AiGuardRegistry.class).guard("chat").policy().load()).isSameAs(mine);
		});
		mine.dispose();
	}

	@Test
	void aPolicyCanStayOutOrRequireTheGovernor() {
		runner.withPropertyValues(ON).withPropertyValues("aiguard.policies.batch.default-priority=P2").run(context -> {
			AiGuardRegistry registry = context.getBean(AiGuardRegistry.class);
			assertThat(registry.guard("chat").policy().load()).isSameAs(context.getBean(LoadGovernor.class));
			assertThat(registry.guard("batch").policy().load()).as("every policy").isSameAs(registry.load().orElseThrow());
		});
		runner.withPropertyValues(ON).withPropertyValues("aiguard.policies.chat.load=false").run(context -> {
			assertThat(context.getBean(AiGuardRegistry.class).load()).isPresent();
			assertThat(context.getBean(AiGuardRegistry.class).guard("chat").policy().load()).isNull();
		});
		runner.withPropertyValues("aiguard.policies.chat.load=true")
			.run(context -> expectInvalid(context.getStartupFailure(), "aiguard.policies.chat.load"));
	}

	@Test
	void eachMistakeNamesItsProperty() {
		expect("aiguard.load.capacity", "aiguard.load.enabled=true");
		expect("aiguard.load.capacity", "aiguard.load.enabled=true", "aiguard.load.capacity=-3");
		expect("aiguard.load.interval", ON, "aiguard.load.interval=0s");
		expect("aiguard.load.horizon", ON, "aiguard.load.horizon=0");
		expect("aiguard.load.load-thresholds", ON, "aiguard.load.load-thresholds=1,2");
		expect("aiguard.load.load-thresholds", ON, "aiguard.load.load-thresholds=2,1,3");
		expect("aiguard.load.load-thresholds", ON, "aiguard.load.degrade-at=0.7", "aiguard.load.load-thresholds=0.8,1,2");
		expect("aiguard.load.score-thresholds", ON, "aiguard.load.score-thresholds=40,60,80");
		expect("aiguard.load.recover-below", ON, "aiguard.load.recover-below=0.9");
		expect("aiguard.load.dwell", ON, "aiguard.load.dwell=-1s");
		expect("aiguard.load.load-smoothing", ON, "aiguard.load.load-smoothing=0");
		expect("aiguard.load.score-smoothing", ON, "aiguard.load.score-smoothing=1.5");
		expect("aiguard.load.min-samples", ON, "aiguard.load.min-samples=-1");
		expect("aiguard.load.signal-window", ON, "aiguard.load.signal-window=0s");
		expect("aiguard.load.rise-after", ON, "aiguard.load.rise-after=-1s");
		expect("aiguard.load.load-thresholds", ON, "aiguard.load.load-thresholds=0.8,Infinity,2");
		expect("aiguard.load.warmup-intervals", ON, "aiguard.load.warmup-intervals=-1");
		expect("aiguard.load.forecast", ON, "aiguard.load.forecast.alpha=2");
		expect("aiguard.load.signals.gpu", ON, "aiguard.load.signals.gpu=0.3");
		expect("aiguard.load.signals.cpu", ON, "aiguard.load.signals.cpu=-1");
		expect("aiguard.load.rules.bogus", ON, "aiguard.load.rules.bogus.p1.action=shed");
		expect("aiguard.load.rules.degraded.p9", ON, "aiguard.load.rules.degraded.p9.action=shed");
		expect("aiguard.load.rules.degraded.p1.lane-factor", ON, "aiguard.load.rules.degraded.p1.lane-factor=1.5");
	}

	private void expect(String property, String[] base, String... more) {
		runner.withPropertyValues(base).withPropertyValues(more)
			.run(context -> expectInvalid(context.getStartupFailure(), property));
	}

	private void expect(String property, String... values) {
		runner.withPropertyValues(values).run(context -> expectInvalid(context.getStartupFailure(), property));
	}

	private static void expectInvalid(Throwable failure, String property) {
		assertThat(failure).as("startup fails for %s", property).isNotNull();
		for (Throwable t = failure; t != null; t = t.getCause()) {
			if (t instanceof InvalidGuardPropertyException e) {
				assertThat(e.property()).isEqualTo(property);
				assertThat(e.getMessage()).contains(property);
				return;
			}
		}
		throw new AssertionError("no InvalidGuardPropertyException in the failure", failure);
	}

	@Test
	void theEndpointShowsTheLoadSection() {
		runner.withPropertyValues(ON).run(context -> {
			AiGuardEndpoint endpoint = new AiGuardEndpoint(context.getBean(AiGuardRegistry.class),
					context.getBean(RecentReports.class), null);
			@SuppressWarnings("unchecked")
			Map<String, Object> load = (Map<String, Object>) endpoint.guard().get("load");
			assertThat(load).containsKeys("name", "level", "mode", "score", "subScores", "load", "requestRate",
					"forecast", "forecastPeak", "intervals", "lastChange");
			assertThat(load.get("level")).isEqualTo("HEALTHY");
			assertThat(load.get("mode")).isEqualTo("COLD_START");
			assertThat((List<?>) load.get("forecast")).isEmpty();
		});
		runner.run(context -> assertThat(new AiGuardEndpoint(context.getBean(AiGuardRegistry.class),
				context.getBean(RecentReports.class), null).guard()).containsEntry("load", null));
	}
}
