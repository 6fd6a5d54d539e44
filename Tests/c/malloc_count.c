// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

/*
 * An LD_PRELOAD library that counts heap allocations (malloc, calloc, realloc, memalign and
 * friends) made by any code in the process, for test_alloc.c. glibc's __libc_* entry points do
 * the work, so no dlsym (which itself allocates) is needed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

static atomic_long count;

long malloc_count(void) { return atomic_load(&count); }

void *malloc(size_t n) {
  atomic_fetch_add(&count, 1);
  return __libc_malloc(n);
}
void *calloc(size_t a, size_t b) {
  atomic_fetch_add(&count, 1);
  return __libc_calloc(a, b);
}
void *realloc(void *p, size_t n) {
  atomic_fetch_add(&count, 1);
  return __libc_realloc(p, n);
}
void *memalign(size_t align, size_t n) {
  atomic_fetch_add(&count, 1);
  return __libc_memalign(align, n);
}
void *aligned_alloc(size_t align, size_t n) { return memalign(align, n); }
int posix_memalign(void **out, size_t align, size_t n) {
  void *p = memalign(align, n);
  if (!p) return ENOMEM;
  *out = p;
  return 0;
}
