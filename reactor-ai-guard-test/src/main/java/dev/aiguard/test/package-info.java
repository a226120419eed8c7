/**
 * Testing guarded code without a real model: a {@link dev.aiguard.test.ScriptedModel} that plays
 * {@link dev.aiguard.test.ModelScript}s as a {@code Flux} (virtual time welcome), a
 * {@link dev.aiguard.test.ReportRecorder} to catch the guard's reports, and
 * {@link dev.aiguard.test.ChatSteps} for {@code StepVerifier}. The HTTP mock model server is in
 * {@link dev.aiguard.test.mock}. A guide with examples is {@code docs/testing.md}.
 *
 * <pre>{@code
 * ScriptedModel model = ScriptedModel.of(ModelScript.answer("Hello there").firstTokenDelay(Duration.ofSeconds(5)));
 * ReportRecorder reports = new ReportRecorder();
 * GuardPolicy policy = GuardPolicy.builder("chat")
 *     .stall(StallSpec.defaults().firstTokenTimeout(Duration.ofSeconds(2)))
 *     .onReport(reports)
 *     .build();
 *
 * StepVerifier.withVirtualTime(() -> AiGuard.of(policy).call(request, model))
 *     .thenAwait(Duration.ofSeconds(2))
 *     .expectError(StreamStalledException.class)
 *     .verify();
 * reports.expectOutcome(Outcome.STALLED);
 * }</pre>
 */
@NullMarked
package dev.aiguard.test;

import org.jspecify.annotations.NullMarked;
