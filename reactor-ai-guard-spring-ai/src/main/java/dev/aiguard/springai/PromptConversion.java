package dev.aiguard.springai;

import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.chat.ToolCall;
import org.springframework.ai.chat.client.ChatClientRequest;
import org.springframework.ai.chat.messages.AssistantMessage;
import org.springframework.ai.chat.messages.Message;
import org.springframework.ai.chat.messages.SystemMessage;
import org.springframework.ai.chat.messages.ToolResponseMessage;
import org.springframework.ai.chat.messages.UserMessage;
import org.springframework.ai.chat.prompt.ChatOptions;
import org.springframework.ai.chat.prompt.Prompt;

/**
 * One Spring AI {@link Prompt} as the library's {@link ChatRequest}, and back: the guard's call form
 * shrinks the {@code ChatRequest} after a context-length error, and each request it sends is turned
 * into a {@code Prompt} again with the original options and message types.
 *
 * <p>Each message becomes one {@link ChatMessage}, except a {@link ToolResponseMessage}, which
 * becomes one tool message per response. A truncator keeps the messages it does not change (the
 * same instances) and drops or shortens the others, in order; so a message that comes back
 * unchanged is its original, and a changed one is matched to the original of its role, tool call
 * id and tool calls, between its unchanged neighbours, whose text has the longest common start and
 * end with it. Its Spring AI message is then rebuilt with the new text, keeping its media, metadata
 * and tool calls. A message matching none (a truncator may add one) becomes a plain message of its
 * role.
 */
final class PromptConversion {

	/** Where a converted message came from. */
	private record Origin(int message, int response) {
	}

	private final Prompt prompt;
	private final ChatRequest request;
	/** The converted messages, in order, and the index of each in {@link ChatRequest#messages()}. */
	private final Map<ChatMessage, Integer> index = new IdentityHashMap<>();
	private final List<Origin> origins = new ArrayList<>();

	private PromptConversion(Prompt prompt) {
		this.prompt = prompt;
		List<Message> messages = prompt.getInstructions();
		List<ChatMessage> converted = new ArrayList<>(messages.size());
		for (int i = 0; i < messages.size(); i++) {
			Message m = messages.get(i);
			if (m instanceof ToolResponseMessage) {
				List<ToolResponseMessage.ToolResponse> responses = ((ToolResponseMessage) m).getResponses();
				for (int j = 0; j < responses.size(); j++) {
					ToolResponseMessage.ToolResponse r = responses.get(j);
					add(converted, ChatMessage.tool(nonNull(r.id()), r.responseData()), new Origin(i, j));
				}
			}
			else {
				add(converted, toChatMessage(m), new Origin(i, -1));
			}
		}
		ChatOptions options = prompt.getOptions();
		Integer maxTokens = options == null ? null : options.getMaxTokens();
		this.request = new ChatRequest(options == null ? null : options.getModel(), converted,
				maxTokens != null && maxTokens > 0 ? maxTokens : null, options == null ? null : options.getTemperature());
	}

	/**
	 * @throws IllegalArgumentException when the prompt has no message
	 */
	static PromptConversion of(Prompt prompt) {
		return new PromptConversion(prompt);
	}

	private void add(List<ChatMessage> converted, ChatMessage message, Origin origin) {
		index.put(message, converted.size());
		converted.add(message);
		origins.add(origin);
	}

	/** @return the prompt as the library's request */
	ChatRequest request() {
		return request;
	}

	/**
	 * @param sent the request the guard sends now: {@link #request()} or a shrunk copy of it
	 * @return {@code original} itself for the original request, else a copy with the prompt rebuilt
	 */
	ChatClientRequest toClientRequest(ChatClientRequest original, ChatRequest sent) {
		if (sent == request) {
			return original;
		}
		return original.mutate().prompt(toPrompt(sent)).build();
	}

	/** @return the prompt for {@code sent}, with the original prompt's options */
	Prompt toPrompt(ChatRequest sent) {
		if (sent == request) {
			return prompt;
		}
		List<ChatMessage> out = sent.messages();
		int[] from = align(out);
		List<Message> original = prompt.getInstructions();
		List<Message> messages = new ArrayList<>(out.size());
		int i = 0;
		while (i < out.size()) {
			Origin origin = from[i] < 0 ? null : origins.get(from[i]);
			if (origin == null) {
				messages.add(fresh(out.get(i), out));
				i++;
			}
			else if (origin.response() < 0) {
				Message m = original.get(origin.message());
				messages.add(out.get(i) == converted(from[i]) ? m : withText(m, out.get(i).content()));
				i++;
			}
			else {
				// the consecutive responses of one tool response message go back into one message
				ToolResponseMessage m = (ToolResponseMessage) original.get(origin.message());
				List<ToolResponseMessage.ToolResponse> kept = new ArrayList<>();
				boolean unchanged = true;
				int next = 0;
				while (i < out.size() && from[i] >= 0 && origins.get(from[i]).message() == origin.message()) {
					ToolResponseMessage.ToolResponse r = m.getResponses().get(origins.get(from[i]).response());
					boolean same = out.get(i) == converted(from[i]);
					unchanged &= same && origins.get(from[i]).response() == next++;
					kept.add(same ? r : new ToolResponseMessage.ToolResponse(r.id(), r.name(), out.get(i).content()));
					i++;
				}
				messages.add(unchanged && kept.size() == m.getResponses().size() ? m
						: ToolResponseMessage.builder().responses(kept).metadata(m.getMetadata()).build());
			}
		}
		return new Prompt(messages, prompt.getOptions());
	}

	private ChatMessage converted(int position) {
		return request.messages().get(position);
	}

	/**
	 * @return for each message of {@code out}, the position of its original among the converted
	 *         messages, or -1 for a message that has none
	 */
	private int[] align(List<ChatMessage> out) {
		int[] from = new int[out.size()];
		for (int i = 0; i < out.size(); i++) {
			Integer position = index.get(out.get(i));
			from[i] = position == null ? -1 : position;
		}
		int previous = -1;
		for (int i = 0; i < out.size(); i++) {
			if (from[i] >= 0) {
				previous = from[i];
				continue;
			}
			int limit = request.messages().size();
			for (int j = i + 1; j < out.size(); j++) {
				if (from[j] >= 0) {
					limit = from[j];
					break;
				}
			}
			int best = -1;
			int bestScore = -1;
			for (int k = previous + 1; k < limit; k++) {
				ChatMessage candidate = converted(k);
				if (sameShape(candidate, out.get(i))) {
					int score = commonEnds(candidate.content(), out.get(i).content());
					if (score > bestScore) {
						best = k;
						bestScore = score;
					}
				}
			}
			from[i] = best;
			if (best >= 0) {
				previous = best;
			}
		}
		return from;
	}

	private static boolean sameShape(ChatMessage a, ChatMessage b) {
		return a.role() == b.role() && a.toolCalls().equals(b.toolCalls())
				&& java.util.Objects.equals(a.toolCallId(), b.toolCallId());
	}

	/** @return the length of the common start plus that of the common end of two texts */
	private static int commonEnds(String a, String b) {
		int n = Math.min(a.length(), b.length());
		int start = 0;
		while (start < n && a.charAt(start) == b.charAt(start)) {
			start++;
		}
		int end = 0;
		while (end < n - start && a.charAt(a.length() - 1 - end) == b.charAt(b.length() - 1 - end)) {
			end++;
		}
		return start + end;
	}

	private static ChatMessage toChatMessage(Message m) {
		String text = m.getText();
		return switch (m.getMessageType()) {
			case SYSTEM -> ChatMessage.system(text);
			case ASSISTANT -> new ChatMessage(ChatMessage.Role.ASSISTANT, text, toolCalls(m), null);
			// a tool message that is not a ToolResponseMessage: its text is the result
			case TOOL -> ChatMessage.tool("", text);
			default -> ChatMessage.user(text);
		};
	}

	private static List<ToolCall> toolCalls(Message m) {
		if (!(m instanceof AssistantMessage)) {
			return List.of();
		}
		List<ToolCall> calls = new ArrayList<>();
		for (AssistantMessage.ToolCall c : ((AssistantMessage) m).getToolCalls()) {
			calls.add(new ToolCall(nonNull(c.id()), nonNull(c.name()), c.arguments()));
		}
		return calls;
	}

	/** @return {@code m} with another text, of the same type, keeping what else it carries */
	private static Message withText(Message m, String text) {
		if (m instanceof UserMessage) {
			return ((UserMessage) m).mutate().text(text).build();
		}
		if (m instanceof SystemMessage) {
			return ((SystemMessage) m).mutate().text(text).build();
		}
		if (m instanceof AssistantMessage) {
			return ((AssistantMessage) m).mutate().content(text).build();
		}
		return switch (m.getMessageType()) {
			case SYSTEM -> SystemMessage.builder().text(text).metadata(m.getMetadata()).build();
			case ASSISTANT -> AssistantMessage.builder().content(text).properties(m.getMetadata()).build();
			case TOOL -> ToolResponseMessage.builder()
				.responses(List.of(new ToolResponseMessage.ToolResponse("", "", text)))
				.metadata(m.getMetadata())
				.build();
			default -> UserMessage.builder().text(text).metadata(m.getMetadata()).build();
		};
	}

	/** A message no original matches: a plain Spring AI message of its role. */
	private static Message fresh(ChatMessage m, List<ChatMessage> conversation) {
		return switch (m.role()) {
			case SYSTEM -> new SystemMessage(m.content());
			case ASSISTANT -> {
				List<AssistantMessage.ToolCall> calls = new ArrayList<>();
				for (ToolCall c : m.toolCalls()) {
					calls.add(new AssistantMessage.ToolCall(c.id(), "function", c.name(), c.arguments()));
				}
				yield AssistantMessage.builder().content(m.content()).toolCalls(calls).build();
			}
			case TOOL -> ToolResponseMessage.builder()
				.responses(List.of(new ToolResponseMessage.ToolResponse(m.toolCallId(),
						toolName(m.toolCallId(), conversation), m.content())))
				.build();
			default -> new UserMessage(m.content());
		};
	}

	/** @return the name of the tool the call {@code id} was made to, {@code ""} when no message says */
	private static String toolName(String id, List<ChatMessage> conversation) {
		for (ChatMessage m : conversation) {
			for (ToolCall c : m.toolCalls()) {
				if (c.id().equals(id)) {
					return c.name();
				}
			}
		}
		return "";
	}

	private static String nonNull(String s) {
		return s == null ? "" : s;
	}
}
