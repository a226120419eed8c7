/**
 * Recording a realtime answer while it streams, so that a complete one can be stored in the
 * response cache when it ends: {@link dev.aiguard.fallback.recording.AnswerRecorder}. Not
 * exported by the module: the guard records for the cache it is given.
 */
@NullMarked
package dev.aiguard.fallback.recording;

import org.jspecify.annotations.NullMarked;
