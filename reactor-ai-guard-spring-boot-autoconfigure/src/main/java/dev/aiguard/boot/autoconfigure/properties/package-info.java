/**
 * The settings of each capability under {@code aiguard.*}, one class per capability, held by
 * {@link dev.aiguard.boot.autoconfigure.AiGuardProperties}: {@code aiguard.breakers.<name>} binds
 * to {@link dev.aiguard.boot.autoconfigure.properties.BreakerProperties},
 * {@code aiguard.policies.<name>.stall} to
 * {@link dev.aiguard.boot.autoconfigure.properties.StallProperties}, and so on. An unset value
 * takes the library's default, which the property's description names.
 */
@NullMarked
package dev.aiguard.boot.autoconfigure.properties;

import org.jspecify.annotations.NullMarked;
