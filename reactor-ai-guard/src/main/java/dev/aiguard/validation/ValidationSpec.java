package dev.aiguard.validation;

import java.util.ArrayList;
import java.util.List;

import org.jspecify.annotations.Nullable;

/**
 * The validation capability of a policy: the validators that judge each realtime answer when it
 * ends, and those that watch its chunks while it streams. Immutable and copy-on-write: every
 * setter checks its arguments and returns a new spec; validators are kept in the order added.
 *
 * <pre>{@code
 * ValidationSpec validation = ValidationSpec.none()
 *     .validate(Validators.emptyAnswer(), Validators.finishReason("content_filter"))
 *     .validateStreaming(RepetitionDetector.defaults());
 * }</pre>
 *
 * The messages name the fields as a policy builder does: {@code validate},
 * {@code validateStreaming}.
 */
public final class ValidationSpec {

	private static final ValidationSpec NONE = new ValidationSpec(List.of(), List.of());

	private final List<OutputValidator> validators;
	private final List<StreamingValidator> streamingValidators;

	private ValidationSpec(List<OutputValidator> validators, List<StreamingValidator> streamingValidators) {
		this.validators = validators;
		this.streamingValidators = streamingValidators;
	}

	/** @return no validators */
	public static ValidationSpec none() {
		return NONE;
	}

	/** @param outputValidators added after those so far; each judges a completed answer */
	public ValidationSpec validate(OutputValidator... outputValidators) {
		return new ValidationSpec(added("validate", validators, outputValidators), streamingValidators);
	}

	/** @param watchers added after those so far; each watches the chunks of a streaming answer */
	public ValidationSpec validateStreaming(StreamingValidator... watchers) {
		return new ValidationSpec(validators, added("validateStreaming", streamingValidators, watchers));
	}

	/** @return what judges each realtime answer when it ends, in order */
	public List<OutputValidator> validators() {
		return validators;
	}

	/** @return what watches each chunk of a realtime answer and may cut it, in order */
	public List<StreamingValidator> streamingValidators() {
		return streamingValidators;
	}

	/** @return whether any validator, output or streaming, is configured */
	public boolean validates() {
		return !validators.isEmpty() || !streamingValidators.isEmpty();
	}

	@Override
	public String toString() {
		return "ValidationSpec{validators=" + validators + ", streamingValidators=" + streamingValidators + '}';
	}

	private static <V> List<V> added(String field, List<V> before, V @Nullable [] more) {
		if (more == null) {
			throw new IllegalArgumentException(field + " must not be null");
		}
		List<V> all = new ArrayList<>(before.size() + more.length);
		all.addAll(before);
		for (V v : more) {
			if (v == null) {
				throw new IllegalArgumentException(field + " must not be null");
			}
			all.add(v);
		}
		return List.copyOf(all);
	}
}
