package dev.aiguard.boot.autoconfigure;

import dev.aiguard.admission.PriorityLanes;
import org.jspecify.annotations.Nullable;

/**
 * The lanes of {@code aiguard.lanes}, a bean of their own so that beans built before the registry
 * (a load governor that resizes them) can share the instance the policies admit through. The
 * registry disposes them.
 *
 * @param lanes the lanes, or {@code null} when none is configured
 */
record SharedLanes(@Nullable PriorityLanes lanes) {
}
