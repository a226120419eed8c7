package dev.aiguard.metrics;

import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.DoubleSupplier;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import java.util.function.ToIntFunction;

import dev.aiguard.core.Outcome;
import dev.aiguard.core.Priority;
import dev.aiguard.core.Source;
import dev.aiguard.core.StallPhase;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Hooks;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class IsolatedGuardMetricsTest {

	private final List<Throwable> dropped = new CopyOnWriteArrayList<>();

	@BeforeEach
	void collectDroppedErrors() {
		Hooks.onErrorDropped(dropped::add);
	}

	@AfterEach
	void resetHooks() {
		Hooks.resetOnErrorDropped();
	}

	@Test
	void everyCallReachesTheDelegateAndWhatItThrowsIsDropped() throws Exception {
		List<String> calls = new ArrayList<>();
		GuardMetrics throwing = delegate(calls, name -> new IllegalStateException("meter " + name + " broke"));
		GuardMetrics isolated = GuardMetrics.isolated(throwing);

		List<Method> methods = meterMethods();
		for (Method method : methods) {
			method.invoke(isolated, arguments(method));
		}

		List<String> names = methods.stream().map(Method::getName).toList();
		assertThat(calls).as("each call passed on once, in order").isEqualTo(names);
		assertThat(dropped).as("each throw went to Hooks.onErrorDropped").hasSize(methods.size());
		assertThat(dropped).extracting(Throwable::getMessage)
			.isEqualTo(names.stream().map(name -> "meter " + name + " broke").toList());
	}

	@Test
	void aDelegateThatDoesNotThrowDropsNothing() throws Exception {
		List<String> calls = new ArrayList<>();
		GuardMetrics isolated = GuardMetrics.isolated(delegate(calls, name -> null));
		for (Method method : meterMethods()) {
			method.invoke(isolated, arguments(method));
		}
		assertThat(calls).hasSize(meterMethods().size());
		assertThat(dropped).isEmpty();
	}

	@Test
	void aJvmFatalErrorStillPropagates() {
		GuardMetrics isolated = GuardMetrics.isolated(delegate(new ArrayList<>(), name -> new OutOfMemoryError(name)));
		assertThatThrownBy(() -> isolated.breakerRejected("model")).isInstanceOf(OutOfMemoryError.class);
		assertThat(dropped).isEmpty();
	}

	@Test
	void isolatingTwiceWrapsOnce() {
		GuardMetrics isolated = GuardMetrics.isolated(delegate(new ArrayList<>(), name -> null));
		assertThat(GuardMetrics.isolated(isolated)).isSameAs(isolated);
		assertThat(GuardMetrics.isolated(GuardMetrics.noop())).isSameAs(GuardMetrics.noop());
	}

	/** A delegate that notes each call's name, then throws what {@code failure} makes of it (null: returns). */
	private static GuardMetrics delegate(List<String> calls, java.util.function.Function<String, Throwable> failure) {
		return (GuardMetrics) Proxy.newProxyInstance(GuardMetrics.class.getClassLoader(),
				new Class<?>[] { GuardMetrics.class }, (proxy, method, args) -> {
					if (method.getDeclaringClass() == Object.class) {
						return method.getName().equals("toString") ? "throwing" : method.invoke(calls, args);
					}
					calls.add(method.getName());
					Throwable thrown = failure.apply(method.getName());
					if (thrown != null) {
						throw thrown;
					}
					return null;
				});
	}

	/** Every reporting method of the SPI, in a stable order. */
	private static List<Method> meterMethods() {
		return Arrays.stream(GuardMetrics.class.getMethods())
			.filter(m -> !Modifier.isStatic(m.getModifiers()) && m.getReturnType() == void.class)
			.sorted((a, b) -> a.toGenericString().compareTo(b.toGenericString()))
			.toList();
	}

	private static Object[] arguments(Method method) {
		return Arrays.stream(method.getParameterTypes()).map(IsolatedGuardMetricsTest::sample).toArray();
	}

	private static Object sample(Class<?> type) {
		if (type == String.class) {
			return "x";
		}
		if (type == long.class) {
			return 1L;
		}
		if (type == int.class) {
			return 1;
		}
		if (type == double.class) {
			return 1.0;
		}
		if (type == boolean.class) {
			return true;
		}
		if (type == Priority.class) {
			return Priority.P1;
		}
		if (type == Outcome.class) {
			return Outcome.FAILURE;
		}
		if (type == Source.class) {
			return Source.REALTIME;
		}
		if (type == StallPhase.class) {
			return StallPhase.values()[0];
		}
		if (type == Enum.class) {
			return Outcome.SUCCESS;
		}
		if (type == DoubleSupplier.class) {
			return (DoubleSupplier) () -> 0.0;
		}
		if (type == LongSupplier.class) {
			return (LongSupplier) () -> 0L;
		}
		if (type == Supplier.class) {
			return (Supplier<Object>) () -> Outcome.SUCCESS;
		}
		if (type == ToIntFunction.class) {
			return (ToIntFunction<Object>) p -> 0;
		}
		if (type == Map.class) {
			return Map.of();
		}
		throw new IllegalArgumentException("no sample value for " + type);
	}
}
