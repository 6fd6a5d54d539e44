// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

/*
 * Commands from several C threads at once while events flow: each thread starts, pauses,
 * resumes, updates and ends its own activities through the typed calls and JSON requests,
 * while 2000 countdowns tick. Every command must succeed, every activity's lifecycle events
 * must arrive once and in order, and no tick may come before its instant.
 */
#define _DEFAULT_SOURCE
#define _POSIX_C_SOURCE 200809L
#include "countdown.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { THREADS = 6, PER_THREAD = 300, TICKING = 2000 };

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Per activity "t<thread>.<k>": a bit per lifecycle event seen, in the order they must come. */
static unsigned char seen[THREADS][PER_THREAD];
static long ticks = 0, early = 0, out_of_order = 0, unknown = 0;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void on_event(void *context, const cd_event *e) {
  (void)context;
  int64_t received = now_ms();
  pthread_mutex_lock(&lock);
  if (received < e->at) early++;
  if (e->kind == CD_EVENT_TICK) {
    ticks++;
  } else if (e->id_length > 1 && e->id[0] == 't') {
    int t = 0, k = 0;
    char id[32];
    snprintf(id, sizeof id, "%.*s", (int)e->id_length, e->id);
    if (sscanf(id, "t%d.%d", &t, &k) == 2 && t >= 0 && t < THREADS && k >= 0 && k < PER_THREAD) {
      /* started=1, paused=2, resumed=4, updated=8, ended=16, dismissed=32, in this order. */
      int bit = -1;
      switch (e->kind) {
        case CD_EVENT_STARTED: bit = 0; break;
        case CD_EVENT_PAUSED: bit = 1; break;
        case CD_EVENT_RESUMED: bit = 2; break;
        case CD_EVENT_UPDATED: bit = 3; break;
        case CD_EVENT_ENDED: bit = 4; break;
        case CD_EVENT_DISMISSED: bit = 5; break;
        default: break;
      }
      if (bit >= 0) {
        if (seen[t][k] != (unsigned char)((1u << bit) - 1)) out_of_order++;
        seen[t][k] |= (unsigned char)(1u << bit);
      }
    } else {
      unknown++;
    }
  }
  pthread_mutex_unlock(&lock);
}

typedef struct job {
  cd_loop *loop;
  int thread;
  int failures;
} job;

static void *worker(void *arg) {
  job *j = arg;
  for (int k = 0; k < PER_THREAD; k++) {
    char id[32];
    int n = snprintf(id, sizeof id, "t%d.%d", j->thread, k);
    cd_start s = {0};
    s.id = id;
    s.id_length = (size_t)n;
    s.title = "Worker";
    s.title_length = 6;
    s.end_date = now_ms() + 600000;
    cd_status st = cd_loop_start_countdown(j->loop, &s, NULL, 0, NULL);
    if (st == CD_OK) st = cd_loop_pause(j->loop, id, (size_t)n);
    if (st == CD_OK) st = cd_loop_resume(j->loop, id, (size_t)n);
    if (st == CD_OK) {
      char line[128], reply[512];
      size_t rn = 0;
      int ln = snprintf(line, sizeof line, "{\"op\":\"update\",\"id\":\"%s\",\"title\":\"W%d\"}",
                        id, k);
      st = cd_loop_request(j->loop, line, (size_t)ln, reply, sizeof reply, &rn);
    }
    if (st == CD_OK) st = cd_loop_end(j->loop, id, (size_t)n, CD_DISMISS_IMMEDIATE, 0);
    if (st != CD_OK) {
      fprintf(stderr, "thread %d activity %d: %s: %s\n", j->thread, k, cd_status_name(st),
              cd_last_error_message());
      j->failures++;
    }
  }
  return NULL;
}

int main(void) {
  cd_loop *loop = NULL;
  if (cd_loop_create(NULL, on_event, NULL, &loop) != CD_OK) {
    fprintf(stderr, "create: %s\n", cd_last_error_message());
    return 1;
  }
  /* Background ticks: 2000 countdowns, started through one asynchronous JSON request each. */
  int64_t base = now_ms();
  for (int k = 0; k < TICKING; k++) {
    char line[160];
    int n = snprintf(line, sizeof line,
                     "{\"op\":\"start\",\"id\":\"bg%d\",\"kind\":\"countdown\",\"endDate\":%lld,"
                     "\"title\":\"BG\"}",
                     k, (long long)(base + 600000 + k % 1000));
    if (cd_loop_request_async(loop, line, (size_t)n, NULL, NULL) != CD_OK) return 1;
  }
  pthread_t threads[THREADS];
  job jobs[THREADS];
  for (int t = 0; t < THREADS; t++) {
    jobs[t] = (job){loop, t, 0};
    pthread_create(&threads[t], NULL, worker, &jobs[t]);
  }
  int failures = 0;
  for (int t = 0; t < THREADS; t++) {
    pthread_join(threads[t], NULL);
    failures += jobs[t].failures;
  }
  sleep(2); /* events keep flowing after the commands */
  if (cd_loop_destroy(loop) != CD_OK) return 1;

  long incomplete = 0;
  for (int t = 0; t < THREADS; t++)
    for (int k = 0; k < PER_THREAD; k++)
      if (seen[t][k] != 63) incomplete++;
  printf("test_threads: %d threads x %d activities, %ld ticks, %ld early, %ld out of order, "
         "%ld incomplete, %d failed commands\n",
         THREADS, PER_THREAD, ticks, early, out_of_order, incomplete, failures);
  if (failures || early || out_of_order || incomplete || unknown || ticks < TICKING) return 1;
  printf("test_threads: all checks passed\n");
  return 0;
}
