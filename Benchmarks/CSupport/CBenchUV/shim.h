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

/// Asks for a scheduling slice of `ns` for the calling thread, as the driver's loop thread
/// does (`PromptWakeups`: EEVDF's custom slice; the thread's policy and nice value kept);
/// 0 or -errno.
static inline int cbench_set_sched_slice_ns(uint64_t ns) {
#if defined(__linux__)
  struct {
    uint32_t size, policy;
    uint64_t flags;
    int32_t nice;
    uint32_t priority;
    uint64_t runtime, deadline, period;
  } attr = {0};
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

#endif
