package dev.aiguard.redis;

import java.util.Objects;

import org.jspecify.annotations.Nullable;

import dev.aiguard.breaker.BreakerState;

/**
 * One breaker transition as it travels between instances over Redis pub/sub:
 * {@code v1|<origin>|<epoch>|<state>|<wait ms>|<reason>}. The origin is the publishing instance's id
 * (an instance ignores its own messages); the epoch numbers the open episodes of the breaker across
 * instances (a message of an older episode is ignored).
 */
record BreakerMessage(String origin, long epoch, BreakerState state, long waitMillis, String reason) {

	private static final String VERSION = "v1";

	BreakerMessage {
		Objects.requireNonNull(origin, "origin");
		Objects.requireNonNull(state, "state");
		Objects.requireNonNull(reason, "reason");
		if (origin.indexOf('|') >= 0) {
			throw new IllegalArgumentException("origin must not contain '|', was '" + origin + "'");
		}
	}

	String encode() {
		return VERSION + '|' + origin + '|' + epoch + '|' + state.name() + '|' + waitMillis + '|' + reason;
	}

	/** @return the message, or {@code null} when {@code text} is not one (another version, garbage) */
	static @Nullable BreakerMessage decode(@Nullable String text) {
		if (text == null) {
			return null;
		}
		String[] parts = text.split("\\|", 6);
		if (parts.length != 6 || !VERSION.equals(parts[0])) {
			return null;
		}
		try {
			BreakerState state = BreakerState.valueOf(parts[3]);
			if (state != BreakerState.OPEN && state != BreakerState.CLOSED) {
				return null;
			}
			return new BreakerMessage(parts[1], Long.parseLong(parts[2]), state, Math.max(0, Long.parseLong(parts[4])),
					parts[5]);
		}
		catch (IllegalArgumentException e) {
			return null;
		}
	}
}
