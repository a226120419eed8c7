/**
 * Building blocks shared by the library's own operators. Not API: public only so that several
 * packages can use them; they may change in any release.
 */
@NullMarked
package dev.aiguard.internal;

import org.jspecify.annotations.NullMarked;
