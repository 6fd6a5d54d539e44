// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

#ifndef COUNTDOWN_CMEMORY_H
#define COUNTDOWN_CMEMORY_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif
#if defined(__GLIBC__)
#include <malloc.h>
#endif

// Asks the kernel to back the whole 2 MiB extents inside [p, p + bytes) with transparent huge
// pages when they are first touched (Linux's MADV_HUGEPAGE; THP "madvise" mode, the default of
// many distributions, gives them only to memory so marked). Call it on a buffer none of whose
// pages were touched yet. A hint: it does nothing elsewhere, for a buffer too small to hold one
// extent, or when the kernel refuses it, and it never changes what the memory holds.
static inline void cd_advise_huge_pages(const void *p, size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  const uintptr_t huge = (uintptr_t)2 << 20;
  uintptr_t start = ((uintptr_t)p + huge - 1) & ~(huge - 1);
  uintptr_t end = ((uintptr_t)p + bytes) & ~(huge - 1);
  if (end > start) (void)madvise((void *)start, end - start, MADV_HUGEPAGE);
#else
  (void)p;
  (void)bytes;
#endif
}

// Holds glibc's mmap threshold at `bytes` (mallopt's M_MMAP_THRESHOLD): a block that large or
// larger is mapped on its own and unmapped when freed. Without it glibc raises the threshold
// to the size of each mapped block freed (up to 32 MiB), after which such blocks are carved
// from the arenas of the threads that made them and their pages stay with the process.
// Returns 1 when set, 0 where there is no such setting (not glibc) or it was refused.
static inline int cd_hold_mmap_threshold(int bytes) {
#if defined(__GLIBC__) && defined(M_MMAP_THRESHOLD)
  return mallopt(M_MMAP_THRESHOLD, bytes);
#else
  (void)bytes;
  return 0;
#endif
}

// Gives the pages of freed memory back to the system from every arena of glibc's allocator,
// wherever they lie (malloc_trim(0)): glibc returns an arena's memory by itself only from its
// top, so one block still in use there keeps every free page below it resident. Returns 1 when
// memory was given back, 0 when none was or there is no such call (not glibc).
static inline int cd_trim_allocator(void) {
#if defined(__GLIBC__)
  return malloc_trim(0);
#else
  return 0;
#endif
}

#endif
