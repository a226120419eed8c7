/**
 * The fixtures every test shares, so a reader learns them once: {@link dev.aiguard.testing.RecordingMetrics}
 * (every metrics call, read back), {@link dev.aiguard.testing.Reports} (every guard report),
 * {@link dev.aiguard.testing.Policies} (the policy builders tests start from),
 * {@link dev.aiguard.testing.ManualClock} (time moved by hand) and
 * {@link dev.aiguard.testing.TrackingScheduler} (virtual time that counts pending tasks).
 *
 * <p>Test sources only; nothing in the library depends on it.
 */
@NullMarked
package dev.aiguard.testing;

import org.jspecify.annotations.NullMarked;
