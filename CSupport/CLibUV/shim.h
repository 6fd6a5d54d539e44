// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

#ifndef COUNTDOWN_CLIBUV_SHIM_H
#define COUNTDOWN_CLIBUV_SHIM_H

// libuv, as packaged by Debian's libuv1-dev, and the few Linux calls the driver needs beside it.
// Every helper is prefixed cdl_ and wraps calls Swift cannot make directly (variadic prctl) or
// structs it should not build by hand (itimerspec).
#include <uv.h>

#include <errno.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#if defined(__linux__)
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#define CDL_HAVE_TIMERFD 1
#else
#define CDL_HAVE_TIMERFD 0
#endif

/// Nanoseconds of the given clock (CLOCK_REALTIME, CLOCK_MONOTONIC).
static inline int64_t cdl_clock_ns(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline int64_t cdl_realtime_ns(void) { return cdl_clock_ns(CLOCK_REALTIME); }
static inline int64_t cdl_monotonic_ns(void) { return cdl_clock_ns(CLOCK_MONOTONIC); }

/// Sets the calling thread's timer slack; 0 on success, -errno on failure.
static inline int cdl_set_timer_slack_ns(unsigned long ns) {
#if CDL_HAVE_TIMERFD
  return prctl(PR_SET_TIMERSLACK, ns, 0, 0, 0) == 0 ? 0 : -errno;
#else
  (void)ns;
  return -ENOSYS;
#endif
}

#if CDL_HAVE_TIMERFD
/// sched_setattr(2)'s struct (glibc has no wrapper before 2.41).
struct cdl_sched_attr {
  uint32_t size;
  uint32_t sched_policy;
  uint64_t sched_flags;
  int32_t sched_nice;
  uint32_t sched_priority;
  uint64_t sched_runtime;
  uint64_t sched_deadline;
  uint64_t sched_period;
};
#endif

/// Asks for a scheduling slice of `ns` for the calling thread: EEVDF's custom slice (Linux
/// 6.12 and later; unprivileged; clamped by the kernel to 0.1–100 ms). A thread with a shorter
/// slice than the one running gets the CPU soon after it wakes instead of after the other's
/// slice (1.4 ms by default on two cores). Only a thread of the normal or batch policy is
/// changed, its nice value kept. 0 on success, 1 when the thread's policy is another (left as
/// it is), or -errno; older kernels accept the call and keep their own slice.
static inline int cdl_set_sched_slice_ns(uint64_t ns) {
#if CDL_HAVE_TIMERFD
  struct cdl_sched_attr attr = {0};
  if (syscall(SYS_sched_getattr, 0, &attr, sizeof attr, 0) != 0) return -errno;
  if (attr.sched_policy != 0 /* SCHED_OTHER */ && attr.sched_policy != 3 /* SCHED_BATCH */)
    return 1;
  attr.size = sizeof attr;
  attr.sched_flags = 0;
  attr.sched_runtime = ns;
  return syscall(SYS_sched_setattr, 0, &attr, 0) == 0 ? 0 : -errno;
#else
  (void)ns;
  return -ENOSYS;
#endif
}

/// The calling thread's scheduling slice in nanoseconds (what the kernel reports: the custom
/// slice once asked for, else the default), or -errno.
static inline int64_t cdl_sched_slice_ns(void) {
#if CDL_HAVE_TIMERFD
  struct cdl_sched_attr attr = {0};
  if (syscall(SYS_sched_getattr, 0, &attr, sizeof attr, 0) != 0) return -errno;
  return (int64_t)attr.sched_runtime;
#else
  return -ENOSYS;
#endif
}

/// A non-blocking, close-on-exec timerfd on `clock`, or -errno.
static inline int cdl_timerfd_create(clockid_t clock) {
#if CDL_HAVE_TIMERFD
  int fd = timerfd_create(clock, TFD_NONBLOCK | TFD_CLOEXEC);
  return fd >= 0 ? fd : -errno;
#else
  (void)clock;
  return -ENOSYS;
#endif
}

/// Arms `fd` to fire once at the absolute instant `ns` of its clock (0 disarms). With
/// `cancel_on_set` (CLOCK_REALTIME only), a step of the clock makes reads fail with ECANCELED.
static inline int cdl_timerfd_arm(int fd, int64_t ns, int cancel_on_set) {
#if CDL_HAVE_TIMERFD
  struct itimerspec its;
  its.it_interval.tv_sec = 0;
  its.it_interval.tv_nsec = 0;
  its.it_value.tv_sec = (time_t)(ns / 1000000000);
  its.it_value.tv_nsec = (long)(ns % 1000000000);
  int flags = ns == 0 ? 0 : TFD_TIMER_ABSTIME;
  if (cancel_on_set && ns != 0) flags |= TFD_TIMER_CANCEL_ON_SET;
  return timerfd_settime(fd, flags, &its, NULL) == 0 ? 0 : -errno;
#else
  (void)fd; (void)ns; (void)cancel_on_set;
  return -ENOSYS;
#endif
}

/// Drains a timerfd: 0 after an expiry, -EAGAIN when none is pending, -ECANCELED after a clock
/// step (cancel-on-set), or another -errno.
static inline int cdl_timerfd_drain(int fd) {
  uint64_t expirations;
  ssize_t n = read(fd, &expirations, sizeof expirations);
  return n == (ssize_t)sizeof expirations ? 0 : -errno;
}

static inline int cdl_close(int fd) { return close(fd) == 0 ? 0 : -errno; }

/// 0 when `n` (at most 8) more descriptors can be opened now, else -errno (-EMFILE at the
/// limit). Opens them and closes them again.
static inline int cdl_descriptors_available(int n) {
#if CDL_HAVE_TIMERFD
  int fds[8];
  int opened = 0;
  int err = 0;
  for (; opened < n && opened < 8; opened++) {
    fds[opened] = eventfd(0, EFD_CLOEXEC);
    if (fds[opened] < 0) {
      err = -errno;
      break;
    }
  }
  for (int k = 0; k < opened; k++) close(fds[k]);
  return err;
#else
  (void)n;
  return 0;
#endif
}

#endif
