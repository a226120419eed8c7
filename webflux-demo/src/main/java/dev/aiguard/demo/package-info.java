/**
 * The webflux demo: a guarded streaming chat endpoint ({@code POST /api/chat}), fault injection
 * for the embedded mock model ({@code /api/faults}), a live snapshot of the guard
 * ({@code /api/guard}), actuator health with the breaker, and the page at {@code /}.
 *
 * <pre>{@code
 * java -jar webflux-demo/target/webflux-demo.jar      # http://127.0.0.1:8080/
 * }</pre>
 */
@NullMarked
package dev.aiguard.demo;

import org.jspecify.annotations.NullMarked;
