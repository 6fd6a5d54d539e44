// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

#ifndef COUNTDOWN_CPREFETCH_H
#define COUNTDOWN_CPREFETCH_H

// A hint to the CPU that the line holding `p` will be written soon, so that its miss overlaps
// the work before that write. Swift has no prefetch of its own; this one is inlined into the
// engine and never faults, whatever `p` is.
static inline void cd_prefetch_write(const void *p) { __builtin_prefetch(p, 1, 3); }

// The same for a line that will be read soon.
static inline void cd_prefetch_read(const void *p) { __builtin_prefetch(p, 0, 3); }

#endif
