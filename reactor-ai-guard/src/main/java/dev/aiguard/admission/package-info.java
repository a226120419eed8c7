/**
 * Priority admission: {@link dev.aiguard.admission.PriorityLanes} gives each
 * {@link dev.aiguard.core.Priority} its own bounded lane (permits, a bounded FIFO wait queue with a
 * deadline, a bounded Scheduler), lets urgent requests borrow idle capacity of less urgent
 * lanes, and optionally lends idle urgent capacity to batch work that an urgent arrival can take
 * back. Admission never blocks a thread; refusals are typed
 * ({@link dev.aiguard.admission.AdmissionRejectedException}); every permit is released exactly
 * once.
 *
 * <pre>{@code
 * PriorityLanes lanes = PriorityLanes.builder()
 *     .lane(Priority.P0, LaneSpec.of(4))
 *     .lane(Priority.P1, LaneSpec.of(4))
 *     .lane(Priority.P2, LaneSpec.of(8))
 *     .build();
 * Flux<ChatChunk> answer = client.stream(request)
 *     .transform(lanes.admit())
 *     .contextWrite(Priority.P0.asContext());
 * }</pre>
 */
@NullMarked
package dev.aiguard.admission;

import org.jspecify.annotations.NullMarked;
