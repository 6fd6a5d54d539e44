// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

/*
 * countdown.h: the C ABI of Countdown (libcountdown), for C11 and C++ hosts.
 *
 * Countdown keeps thousands to millions of countdown and elapsed-time activities and reports
 * each one's displayed second at the instant it changes, from a libuv loop on its own thread.
 * This header is written by hand and is the whole contract; nothing else is needed to use it.
 *
 * Conventions
 * - Every string is UTF-8 given as a pointer and a byte length; it need not end in NUL. A
 *   NULL pointer with length 0 is the empty string. Countdown copies what it keeps: a string
 *   passed in is read during the call only.
 * - Strings handed out (in cd_event, in replies) are owned by Countdown and valid only for
 *   the duration of the callback that receives them. Copy what you keep.
 * - Instants are whole milliseconds since 1970-01-01 UTC (the wire form of docs/activities.md); the valid
 *   range is 100000000000 (1973) to 253402300799999 (9999). 0 means "none" where a field says
 *   so, since it is never a valid instant.
 * - Every fallible call returns a cd_status; CD_OK is 0. On any other status nothing was
 *   changed, and cd_last_error_message() says why, naming the field at fault. No call aborts
 *   the process on bad input.
 *
 * Threads
 * - A cd_loop runs on its own thread. Every cd_loop_* call may be made from any thread,
 *   concurrently.
 * - The event callback and the completion of cd_loop_request_async run on the loop thread.
 *   They must not block. From there, only cd_loop_request_async may be called on the same
 *   loop; a blocking call (the typed commands, cd_loop_request, cd_loop_destroy) returns
 *   CD_ERR_WRONG_THREAD instead of deadlocking.
 */
#ifndef COUNTDOWN_H
#define COUNTDOWN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CD_VERSION_MAJOR 0
#define CD_VERSION_MINOR 4
#define CD_VERSION_PATCH 0

/* ---------------------------------------------------------------------------------------- */
/* Errors                                                                                   */
/* ---------------------------------------------------------------------------------------- */

/* The error codes of docs/errors.md, then the C ABI's own. */
typedef enum cd_status {
  CD_OK = 0,
  CD_ERR_INVALID_PAYLOAD = 1,       /* "invalidPayload": bad JSON, wrong type, unknown field */
  CD_ERR_INVALID_DATE = 2,          /* "invalidDate": an instant out of range (seconds?) */
  CD_ERR_ATTRIBUTES_TOO_LARGE = 3,  /* "attributesTooLarge": content over 4096 bytes */
  CD_ERR_DUPLICATE_ID = 4,          /* "duplicateID" */
  CD_ERR_NOT_FOUND = 5,             /* "notFound" */
  CD_ERR_ACTIVITY_ENDED = 6,        /* "activityEnded" */
  CD_ERR_OUT_OF_ORDER = 7,          /* "outOfOrder": an older timestamp */
  CD_ERR_LIMIT_REACHED = 8,         /* "limitReached": maxActivities */
  CD_ERR_DISABLED = 9,              /* "disabled" */
  CD_ERR_TIME_WENT_BACKWARDS = 10,  /* "timeWentBackwards" */
  CD_ERR_LINE_TOO_LONG = 11,        /* "lineTooLong": a request over 65536 bytes */
  CD_ERR_UNAUTHORIZED = 12,         /* "unauthorized" (service only) */
  CD_ERR_SLOW_CONSUMER = 13,        /* "slowConsumer" (service only) */
  CD_ERR_SHUTDOWN = 14,             /* "shutdown": the loop is being destroyed */
  CD_ERR_SYSTEM = 15,               /* "systemError": the OS refused a descriptor or thread */
  CD_ERR_INVALID_ARGUMENT = 100,    /* a NULL where a pointer is needed, a bad enum value */
  CD_ERR_BUFFER_TOO_SMALL = 101,    /* the output did not fit; the length out is the need */
  CD_ERR_WRONG_THREAD = 102         /* a blocking call from the loop's own thread */
} cd_status;

/* The code's name: "ok", the name of docs/errors.md ("invalidPayload"…), or "invalidArgument",
 * "bufferTooSmall", "wrongThread", "unknown". A static string; never NULL. */
const char *cd_status_name(cd_status status);

/* The message of the last call on this thread that did not return CD_OK ("" if none), NUL
 * terminated. Valid until the next cd_ call on this thread. */
const char *cd_last_error_message(void);

/* ---------------------------------------------------------------------------------------- */
/* Formatting (no allocation, no locale)                                                    */
/* ---------------------------------------------------------------------------------------- */

typedef enum cd_style {
  CD_STYLE_COMPACT = 0,        /* 2d 3h, 1h 2m, 4m 5s */
  CD_STYLE_REMAINING = 1,      /* Ended at zero, else 25h 1m, 4m 5s, 59s */
  CD_STYLE_POSITIONAL = 2,     /* 1:02:05, else 02:05 */
  CD_STYLE_MINUTE_SECOND = 3,  /* MM:SS, minutes unbounded: 62:05 */
  CD_STYLE_TIMER = 4,          /* 1:02:05, else 2:05 (hours hidden when show_hours is 0) */
  CD_STYLE_UNITS = 5           /* up to max_units units: 1d 1h, 1h, 0s */
} cd_style;

typedef struct cd_format_options {
  cd_style style;
  int32_t max_units;  /* CD_STYLE_UNITS only: 1 to 4 (0 means 2) */
  int32_t show_hours; /* CD_STYLE_TIMER only: 0 never shows hours (62:05) */
} cd_format_options;

/* How milliseconds become the whole second shown: a countdown rounds up (0:01 until it
 * ends), an elapsed timer rounds down. */
typedef enum cd_rounding { CD_ROUND_UP = 0, CD_ROUND_DOWN = 1 } cd_rounding;

/* The longest text any style writes. */
#define CD_FORMAT_MAX 32

/* Options for style with the defaults (max_units 2, show_hours 1). */
cd_format_options cd_format_options_default(cd_style style);

/* Writes the text for `milliseconds` (negative counts as 0) into buf as ASCII, sets *length
 * to its byte count and, when capacity > *length, writes a NUL after it. Allocates nothing.
 * CD_ERR_BUFFER_TOO_SMALL leaves buf untouched and sets *length to the size needed. */
cd_status cd_format(const cd_format_options *options, int64_t milliseconds,
                    cd_rounding rounding, char *buf, size_t capacity, size_t *length);

/* cd_format keeping the sign: a negative duration is '-' and the text of the rest, as an
 * overtime countdown shows the time past its end ("-0:05"). CD_ROUND_UP rounds toward +infinity
 * (-1500 ms is -1 s, a countdown's value 1.5 s past its end), CD_ROUND_DOWN toward -infinity.
 * The text fits CD_FORMAT_MAX bytes. */
cd_status cd_format_signed(const cd_format_options *options, int64_t milliseconds,
                           cd_rounding rounding, char *buf, size_t capacity, size_t *length);

/* ---------------------------------------------------------------------------------------- */
/* The loop                                                                                 */
/* ---------------------------------------------------------------------------------------- */

typedef struct cd_loop cd_loop; /* opaque */

typedef enum cd_kind { CD_KIND_COUNTDOWN = 0, CD_KIND_ELAPSED = 1 } cd_kind;

typedef enum cd_event_kind {
  CD_EVENT_STARTED = 0,
  CD_EVENT_UPDATED = 1,
  CD_EVENT_TICK = 2,
  CD_EVENT_MILESTONE = 3,
  CD_EVENT_STALE = 4,
  CD_EVENT_EXPIRED = 5,
  CD_EVENT_PAUSED = 6,
  CD_EVENT_RESUMED = 7,
  CD_EVENT_ENDED = 8,
  CD_EVENT_DISMISSED = 9
} cd_event_kind;

typedef enum cd_end_reason {
  CD_END_NONE = 0,         /* the event is not an end */
  CD_END_REQUESTED = 1,
  CD_END_EXPIRED = 2,
  CD_END_MAX_DURATION = 3,
  CD_END_DISABLED = 4
} cd_end_reason;

/* One event, valid for the duration of the callback only (the strings point into the loop's
 * memory). */
typedef struct cd_event {
  int64_t at;                /* the instant it happened, ms since 1970; never in the future */
  cd_event_kind kind;
  cd_kind activity_kind;
  const char *id;            /* the activity's id, UTF-8 */
  size_t id_length;
  int64_t value;             /* whole seconds shown: remaining or elapsed; negative past the
                                end of a countdown with overtime (text "-0:05") */
  const char *text;          /* value in the loop's style, ASCII (NULL if event_text is 0) */
  size_t text_length;
  const char *milestone;     /* the milestone's name for CD_EVENT_MILESTONE, else NULL (a
                                milestone's content patch is applied before its event: a
                                "get" request returns the new content) */
  size_t milestone_length;
  cd_end_reason reason;      /* for CD_EVENT_ENDED, else CD_END_NONE */
} cd_event;

/* Called on the loop thread for every event, in order. Must not block. */
typedef void (*cd_event_fn)(void *context, const cd_event *event);

typedef struct cd_loop_options {
  int32_t precise;                /* nonzero: deliver within ~100 us (costs more CPU) */
  int32_t quantum_ms;             /* otherwise: timer resolution, 1 to 1000 (0 means 1) */
  int64_t max_activities;         /* -1: no limit */
  int64_t max_active_duration_ms; /* -1: no limit */
  int32_t deliver_ticks;          /* 0: no CD_EVENT_TICK (lifecycle events only) */
  int32_t event_text;             /* 0: cd_event.text is NULL, length 0: no formatting per
                                     event, for hosts that format only what they show */
  cd_format_options format;       /* the style of cd_event.text */
} cd_loop_options;

/* The defaults: quantum 1 ms, no limits, ticks on, event text on, CD_STYLE_TIMER. */
cd_loop_options cd_loop_options_default(void);

/* Starts a loop thread. options may be NULL (the defaults); on_event may be NULL (no events);
 * context is passed to on_event as is. On CD_OK, *loop is the new loop. */
cd_status cd_loop_create(const cd_loop_options *options, cd_event_fn on_event, void *context,
                         cd_loop **loop);

/* Stops the loop, fails its pending commands with CD_ERR_SHUTDOWN, joins its thread and frees
 * it. On the loop thread it returns CD_ERR_WRONG_THREAD and does nothing. NULL is
 * CD_ERR_INVALID_ARGUMENT. After CD_OK the pointer is invalid. */
cd_status cd_loop_destroy(cd_loop *loop);

/* ---- Commands as JSON lines (the request form of docs/protocol.md, run at the loop's now) ---- */

/* Runs one request line, e.g. {"op":"start","kind":"countdown","endDate":…,"title":"B12"}
 * (ops: start, update, pause, resume, end, get, configure, list, ping; "rid" is echoed), and
 * writes its reply JSON (docs/protocol.md) (one line, no newline) into reply, with a NUL when it
 * fits. Returns the request's status: CD_OK when the reply says "ok":true, else its code.
 * Blocks until the loop has run it. If the reply does not fit, the request has still run:
 * CD_ERR_BUFFER_TOO_SMALL, reply untouched, *reply_length the size needed (use
 * cd_loop_request_async for replies of unknown size, such as list). A list's activities are
 * built and encoded on the calling thread, as they stood when the loop ran it, so a long
 * list does not hold back the loop's ticks. */
cd_status cd_loop_request(cd_loop *loop, const char *line, size_t line_length, char *reply,
                          size_t reply_capacity, size_t *reply_length);

/* Called on the loop thread with the request's status and its reply JSON (valid during the
 * call, not NUL terminated). */
typedef void (*cd_reply_fn)(void *context, cd_status status, const char *reply,
                            size_t reply_length);

/* Queues one request line and returns at once; `done` (which may be NULL) gets the reply on
 * the loop thread. Safe from the loop thread. CD_OK means it was queued: `done` is then
 * called exactly once. If the loop is being destroyed first, that call carries
 * CD_ERR_SHUTDOWN and is made by the thread that runs cd_loop_destroy (or, once destruction
 * has begun, by the caller of cd_loop_request_async, before it returns). Its reply is built
 * on the loop thread: a list of every activity costs about half a microsecond an activity
 * there, holding back ticks that long (cd_loop_request builds it on the caller's thread). */
cd_status cd_loop_request_async(cd_loop *loop, const char *line, size_t line_length,
                                cd_reply_fn done, void *context);

/* ---- Typed commands (block until the loop ran them; run at the loop's now) ---- */

typedef struct cd_start {
  const char *id;             /* NULL: the loop makes a UUID */
  size_t id_length;
  const char *title;          /* required */
  size_t title_length;
  const char *subtitle;       /* NULL: none */
  size_t subtitle_length;
  const char *color;          /* NULL: none; else "#RRGGBB" or "#RRGGBBAA" */
  size_t color_length;
  int64_t end_date;           /* countdown: required; elapsed: must be 0 */
  int64_t start_date;         /* 0: none (elapsed: the loop's now) */
  int64_t goal_ms;            /* elapsed only: 0 none */
  int64_t stale_date;         /* 0: none */
  int32_t overtime;           /* countdown only: nonzero runs on past the end, its value
                                 negative from a second after it (-1, -2 …) */
  const char *group;          /* NULL: none; else 1-64 bytes of A-Z a-z 0-9 . _ - (fixed at
                                 start; what a server's group keys see, docs/security.md) */
  size_t group_length;
} cd_start;

/* Starts a countdown (cd_start.end_date required) or an elapsed timer. On CD_OK the id (given
 * or made) is written to id_out with a NUL when it fits and *id_length set; id_out may be
 * NULL when the id is not wanted. A made id is 36 bytes. If id_out is too small the activity
 * has still started: CD_ERR_BUFFER_TOO_SMALL, *id_length the size needed. */
cd_status cd_loop_start_countdown(cd_loop *loop, const cd_start *start, char *id_out,
                                  size_t id_capacity, size_t *id_length);
cd_status cd_loop_start_elapsed(cd_loop *loop, const cd_start *start, char *id_out,
                                size_t id_capacity, size_t *id_length);

typedef struct cd_update {
  const char *title;          /* NULL: keep */
  size_t title_length;
  const char *subtitle;       /* NULL: keep */
  size_t subtitle_length;
  int64_t end_date;           /* 0: keep (countdowns only) */
  int64_t stale_date;         /* 0: keep */
} cd_update;

/* Updates an activity (docs/activities.md: content merged, dates replaced). Removing a field is done with a
 * JSON request ("staleDate":null). */
cd_status cd_loop_update(cd_loop *loop, const char *id, size_t id_length,
                         const cd_update *update);
cd_status cd_loop_pause(cd_loop *loop, const char *id, size_t id_length);
cd_status cd_loop_resume(cd_loop *loop, const char *id, size_t id_length);

typedef enum cd_dismissal {
  CD_DISMISS_DEFAULT = 0,     /* shown as ended for the default time (4 h), then dismissed */
  CD_DISMISS_IMMEDIATE = 1,
  CD_DISMISS_AFTER = 2        /* at the instant given */
} cd_dismissal;

/* Ends an activity; `after` is the dismissal instant for CD_DISMISS_AFTER, else ignored. */
cd_status cd_loop_end(cd_loop *loop, const char *id, size_t id_length, cd_dismissal dismissal,
                      int64_t after);

#ifdef __cplusplus
}
#endif

#endif /* COUNTDOWN_H */
