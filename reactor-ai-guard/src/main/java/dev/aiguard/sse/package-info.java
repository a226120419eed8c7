/**
 * Server-sent-events decoding over byte chunks: {@link dev.aiguard.sse.SseDecoder} turns
 * {@code ByteBuffer}, Netty {@code ByteBuf} or Spring {@code DataBuffer} chunks into
 * {@link dev.aiguard.sse.SseEvent}s, bounded in memory and strict about UTF-8.
 *
 * <pre>{@code
 * Flux<SseEvent> events = SseDecoder.defaults().decode(byteBuffers);
 * }</pre>
 */
@NullMarked
package dev.aiguard.sse;

import org.jspecify.annotations.NullMarked;
