/**
 * A provider-neutral chat model: {@link dev.aiguard.chat.ChatRequest},
 * {@link dev.aiguard.chat.ChatMessage}, {@link dev.aiguard.chat.ChatChunk} and
 * {@link dev.aiguard.chat.Usage}.
 */
package dev.aiguard.chat;
