#ifndef COUNTDOWN_CLIBUV_SHIM_H
#define COUNTDOWN_CLIBUV_SHIM_H

// libuv, as packaged by Debian's libuv1-dev.
#include <uv.h>

#endif
