// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

#ifndef COUNTDOWN_CTHREAD_H
#define COUNTDOWN_CTHREAD_H

#include <errno.h>
#if defined(__linux__)
#include <sys/prctl.h>
#endif

// Names the calling thread `name` (the kernel keeps the first 15 bytes), as `top -H`, `ps -L`
// and /proc/PID/task/TID/comm show it; 0, or -errno (-ENOSYS where there is no such call).
// The one place a thread is named: `nameCurrentThread` in Sources/Countdown/ThreadName.swift.
static inline int cd_set_thread_name(const char *name) {
#if defined(__linux__)
  return prctl(PR_SET_NAME, (unsigned long)name, 0, 0, 0) == 0 ? 0 : -errno;
#else
  (void)name;
  return -ENOSYS;
#endif
}

#endif
