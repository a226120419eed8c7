package dev.aiguard.validation;

import java.util.List;
import java.util.Objects;

import dev.aiguard.stage.GuardStage;
import dev.aiguard.stage.RequestFacts;
import dev.aiguard.stage.StageRun;
import org.jspecify.annotations.Nullable;

/**
 * Output validation as a stage of the guard: each request of a policy with validators gets a run
 * that judges its realtime answers ({@link dev.aiguard.stage.AnswerJudge}). The run is fed by the
 * attempt's watch, one content chunk at a time, and gives its verdict when the attempt completes.
 * Built by the guard from a policy's {@link ValidationSpec}; not meant for direct use.
 */
public final class ValidationStage implements GuardStage {

	private final List<OutputValidator> validators;
	private final List<StreamingValidator> streaming;

	private ValidationStage(List<OutputValidator> validators, List<StreamingValidator> streaming) {
		this.validators = validators;
		this.streaming = streaming;
	}

	/** @return the stage for {@code spec}, or {@code null} when it has no validators */
	@Nullable
	public static ValidationStage of(ValidationSpec spec) {
		Objects.requireNonNull(spec, "spec");
		return spec.validates() ? new ValidationStage(spec.validators(), spec.streamingValidators()) : null;
	}

	@Override
	public StageRun start(RequestFacts request) {
		return new ValidationRun(validators, streaming);
	}
}
