/**
 * The stage contract: the only way the guard's request loop and a per-request capability meet.
 * A {@link dev.aiguard.stage.GuardStage} is built once per policy and starts a
 * {@link dev.aiguard.stage.StageRun} for each request it has something to do for; the run hears
 * the request's admission, each attempt's start and end, and the request's end, and answers
 * through the request's {@link dev.aiguard.stage.RequestPort}. Not exported: the guard's
 * internals, not API.
 */
@NullMarked
package dev.aiguard.stage;

import org.jspecify.annotations.NullMarked;
