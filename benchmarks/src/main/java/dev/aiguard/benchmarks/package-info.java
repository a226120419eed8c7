/**
 * JMH benchmarks and simulations. Each compares the library with a baseline measured in the same
 * run; figures live in {@code docs/benchmarks.md} with the command that produced them.
 */
@NullMarked
package dev.aiguard.benchmarks;

import org.jspecify.annotations.NullMarked;
