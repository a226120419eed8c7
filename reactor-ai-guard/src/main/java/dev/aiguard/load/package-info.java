/**
 * The load governor: it forecasts the request rate, scores the service's health from the guard's
 * own measurements and the JVM, and moves the service through {@link dev.aiguard.load.LoadLevel}s
 * that tell each {@link dev.aiguard.core.Priority} how it is served
 * ({@link dev.aiguard.load.LoadAction}), so lower priorities are degraded before interactive users
 * feel an overload.
 *
 * <p>Forecasting ({@link dev.aiguard.load.Forecaster}: {@link dev.aiguard.load.Holt},
 * {@link dev.aiguard.load.HoltWinters}, {@link dev.aiguard.load.SeasonalFactor}) is plain
 * arithmetic with no Reactor dependency; the governor runs one decision per interval on a Reactor
 * Scheduler.
 */
@NullMarked
package dev.aiguard.load;

import org.jspecify.annotations.NullMarked;
