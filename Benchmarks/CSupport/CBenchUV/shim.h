#ifndef COUNTDOWN_CBENCHUV_SHIM_H
#define COUNTDOWN_CBENCHUV_SHIM_H

// libuv for the benchmark's own peers (one uv_timer_t per activity, the wake-up floor). The
// library keeps its libuv module internal, so the benchmark declares its own.
#include <uv.h>

#include <errno.h>
#include <stdint.h>
#include <time.h>

#if defined(__linux__)
#include <sys/prctl.h>
#endif

/// Nanoseconds of CLOCK_MONOTONIC.
static inline int64_t cbench_monotonic_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
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

#endif
