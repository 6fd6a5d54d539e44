// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

#ifndef COUNTDOWN_CBENCHUV_SHIM_H
#define COUNTDOWN_CBENCHUV_SHIM_H

// libuv for the benchmark's own peers (one uv_timer_t per activity, the wake-up floor). The
// library keeps its libuv module internal, so the benchmark declares its own.
#include <uv.h>

#include <errno.h>
#include <stdint.h>
#include <time.h>

#if defined(__linux__)
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

/// Nanoseconds of CLOCK_MONOTONIC.
static inline int64_t cbench_monotonic_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/// The CPU's cycle counter (x86-64: the TSC; arm64: the virtual counter), or monotonic
/// nanoseconds where there is none. Cheaper than a clock read (10 against 22 ns here); the
/// benchmark converts its differences to nanoseconds with a rate it measures (`TickRecorder`).
static inline uint64_t cbench_cycles(void) {
#if defined(__x86_64__) || defined(__i386__)
  return __builtin_ia32_rdtsc();
#elif defined(__aarch64__)
  uint64_t v;
  __asm__ volatile("mrs %0, cntvct_el0" : "=r"(v));
  return v;
#else
  return (uint64_t)cbench_monotonic_ns();
#endif
}

/// Sets the calling thread's timer slack, as the driver's loop thread does; 0 or -errno.
static inline int cbench_set_timer_slack_ns(unsigned long ns) {
#if defined(__linux__)
  return prctl(PR_SET_TIMERSLACK, ns, 0, 0, 0) == 0 ? 0 : -errno;
#else
  (void)ns;
  return -ENOSYS;
#endif
}

#if defined(__linux__)
/// sched_getattr(2)'s and sched_setattr(2)'s `struct sched_attr` (glibc declares none).
struct cbench_sched_attr {
  uint32_t size, policy;
  uint64_t flags;
  int32_t nice;
  uint32_t priority;
  uint64_t runtime, deadline, period;
};
#endif

/// Asks for a scheduling slice of `ns` for the calling thread, as the driver's loop thread
/// does (`PromptWakeups`: EEVDF's custom slice; the thread's policy and nice value kept);
/// 0 or -errno.
static inline int cbench_set_sched_slice_ns(uint64_t ns) {
#if defined(__linux__)
  struct cbench_sched_attr attr = {0};
  if (syscall(SYS_sched_getattr, 0, &attr, sizeof attr, 0) != 0) return -errno;
  attr.size = sizeof attr;
  attr.flags = 0;
  attr.runtime = ns;
  return syscall(SYS_sched_setattr, 0, &attr, 0) == 0 ? 0 : -errno;
#else
  (void)ns;
  return -ENOSYS;
#endif
}

/// Places every thread of process `pid` by its scheduling slice: the threads that asked for
/// the short slice of `short_ns` (the driver's loop thread and a service's network threads,
/// `PromptWakeups`; the bench's tick subscriber) on the CPUs of `short_mask`, all others on
/// `other_mask` (bit N: CPU N, CPUs 0–63). The tick comparison's `--pin` runs it every 0.2 s.
/// The number of threads placed on `short_mask`, or -errno when the process is gone.
static inline int cbench_pin_threads_by_slice(
  int pid, uint64_t short_ns, uint64_t short_mask, uint64_t other_mask
) {
#if defined(__linux__)
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/task", pid);
  DIR *dir = opendir(path);
  if (dir == NULL) return -errno;
  int placed = 0;
  struct dirent *entry;
  while ((entry = readdir(dir)) != NULL) {
    if (entry->d_name[0] == '.') continue;
    int tid = atoi(entry->d_name);
    struct cbench_sched_attr attr = {0};
    if (syscall(SYS_sched_getattr, tid, &attr, sizeof attr, 0) != 0) continue;
    int isShort = attr.runtime == short_ns;
    uint64_t mask = isShort ? short_mask : other_mask;
    if (syscall(SYS_sched_setaffinity, tid, sizeof mask, &mask) == 0 && isShort) placed++;
  }
  closedir(dir);
  return placed;
#else
  (void)pid;
  (void)short_ns;
  (void)short_mask;
  (void)other_mask;
  return -ENOSYS;
#endif
}

#endif
