/**
 * The guard for the official OpenAI Java SDK ({@code com.openai:openai-java}):
 * {@link dev.aiguard.openai.OpenAiSdkErrors} maps the SDK's errors to the library's typed
 * provider errors.
 *
 * <pre>{@code
 * Throwable typed = OpenAiSdkErrors.map(sdkError);   // RateLimitedException with retryAfter(), ...
 * }</pre>
 */
package dev.aiguard.openai;
