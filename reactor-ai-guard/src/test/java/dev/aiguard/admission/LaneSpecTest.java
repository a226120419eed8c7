package dev.aiguard.admission;

import java.time.Duration;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class LaneSpecTest {

	@Test
	void ofSetsConcurrencyAndDocumentedDefaults() {
		LaneSpec spec = LaneSpec.of(4);

		assertThat(spec.concurrency()).isEqualTo(4);
		assertThat(spec.maxQueueSize()).isEqualTo(256);
		assertThat(spec.maxQueueWait()).isEqualTo(Duration.ofSeconds(30));
		assertThat(spec.threadCap()).isEqualTo(10 * Runtime.getRuntime().availableProcessors());
		assertThat(spec.queuedTaskCap()).isEqualTo(100_000);
		assertThat(spec.borrowFromLower()).isTrue();
		assertThat(spec.reservedForOwn()).isZero();
		assertThat(spec.agingAfter()).isNull();
		assertThat(spec.lendToLower()).isZero();
		assertThat(spec.preemptBorrowers()).isFalse();
	}

	@Test
	void settersReturnNewSpecsAndLeaveTheTemplateUntouched() {
		LaneSpec template = LaneSpec.of(2);
		LaneSpec changed = template.maxQueueSize(7)
				.maxQueueWait(Duration.ofMillis(300))
				.threadCap(3)
				.queuedTaskCap(9)
				.borrowFromLower(false)
				.reservedForOwn(1)
				.agingAfter(Duration.ofSeconds(5))
				.lendToLower(0.5)
				.preemptBorrowers(true)
				.concurrency(6);

		assertThat(template).isEqualTo(LaneSpec.of(2));
		assertThat(changed.concurrency()).isEqualTo(6);
		assertThat(changed.maxQueueSize()).isEqualTo(7);
		assertThat(changed.maxQueueWait()).isEqualTo(Duration.ofMillis(300));
		assertThat(changed.threadCap()).isEqualTo(3);
		assertThat(changed.queuedTaskCap()).isEqualTo(9);
		assertThat(changed.borrowFromLower()).isFalse();
		assertThat(changed.reservedForOwn()).isEqualTo(1);
		assertThat(changed.agingAfter()).isEqualTo(Duration.ofSeconds(5));
		assertThat(changed.lendToLower()).isEqualTo(0.5);
		assertThat(changed.preemptBorrowers()).isTrue();
		assertThat(changed.agingAfter(null).agingAfter()).isNull();
	}

	@Test
	void lendCapRoundsTheFractionDown() {
		assertThat(LaneSpec.of(3).lendToLower(0.5).lendCap()).isEqualTo(1);
		assertThat(LaneSpec.of(4).lendToLower(1.0).lendCap()).isEqualTo(4);
		assertThat(LaneSpec.of(4).lendCap()).isZero();
	}

	@Test
	void badValuesFailNamingTheFieldAndTheValue() {
		LaneSpec spec = LaneSpec.of(1);
		assertThatThrownBy(() -> LaneSpec.of(-1)).isInstanceOf(IllegalArgumentException.class)
				.hasMessageContaining("concurrency").hasMessageContaining("-1");
		assertThatThrownBy(() -> spec.concurrency(-2)).isInstanceOf(IllegalArgumentException.class)
				.hasMessageContaining("concurrency").hasMessageContaining("-2");
		assertThatThrownBy(() -> spec.maxQueueSize(-1)).isInstanceOf(IllegalArgumentException.class)
				.hasMessageContaining("maxQueueSize").hasMessageContaining("-1");
		assertThatThrownBy(() -> spec.maxQueueWait(Duration.ZERO)).isInstanceOf(IllegalArgumentException.class)
				.hasMessageContaining("maxQueueWait").hasMessageContaining("PT0S");
		assertThatThrownBy(() -> spec.maxQueueWait(Duration.ofSeconds(-1)))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("maxQueueWait")
				.hasMessageContaining("PT-1S");
		assertThatThrownBy(() -> spec.maxQueueWait(null)).isInstanceOf(IllegalArgumentException.class)
				.hasMessageContaining("maxQueueWait").hasMessageContaining("null");
		assertThatThrownBy(() -> spec.threadCap(0)).isInstanceOf(IllegalArgumentException.class)
				.hasMessageContaining("threadCap").hasMessageContaining("0");
		assertThatThrownBy(() -> spec.queuedTaskCap(0)).isInstanceOf(IllegalArgumentException.class)
				.hasMessageContaining("queuedTaskCap").hasMessageContaining("0");
		assertThatThrownBy(() -> spec.reservedForOwn(-3)).isInstanceOf(IllegalArgumentException.class)
				.hasMessageContaining("reservedForOwn").hasMessageContaining("-3");
		assertThatThrownBy(() -> spec.agingAfter(Duration.ofMillis(-5)))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("agingAfter")
				.hasMessageContaining("PT-0.005S");
		assertThatThrownBy(() -> spec.lendToLower(1.5)).isInstanceOf(IllegalArgumentException.class)
				.hasMessageContaining("lendToLower").hasMessageContaining("1.5");
		assertThatThrownBy(() -> spec.lendToLower(-0.1)).isInstanceOf(IllegalArgumentException.class)
				.hasMessageContaining("lendToLower").hasMessageContaining("-0.1");
		assertThatThrownBy(() -> spec.lendToLower(Double.NaN)).isInstanceOf(IllegalArgumentException.class)
				.hasMessageContaining("lendToLower").hasMessageContaining("NaN");
	}
}
