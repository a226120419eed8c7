package dev.aiguard;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import java.util.ArrayList;
import java.util.List;

import org.jetbrains.kotlinx.lincheck.Actor;
import org.jetbrains.kotlinx.lincheck.CTestStructure;
import org.jetbrains.kotlinx.lincheck.execution.ExecutionGenerator;
import org.jetbrains.kotlinx.lincheck.execution.ExecutionScenario;
import org.jetbrains.kotlinx.lincheck.execution.RandomExecutionGenerator;
import org.jetbrains.lincheck.datastructures.CTestConfiguration;
import org.jetbrains.lincheck.datastructures.RandomProvider;

/**
 * Lincheck's random scenarios, with every operation marked {@link Quiescent} moved out of the
 * parallel part into the post part, where nothing else runs.
 *
 * <pre>{@code
 * public static class Budget {
 *     ... @Operation public boolean tryAcquireRetry() { ... }      // races the others
 *     ... @Quiescent @Operation public long available() { ... }    // sequential parts only
 * }
 * new ModelCheckingOptions().executionGenerator(QuiescentActorsGenerator.class)
 *         .sequentialSpecification(Spec.class).check(Budget.class);
 * }</pre>
 *
 * <p>Two kinds of operation belong there: moving a test clock (an operation that read the clock
 * and then CASes cannot be atomic with a clock that moves under it, so a clock jump between the
 * read and the CAS is "earlier time", not a bug) and whole-state snapshots that the class itself
 * documents as exact only when idle (gauges). Everything else still races in the parallel part,
 * and the snapshots then check what the racing left behind against the sequential specification.
 */
public final class QuiescentActorsGenerator extends ExecutionGenerator {

	/** An operation Lincheck may run in the init and post parts only, never concurrently with others. */
	@Retention(RetentionPolicy.RUNTIME)
	@Target(ElementType.METHOD)
	public @interface Quiescent {
	}

	private final RandomExecutionGenerator random;

	public QuiescentActorsGenerator(CTestConfiguration configuration, CTestStructure structure,
			RandomProvider randomProvider) {
		super(configuration, structure);
		this.random = new RandomExecutionGenerator(configuration, structure, randomProvider);
	}

	@Override
	public ExecutionScenario nextExecution() {
		for (;;) {
			ExecutionScenario s = random.nextExecution();
			List<Actor> post = new ArrayList<>(s.getPostExecution());
			List<List<Actor>> parallel = new ArrayList<>();
			boolean emptyThread = false;
			for (List<Actor> thread : s.getParallelExecution()) {
				List<Actor> kept = new ArrayList<>();
				for (Actor a : thread) {
					(a.getMethod().isAnnotationPresent(Quiescent.class) ? post : kept).add(a);
				}
				emptyThread |= kept.isEmpty();
				parallel.add(kept);
			}
			if (!emptyThread) { // a thread with nothing to race is no test: draw again
				return new ExecutionScenario(s.getInitExecution(), parallel, post, s.getValidationFunction());
			}
		}
	}
}
