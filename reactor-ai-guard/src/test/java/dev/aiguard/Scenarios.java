package dev.aiguard;

import java.lang.reflect.Method;
import java.util.Arrays;
import java.util.List;

import org.jetbrains.kotlinx.lincheck.Actor;
import org.jetbrains.kotlinx.lincheck.execution.ExecutionScenario;

/**
 * Hand-written Lincheck scenarios, for the races random generation reaches too rarely to be
 * checked on every build. Pass them to {@code options.addCustomScenario(...)}.
 *
 * <pre>{@code
 * ExecutionScenario s = Scenarios.of(
 *     List.of(actor(Test.class, "onRequest")),                         // init, sequential
 *     List.of(List.of(actor(Test.class, "tryAcquireRetry")),            // thread 1
 *             List.of(actor(Test.class, "available"))),                 // thread 2
 *     List.of());                                                       // post, sequential
 * }</pre>
 */
public final class Scenarios {

	private Scenarios() {
	}

	/** One call of the operation {@code name} of {@code test} with {@code args} (boxed). */
	public static Actor actor(Class<?> test, String name, Object... args) {
		Method found = null;
		for (Class<?> c = test; c != null && found == null; c = c.getSuperclass()) {
			for (Method m : c.getDeclaredMethods()) {
				if (m.getName().equals(name) && m.getParameterCount() == args.length) {
					found = m;
					break;
				}
			}
		}
		if (found == null) {
			throw new IllegalArgumentException("no operation " + name + " with " + args.length + " arguments in " + test);
		}
		return new Actor(found, Arrays.asList(args));
	}

	public static ExecutionScenario of(List<Actor> init, List<List<Actor>> parallel, List<Actor> post) {
		return new ExecutionScenario(init, parallel, post, null);
	}
}
