package dev.aiguard.load;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Hooks;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;

class LoadGovernorListenerTest {

	final GovernorFixture f = new GovernorFixture();
	LoadGovernor governor;

	@AfterEach
	void stop() {
		Hooks.resetOnErrorDropped();
		if (governor != null) {
			governor.dispose();
		}
	}

	@Test
	void everyLevelChangeReachesTheListenersWithItsReason() {
		List<LoadEvent> events = new ArrayList<>();
		governor = f.builder().dwell(Duration.ofSeconds(2)).listener(events::add).build().start();
		f.interval(governor, 8); // t=1 LOAD -> WARNING
		f.score(50);
		f.interval(governor, 0); // t=2 SCORE -> DEGRADED
		f.score(100);
		f.intervals(governor, 4, 0); // t=4 -> WARNING, t=6 -> HEALTHY
		assertThat(events).extracting(LoadEvent::from, LoadEvent::to, LoadEvent::reason).containsExactly(
				tuple(LoadLevel.HEALTHY, LoadLevel.WARNING, LoadEvent.Reason.LOAD),
				tuple(LoadLevel.WARNING, LoadLevel.DEGRADED, LoadEvent.Reason.SCORE),
				tuple(LoadLevel.DEGRADED, LoadLevel.WARNING, LoadEvent.Reason.RECOVERY),
				tuple(LoadLevel.WARNING, LoadLevel.HEALTHY, LoadEvent.Reason.RECOVERY));
		assertThat(events).extracting(LoadEvent::atNanos).containsExactly(Duration.ofSeconds(1).toNanos(),
				Duration.ofSeconds(2).toNanos(), Duration.ofSeconds(4).toNanos(), Duration.ofSeconds(6).toNanos());
		assertThat(events.get(0).load()).isEqualTo(0.8);
		assertThat(events.get(1).score()).isEqualTo(50.0);
		assertThat(events.get(1).detail()).isEqualTo("cpu=50.0");
		assertThat(events.get(2).detail()).startsWith("score 100.0, load 0.00, forecast peak 0.00 after 2000 ms at DEGRADED");
		assertThat(governor.state().lastChange()).isSameAs(events.get(3));
	}

	@Test
	void aThrowingListenerIsReportedAndTheOthersStillHear() {
		List<Throwable> dropped = new ArrayList<>();
		Hooks.onErrorDropped(dropped::add);
		List<LoadEvent> heard = new ArrayList<>();
		governor = f.builder()
				.listener(e -> {
					throw new IllegalStateException("listener failed on " + e.to());
				})
				.listener(heard::add)
				.build().start();
		f.interval(governor, 10);
		assertThat(governor.level()).isEqualTo(LoadLevel.DEGRADED);
		assertThat(heard).extracting(LoadEvent::to).containsExactly(LoadLevel.DEGRADED);
		assertThat(dropped).singleElement().extracting(Throwable::getMessage).isEqualTo("listener failed on DEGRADED");
		assertThat(governor.action(dev.aiguard.core.Priority.P2)).isEqualTo(LoadAction.SHED);
	}

	@Test
	void noEventWithoutAChange() {
		List<LoadEvent> events = new ArrayList<>();
		governor = f.builder().listener(events::add).build().start();
		f.intervals(governor, 5, 3);
		assertThat(events).isEmpty();
		assertThat(governor.state().lastChange()).isNull();
	}
}
