/**
 * A provider-neutral chat model: {@link dev.aiguard.chat.ChatRequest},
 * {@link dev.aiguard.chat.ChatMessage}, {@link dev.aiguard.chat.ChatChunk} and
 * {@link dev.aiguard.chat.Usage}.
 */
@NullMarked
package dev.aiguard.chat;

import org.jspecify.annotations.NullMarked;
