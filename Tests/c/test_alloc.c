// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

/*
 * No allocation where the header promises none: cd_format, and the event path (a tick handed
 * to the C callback as a cd_event). Run with malloc_count.so preloaded, which counts every
 * heap allocation in the process.
 */
#define _DEFAULT_SOURCE
#define _POSIX_C_SOURCE 200809L
#include "countdown.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

extern long malloc_count(void);

static atomic_long ticks;
static atomic_long bytes;
static atomic_long expiries;

static void on_event(void *context, const cd_event *e) {
  (void)context;
  if (e->kind == CD_EVENT_TICK) {
    atomic_fetch_add(&ticks, 1);
    atomic_fetch_add(&bytes, (long)(e->id_length + e->text_length));
  } else if (e->kind == CD_EVENT_EXPIRED) {
    atomic_fetch_add(&expiries, 1);
  }
}

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int main(void) {
  int failures = 0;
  char buf[CD_FORMAT_MAX];
  size_t n;
  cd_style styles[] = {CD_STYLE_COMPACT, CD_STYLE_REMAINING, CD_STYLE_POSITIONAL,
                       CD_STYLE_MINUTE_SECOND, CD_STYLE_TIMER, CD_STYLE_UNITS};
  /* Once each first: one-time set-up may allocate. */
  for (int s = 0; s < 6; s++) {
    cd_format_options o = cd_format_options_default(styles[s]);
    cd_format(&o, 1, CD_ROUND_UP, buf, sizeof buf, &n);
  }
  long before = malloc_count();
  long total = 0;
  for (int64_t k = 0; k < 600000; k++) {
    cd_format_options o = cd_format_options_default(styles[k % 6]);
    o.max_units = (int32_t)(k % 4) + 1;
    if (cd_format(&o, k * 7919, k & 1 ? CD_ROUND_UP : CD_ROUND_DOWN, buf, sizeof buf, &n) != CD_OK)
      failures++;
    total += (long)n;
  }
  long formats = malloc_count() - before;
  printf("test_alloc: 600000 cd_format calls (%ld bytes written): %ld allocations\n", total,
         formats);
  if (formats != 0) failures++;

  /* Ticks: 2000 countdowns, ids of up to 15 bytes (small strings) and of 24 bytes, and 500
   * that end while the allocations are counted. */
  cd_loop *loop = NULL;
  if (cd_loop_create(NULL, on_event, NULL, &loop) != CD_OK) return 1;
  int64_t base = now_ms();
  long counted = malloc_count();
  for (int k = 0; k < 2000; k++) {
    char line[200], reply[256];
    int len = snprintf(line, sizeof line,
                       "{\"op\":\"start\",\"id\":\"%s%d\",\"kind\":\"countdown\",\"endDate\":%lld,"
                       "\"title\":\"T\"}",
                       k % 2 ? "gate-" : "a-much-longer-gate-id-", k,
                       (long long)(base + 600000 + (k * 37) % 1000));
    if (cd_loop_request(loop, line, (size_t)len, reply, sizeof reply, &n) != CD_OK) return 1;
  }
  /* 500 more that reach their last second 1.5-2.5 s from now and end a second later, inside
   * the measured window: the walk that shows their 1 arms their expiry, then it fires. */
  for (int k = 0; k < 500; k++) {
    char line[200], reply[256];
    int len = snprintf(line, sizeof line,
                       "{\"op\":\"start\",\"id\":\"soon-%d\",\"kind\":\"countdown\","
                       "\"endDate\":%lld,\"title\":\"S\"}",
                       k, (long long)(base + 2500 + (k * 37) % 1000));
    if (cd_loop_request(loop, line, (size_t)len, reply, sizeof reply, &n) != CD_OK) return 1;
  }
  /* The counter is live: starting 2500 activities allocates (ids, content, replies). */
  if (malloc_count() - counted < 2000) {
    printf("test_alloc: the counter saw %ld allocations for 2000 starts\n", malloc_count() - counted);
    failures++;
  }
  sleep(1); /* the first wakes may grow buffers */
  long ticks0 = atomic_load(&ticks);
  before = malloc_count();
  sleep(3);
  long during = malloc_count() - before;
  long delivered = atomic_load(&ticks) - ticks0;
  cd_loop_destroy(loop);
  long expired = atomic_load(&expiries);
  printf("test_alloc: %ld ticks through the C callback in 3 s, %ld countdowns expired: %ld "
         "allocations\n", delivered, expired, during);
  if (delivered < 5000 || expired != 500 || during != 0) failures++;
  if (failures) {
    printf("test_alloc: FAILED\n");
    return 1;
  }
  printf("test_alloc: all checks passed\n");
  return 0;
}
