package dev.aiguard;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.function.Consumer;
import java.util.function.Function;

import dev.aiguard.metrics.GuardMetrics;
import dev.aiguard.stall.StallSpec;
import reactor.core.scheduler.Scheduler;
import reactor.util.annotation.Nullable;

/**
 * Everything a guard does, configured once and shared. Immutable.
 *
 * <pre>{@code
 * GuardPolicy policy = GuardPolicy.builder("chat")
 *     .defaultPriority(Priority.P1)
 *     .stall(StallSpec.defaults()
 *         .firstTokenTimeout(Duration.ofSeconds(10))
 *         .idleTimeout(Duration.ofSeconds(30))
 *         .maxDuration(Duration.ofMinutes(5)))
 *     .metrics(new MicrometerGuardMetrics(registry))
 *     .onReport(report -> log.debug("{}", report))
 *     .build();
 * }</pre>
 */
public final class GuardPolicy {

	private final String name;
	private final Priority defaultPriority;
	private final StallSpec stall;
	private final GuardMetrics metrics;
	private final List<Consumer<? super GuardReport>> reportListeners;
	@Nullable
	private final Scheduler timer;
	@Nullable
	private final Scheduler reportScheduler;
	private final Function<Throwable, Outcome> errorClassifier;

	private GuardPolicy(Builder b) {
		this.name = b.name;
		this.defaultPriority = b.defaultPriority;
		this.stall = b.stall;
		this.metrics = b.metrics;
		this.reportListeners = List.copyOf(b.reportListeners);
		this.timer = b.timer;
		this.reportScheduler = b.reportScheduler;
		this.errorClassifier = b.errorClassifier;
	}

	/**
	 * @param name names the policy in metrics and reports; letters, digits, {@code . _ -}
	 */
	public static Builder builder(String name) {
		return new Builder(name);
	}

	public String name() {
		return name;
	}

	public Priority defaultPriority() {
		return defaultPriority;
	}

	public StallSpec stall() {
		return stall;
	}

	public GuardMetrics metrics() {
		return metrics;
	}

	public List<Consumer<? super GuardReport>> reportListeners() {
		return reportListeners;
	}

	/** @return the scheduler for deadlines and time: the policy's, else the stall spec's (resolved now). */
	public Scheduler timer() {
		return timer != null ? timer : stall.scheduler();
	}

	/** @return where report listeners run; {@code null} = on the thread that ended the stream */
	@Nullable
	public Scheduler reportScheduler() {
		return reportScheduler;
	}

	/** @return maps an upstream error to an {@link Outcome} */
	public Function<Throwable, Outcome> errorClassifier() {
		return errorClassifier;
	}

	/** @return a builder holding this policy's settings, to derive a variant */
	public Builder toBuilder() {
		Builder b = new Builder(name);
		b.defaultPriority = defaultPriority;
		b.stall = stall;
		b.metrics = metrics;
		b.reportListeners.addAll(reportListeners);
		b.timer = timer;
		b.reportScheduler = reportScheduler;
		b.errorClassifier = errorClassifier;
		return b;
	}

	@Override
	public String toString() {
		return "GuardPolicy{" + name + ", defaultPriority=" + defaultPriority + ", stall=" + stall + '}';
	}

	/** Builds a {@link GuardPolicy}; each setter checks its argument. */
	public static final class Builder {

		private String name;
		private Priority defaultPriority = Priority.P1;
		private StallSpec stall = StallSpec.defaults();
		private GuardMetrics metrics = GuardMetrics.noop();
		private final List<Consumer<? super GuardReport>> reportListeners = new ArrayList<>();
		private Scheduler timer;
		private Scheduler reportScheduler;
		private Function<Throwable, Outcome> errorClassifier = ErrorOutcomes::classify;

		private Builder(String name) {
			this.name = name;
		}

		/** @param priority used when the subscriber's context carries none (default P1) */
		public Builder defaultPriority(Priority priority) {
			this.defaultPriority = require("defaultPriority", priority);
			return this;
		}

		/** @param spec deadlines and completeness check (default: no deadlines, terminal required) */
		public Builder stall(StallSpec spec) {
			this.stall = require("stall", spec);
			return this;
		}

		/** @param guardMetrics where meters are recorded (default: nowhere) */
		public Builder metrics(GuardMetrics guardMetrics) {
			this.metrics = require("metrics", guardMetrics);
			return this;
		}

		/**
		 * Adds a listener that receives one {@link GuardReport} per request, after the terminal
		 * signal. A throwing listener is isolated (its error goes to {@code Hooks.onErrorDropped}).
		 * Listeners must not block; give them a {@link #reportScheduler(Scheduler)} if they might.
		 */
		public Builder onReport(Consumer<? super GuardReport> listener) {
			reportListeners.add(require("onReport", listener));
			return this;
		}

		/** @param scheduler drives every deadline and clock of the guard (default: the stall spec's) */
		public Builder timer(Scheduler scheduler) {
			this.timer = require("timer", scheduler);
			return this;
		}

		/** @param scheduler where report listeners run (default: the thread that ended the stream) */
		public Builder reportScheduler(Scheduler scheduler) {
			this.reportScheduler = require("reportScheduler", scheduler);
			return this;
		}

		/**
		 * @param classifier maps an upstream error to an outcome; the default knows the library's
		 *        provider exceptions and treats anything else as {@link Outcome#FAILURE}
		 */
		public Builder errorClassifier(Function<Throwable, Outcome> classifier) {
			this.errorClassifier = require("errorClassifier", classifier);
			return this;
		}

		/**
		 * @throws IllegalArgumentException naming the field and value when the policy is invalid
		 */
		public GuardPolicy build() {
			if (name == null || name.isBlank() || !name.matches("[A-Za-z0-9._-]+")) {
				throw new IllegalArgumentException(
						"name must be non-empty letters, digits, '.', '_' or '-', was '" + name + "'");
			}
			return new GuardPolicy(this);
		}

		private static <V> V require(String field, V value) {
			if (value == null) {
				throw new IllegalArgumentException(field + " must not be null");
			}
			return value;
		}
	}
}
