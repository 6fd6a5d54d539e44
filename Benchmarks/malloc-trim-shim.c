// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)
//
// For BENCHMARKS.md's 30-minute soak with trims: cc -O2 -shared -fPIC -o trim.so
// Benchmarks/malloc-trim-shim.c -lpthread; LD_PRELOAD it with TRIM_SHIM_ONLY=countdown. The log
// (TRIM_LOG, default /tmp/trim-PID.log): each call's time, RSS before and after in kB, its ms.
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
static long rss_kb(void) {
  FILE *f = fopen("/proc/self/statm", "r"); long a = 0, b = 0;
  if (f) { if (fscanf(f, "%ld %ld", &a, &b) != 2) b = 0; fclose(f); }
  return b * (sysconf(_SC_PAGESIZE) / 1024);
}
static void *loop(void *arg) {
  (void)arg;
  const char *e = getenv("TRIM_EVERY"); int every = e ? atoi(e) : 30;
  char path[128];
  const char *l = getenv("TRIM_LOG");
  if (l) snprintf(path, sizeof path, "%s", l); else snprintf(path, sizeof path, "/tmp/trim-%d.log", getpid());
  FILE *log = fopen(path, "w");
  for (;;) {
    sleep(every);
    long before = rss_kb(); struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a); malloc_trim(0); clock_gettime(CLOCK_MONOTONIC, &b);
    long after = rss_kb();
    fprintf(log, "%ld %ld %ld %.3f\n", (long)time(NULL), before, after,
            (b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6);
    fflush(log);
  }
  return NULL;
}
__attribute__((constructor)) static void start(void) {
  const char *p = getenv("TRIM_SHIM_ONLY");  // only in processes whose argv[0] ends so
  char exe[256] = {0}; ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0 || (p && !strstr(exe, p))) return;
  pthread_t t; pthread_create(&t, NULL, loop, NULL); pthread_detach(t);
}
