/**
 * Metrics SPI: {@link dev.aiguard.metrics.GuardMetrics} with a no-op default, and
 * {@link dev.aiguard.metrics.MicrometerGuardMetrics} when Micrometer is on the classpath.
 * Micrometer is an optional dependency: nothing outside {@code MicrometerGuardMetrics} touches it.
 */
@NullMarked
package dev.aiguard.metrics;

import org.jspecify.annotations.NullMarked;
