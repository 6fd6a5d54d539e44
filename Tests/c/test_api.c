// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

/*
 * Every function of countdown.h, including every error path and bad UTF-8, against the built
 * libcountdown. Run by `make ctest`, under AddressSanitizer. Exits 0 when all checks pass.
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

static int failures = 0;
#define CHECK(cond)                                                               \
  do {                                                                            \
    if (!(cond)) {                                                                \
      fprintf(stderr, "%s:%d: check failed: %s (last error: %s)\n", __FILE__,    \
              __LINE__, #cond, cd_last_error_message());                          \
      failures++;                                                                 \
    }                                                                             \
  } while (0)
#define CHECK_STATUS(call, want)                                                  \
  do {                                                                            \
    cd_status got_ = (call);                                                      \
    if (got_ != (want)) {                                                         \
      fprintf(stderr, "%s:%d: %s gave %s, wanted %s (%s)\n", __FILE__, __LINE__,  \
              #call, cd_status_name(got_), cd_status_name(want),                   \
              cd_last_error_message());                                           \
      failures++;                                                                 \
    }                                                                             \
  } while (0)
#define LIT(s) s, sizeof(s) - 1

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int contains(const char *hay, const char *needle) { return strstr(hay, needle) != NULL; }

/* ---- formatting ---- */

static void check_format(cd_style style, int64_t ms, cd_rounding r, const char *want) {
  char buf[CD_FORMAT_MAX + 1];
  size_t n = 0;
  cd_format_options o = cd_format_options_default(style);
  CHECK_STATUS(cd_format(&o, ms, r, buf, sizeof buf, &n), CD_OK);
  if (n != strlen(want) || strcmp(buf, want) != 0) {
    fprintf(stderr, "format style %d %lld ms: got '%.*s', wanted '%s'\n", (int)style,
            (long long)ms, (int)n, buf, want);
    failures++;
  }
}

static void test_format(void) {
  check_format(CD_STYLE_TIMER, 3725000, CD_ROUND_DOWN, "1:02:05");
  check_format(CD_STYLE_TIMER, 1, CD_ROUND_UP, "0:01");
  check_format(CD_STYLE_TIMER, 999, CD_ROUND_DOWN, "0:00");
  check_format(CD_STYLE_TIMER, -5000, CD_ROUND_DOWN, "0:00");
  check_format(CD_STYLE_COMPACT, 183600000, CD_ROUND_DOWN, "2d 3h");
  check_format(CD_STYLE_COMPACT, 245000, CD_ROUND_DOWN, "4m 5s");
  check_format(CD_STYLE_REMAINING, 0, CD_ROUND_UP, "Ended");
  check_format(CD_STYLE_POSITIONAL, 125000, CD_ROUND_DOWN, "02:05");
  check_format(CD_STYLE_MINUTE_SECOND, 3725000, CD_ROUND_DOWN, "62:05");
  check_format(CD_STYLE_UNITS, 90061000, CD_ROUND_DOWN, "1d 1h");

  char buf[64];
  size_t n = 0;
  cd_format_options o = cd_format_options_default(CD_STYLE_TIMER);
  o.show_hours = 0;
  CHECK_STATUS(cd_format(&o, 3725000, CD_ROUND_DOWN, buf, sizeof buf, &n), CD_OK);
  CHECK(n == 5 && strcmp(buf, "62:05") == 0);
  o = cd_format_options_default(CD_STYLE_UNITS);
  o.max_units = 4;
  CHECK_STATUS(cd_format(&o, 90061000, CD_ROUND_DOWN, buf, sizeof buf, &n), CD_OK);
  CHECK(strcmp(buf, "1d 1h 1m 1s") == 0);

  /* Exactly the length: no NUL is written, the length is right. */
  memset(buf, 'x', sizeof buf);
  o = cd_format_options_default(CD_STYLE_TIMER);
  CHECK_STATUS(cd_format(&o, 3725000, CD_ROUND_DOWN, buf, 7, &n), CD_OK);
  CHECK(n == 7 && memcmp(buf, "1:02:05x", 8) == 0);
  /* Too small: untouched, the need reported. */
  memset(buf, 'x', sizeof buf);
  CHECK_STATUS(cd_format(&o, 3725000, CD_ROUND_DOWN, buf, 6, &n), CD_ERR_BUFFER_TOO_SMALL);
  CHECK(n == 7 && buf[0] == 'x');
  CHECK(contains(cd_last_error_message(), "needs 7 bytes"));
  CHECK_STATUS(cd_format(&o, 3725000, CD_ROUND_DOWN, NULL, 0, &n), CD_ERR_BUFFER_TOO_SMALL);
  CHECK(n == 7);
  /* Bad arguments. */
  CHECK_STATUS(cd_format(NULL, 0, CD_ROUND_UP, buf, sizeof buf, &n), CD_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(cd_format(&o, 0, CD_ROUND_UP, buf, sizeof buf, NULL), CD_ERR_INVALID_ARGUMENT);
  o.style = (cd_style)42;
  CHECK_STATUS(cd_format(&o, 0, CD_ROUND_UP, buf, sizeof buf, &n), CD_ERR_INVALID_ARGUMENT);
  CHECK(contains(cd_last_error_message(), "style 42"));
  o = cd_format_options_default(CD_STYLE_UNITS);
  o.max_units = 7;
  CHECK_STATUS(cd_format(&o, 0, CD_ROUND_UP, buf, sizeof buf, &n), CD_ERR_INVALID_ARGUMENT);
  CHECK(contains(cd_last_error_message(), "max_units 7"));
  o = cd_format_options_default(CD_STYLE_TIMER);
  CHECK_STATUS(cd_format(&o, 0, (cd_rounding)9, buf, sizeof buf, &n), CD_ERR_INVALID_ARGUMENT);
  /* Signed: an overtime countdown's text. */
  CHECK_STATUS(cd_format_signed(&o, -1500, CD_ROUND_UP, buf, sizeof buf, &n), CD_OK);
  CHECK(n == 5 && strcmp(buf, "-0:01") == 0);
  CHECK_STATUS(cd_format_signed(&o, -62000, CD_ROUND_UP, buf, sizeof buf, &n), CD_OK);
  CHECK(strcmp(buf, "-1:02") == 0);
  CHECK_STATUS(cd_format_signed(&o, -999, CD_ROUND_UP, buf, sizeof buf, &n), CD_OK);
  CHECK(strcmp(buf, "0:00") == 0);
  CHECK_STATUS(cd_format_signed(&o, 1500, CD_ROUND_UP, buf, sizeof buf, &n), CD_OK);
  CHECK(strcmp(buf, "0:02") == 0);
  CHECK_STATUS(cd_format_signed(&o, INT64_MIN, CD_ROUND_DOWN, buf, sizeof buf, &n), CD_OK);
  CHECK(n <= CD_FORMAT_MAX && buf[0] == '-');
  CHECK_STATUS(cd_format_signed(NULL, 0, CD_ROUND_UP, buf, sizeof buf, &n), CD_ERR_INVALID_ARGUMENT);
  CHECK(contains(cd_last_error_message(), "cd_format_signed"));
  /* Extremes never trap. */
  CHECK_STATUS(cd_format(&o, INT64_MAX, CD_ROUND_UP, buf, sizeof buf, &n), CD_OK);
  CHECK_STATUS(cd_format(&o, INT64_MIN, CD_ROUND_UP, buf, sizeof buf, &n), CD_OK);
  CHECK(strcmp(buf, "0:00") == 0);
}

/* ---- statuses ---- */

static void test_status(void) {
  CHECK(strcmp(cd_status_name(CD_OK), "ok") == 0);
  CHECK(strcmp(cd_status_name(CD_ERR_INVALID_PAYLOAD), "invalidPayload") == 0);
  CHECK(strcmp(cd_status_name(CD_ERR_INVALID_DATE), "invalidDate") == 0);
  CHECK(strcmp(cd_status_name(CD_ERR_ATTRIBUTES_TOO_LARGE), "attributesTooLarge") == 0);
  CHECK(strcmp(cd_status_name(CD_ERR_DUPLICATE_ID), "duplicateID") == 0);
  CHECK(strcmp(cd_status_name(CD_ERR_NOT_FOUND), "notFound") == 0);
  CHECK(strcmp(cd_status_name(CD_ERR_ACTIVITY_ENDED), "activityEnded") == 0);
  CHECK(strcmp(cd_status_name(CD_ERR_OUT_OF_ORDER), "outOfOrder") == 0);
  CHECK(strcmp(cd_status_name(CD_ERR_LIMIT_REACHED), "limitReached") == 0);
  CHECK(strcmp(cd_status_name(CD_ERR_DISABLED), "disabled") == 0);
  CHECK(strcmp(cd_status_name(CD_ERR_TIME_WENT_BACKWARDS), "timeWentBackwards") == 0);
  CHECK(strcmp(cd_status_name(CD_ERR_LINE_TOO_LONG), "lineTooLong") == 0);
  CHECK(strcmp(cd_status_name(CD_ERR_UNAUTHORIZED), "unauthorized") == 0);
  CHECK(strcmp(cd_status_name(CD_ERR_SLOW_CONSUMER), "slowConsumer") == 0);
  CHECK(strcmp(cd_status_name(CD_ERR_SHUTDOWN), "shutdown") == 0);
  CHECK(strcmp(cd_status_name(CD_ERR_SYSTEM), "systemError") == 0);
  CHECK(strcmp(cd_status_name(CD_ERR_INVALID_ARGUMENT), "invalidArgument") == 0);
  CHECK(strcmp(cd_status_name(CD_ERR_BUFFER_TOO_SMALL), "bufferTooSmall") == 0);
  CHECK(strcmp(cd_status_name(CD_ERR_WRONG_THREAD), "wrongThread") == 0);
  CHECK(strcmp(cd_status_name((cd_status)999), "unknown") == 0);
}

/* ---- the loop ---- */

#define MAX_EVENTS 4096
typedef struct recorded {
  int64_t at, received, value;
  cd_event_kind kind;
  cd_end_reason reason;
  char id[64], text[CD_FORMAT_MAX + 1], milestone[64];
} recorded;

typedef struct sink {
  pthread_mutex_t lock;
  recorded events[MAX_EVENTS];
  int count;
  cd_loop *loop; /* set after create: the callback tries blocking calls from the loop thread */
  int tried_from_loop;
  cd_status destroy_from_loop, request_from_loop, pause_from_loop, async_from_loop;
} sink;

static void on_event(void *context, const cd_event *e) {
  sink *s = context;
  int64_t received = now_ms();
  pthread_mutex_lock(&s->lock);
  if (s->count < MAX_EVENTS) {
    recorded *r = &s->events[s->count++];
    r->at = e->at;
    r->received = received;
    r->value = e->value;
    r->kind = e->kind;
    r->reason = e->reason;
    snprintf(r->id, sizeof r->id, "%.*s", (int)e->id_length, e->id);
    snprintf(r->text, sizeof r->text, "%.*s", (int)e->text_length, e->text);
    if (e->milestone) snprintf(r->milestone, sizeof r->milestone, "%.*s",
                               (int)e->milestone_length, e->milestone);
    else r->milestone[0] = 0;
  }
  cd_loop *loop = s->loop;
  int first = loop && e->kind == CD_EVENT_TICK && !s->tried_from_loop;
  if (first) s->tried_from_loop = 1;
  pthread_mutex_unlock(&s->lock);
  if (first) {
    char reply[256];
    size_t n;
    s->destroy_from_loop = cd_loop_destroy(loop);
    s->request_from_loop = cd_loop_request(loop, LIT("{\"op\":\"ping\"}"), reply, sizeof reply, &n);
    s->pause_from_loop = cd_loop_pause(loop, LIT("gate"));
    s->async_from_loop = cd_loop_request_async(loop, LIT("{\"op\":\"ping\"}"), NULL, NULL);
  }
}

typedef struct waiter {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  int done;
  cd_status status;
  char reply[1024];
} waiter;

static void on_reply(void *context, cd_status status, const char *reply, size_t length) {
  waiter *w = context;
  pthread_mutex_lock(&w->lock);
  w->status = status;
  snprintf(w->reply, sizeof w->reply, "%.*s", (int)length, reply);
  w->done = 1;
  pthread_cond_signal(&w->cond);
  pthread_mutex_unlock(&w->lock);
}

static void wait_reply(waiter *w) {
  pthread_mutex_lock(&w->lock);
  while (!w->done) pthread_cond_wait(&w->cond, &w->lock);
  pthread_mutex_unlock(&w->lock);
}

static void test_create_errors(void) {
  cd_loop *loop = (cd_loop *)0x1;
  cd_loop_options o = cd_loop_options_default();
  CHECK(o.quantum_ms == 1 && o.max_activities == -1 && o.deliver_ticks == 1 && o.event_text == 1);
  CHECK(o.format.style == CD_STYLE_TIMER);
  o.quantum_ms = 5000;
  CHECK_STATUS(cd_loop_create(&o, NULL, NULL, &loop), CD_ERR_INVALID_ARGUMENT);
  CHECK(loop == NULL);
  CHECK(contains(cd_last_error_message(), "quantum_ms 5000"));
  o = cd_loop_options_default();
  o.max_activities = -5;
  CHECK_STATUS(cd_loop_create(&o, NULL, NULL, &loop), CD_ERR_INVALID_ARGUMENT);
  o = cd_loop_options_default();
  o.max_active_duration_ms = 0;
  CHECK_STATUS(cd_loop_create(&o, NULL, NULL, &loop), CD_ERR_INVALID_ARGUMENT);
  o = cd_loop_options_default();
  o.format.style = (cd_style)77;
  CHECK_STATUS(cd_loop_create(&o, NULL, NULL, &loop), CD_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(cd_loop_create(NULL, NULL, NULL, NULL), CD_ERR_INVALID_ARGUMENT);
  /* NULL options and no callback: a working loop. */
  CHECK_STATUS(cd_loop_create(NULL, NULL, NULL, &loop), CD_OK);
  char reply[256];
  size_t n = 0;
  CHECK_STATUS(cd_loop_request(loop, LIT("{\"op\":\"ping\",\"rid\":\"p\"}"), reply, sizeof reply, &n),
               CD_OK);
  CHECK(contains(reply, "\"rid\":\"p\",\"ok\":true"));
  CHECK_STATUS(cd_loop_destroy(loop), CD_OK);
  /* A limit of one activity. */
  o = cd_loop_options_default();
  o.max_activities = 1;
  CHECK_STATUS(cd_loop_create(&o, NULL, NULL, &loop), CD_OK);
  cd_start s = {0};
  s.title = "A";
  s.title_length = 1;
  CHECK_STATUS(cd_loop_start_elapsed(loop, &s, NULL, 0, NULL), CD_OK);
  CHECK_STATUS(cd_loop_start_elapsed(loop, &s, NULL, 0, NULL), CD_ERR_LIMIT_REACHED);
  CHECK_STATUS(cd_loop_destroy(loop), CD_OK);
}

/* With event_text 0 the callback gets no text; ticks and values still come. */
static void on_event_no_text(void *context, const cd_event *e) {
  int *seen = context;
  if (e->kind == CD_EVENT_TICK && *seen != -1) *seen = (e->text == NULL && e->text_length == 0 && e->value > 0) ? 1 : -1;
}

static void test_no_text(void) {
  int seen = 0; /* written by the loop thread, read after cd_loop_destroy joined it */
  cd_loop *loop = NULL;
  cd_loop_options o = cd_loop_options_default();
  o.event_text = 0;
  CHECK_STATUS(cd_loop_create(&o, on_event_no_text, &seen, &loop), CD_OK);
  cd_start s = {0};
  s.title = "T";
  s.title_length = 1;
  s.end_date = now_ms() + 60000;
  CHECK_STATUS(cd_loop_start_countdown(loop, &s, NULL, 0, NULL), CD_OK);
  usleep(1300000);
  CHECK_STATUS(cd_loop_destroy(loop), CD_OK);
  CHECK(seen == 1);
}

/* Overtime: a countdown started with cd_start.overtime ticks 0 at its end, then -1 ("-0:01"). */
typedef struct overtime_seen {
  int expired, negative, text_ok;
} overtime_seen;

static void on_event_overtime(void *context, const cd_event *e) {
  overtime_seen *seen = context;
  if (e->kind == CD_EVENT_EXPIRED) seen->expired++;
  if (e->kind == CD_EVENT_TICK && e->value == -1) {
    seen->negative++;
    seen->text_ok = e->text_length == 5 && memcmp(e->text, "-0:01", 5) == 0;
  }
}

static void test_overtime(void) {
  overtime_seen seen = {0, 0, 0}; /* written by the loop thread, read after destroy joined it */
  cd_loop *loop = NULL;
  CHECK_STATUS(cd_loop_create(NULL, on_event_overtime, &seen, &loop), CD_OK);
  cd_start s = {0};
  s.title = "Talk";
  s.title_length = 4;
  s.end_date = now_ms() + 300;
  s.overtime = 1;
  CHECK_STATUS(cd_loop_start_countdown(loop, &s, NULL, 0, NULL), CD_OK);
  /* An elapsed timer has no end to run past. */
  cd_start e = s;
  e.end_date = 0;
  CHECK_STATUS(cd_loop_start_elapsed(loop, &e, NULL, 0, NULL), CD_ERR_INVALID_PAYLOAD);
  CHECK(contains(cd_last_error_message(), "overtime applies to countdowns"));
  usleep(1600000);
  char reply[1024];
  size_t n = 0;
  CHECK_STATUS(cd_loop_request(loop, LIT("{\"op\":\"list\"}"), reply, sizeof reply, &n), CD_OK);
  CHECK(contains(reply, "\"overtime\":true") && contains(reply, "\"value\":-1"));
  CHECK_STATUS(cd_loop_destroy(loop), CD_OK);
  CHECK(seen.expired == 1 && seen.negative == 1 && seen.text_ok);
}

/* A group: given at the start, shown in the activity object; a bad name is refused and
 * nothing starts. */
static void test_group(void) {
  cd_loop *loop = NULL;
  CHECK_STATUS(cd_loop_create(NULL, NULL, NULL, &loop), CD_OK);
  cd_start s = {0};
  s.id = "g1";
  s.id_length = 2;
  s.title = "Gate";
  s.title_length = 4;
  s.end_date = now_ms() + 60000;
  s.group = "gate-12";
  s.group_length = 7;
  CHECK_STATUS(cd_loop_start_countdown(loop, &s, NULL, 0, NULL), CD_OK);
  cd_start bad = s;
  bad.id = "g2";
  bad.group = "gate 12";
  CHECK_STATUS(cd_loop_start_countdown(loop, &bad, NULL, 0, NULL), CD_ERR_INVALID_PAYLOAD);
  CHECK(contains(cd_last_error_message(), "group must be 1"));
  char reply[2048];
  size_t n = 0;
  CHECK_STATUS(cd_loop_request(loop, LIT("{\"op\":\"list\"}"), reply, sizeof reply, &n), CD_OK);
  CHECK(contains(reply, "\"group\":\"gate-12\"") && !contains(reply, "\"g2\""));
  CHECK_STATUS(cd_loop_destroy(loop), CD_OK);
}

/* Every queued request is answered exactly once, with CD_ERR_SHUTDOWN if destroy came first. */
typedef struct counts {
  pthread_mutex_t lock;
  int ok, shutdown, other;
} counts;

static void count_reply(void *context, cd_status status, const char *reply, size_t length) {
  counts *c = context;
  pthread_mutex_lock(&c->lock);
  if (status == CD_OK) c->ok++;
  else if (status == CD_ERR_SHUTDOWN && length > 0 && strstr(reply, "\"code\":\"shutdown\"")) c->shutdown++;
  else c->other++;
  pthread_mutex_unlock(&c->lock);
}

static void test_async_shutdown(void) {
  counts c = {PTHREAD_MUTEX_INITIALIZER, 0, 0, 0};
  cd_loop *loop = NULL;
  CHECK_STATUS(cd_loop_create(NULL, NULL, NULL, &loop), CD_OK);
  for (int k = 0; k < 2000; k++)
    CHECK_STATUS(cd_loop_request_async(loop, LIT("{\"op\":\"ping\"}"), count_reply, &c), CD_OK);
  CHECK_STATUS(cd_loop_destroy(loop), CD_OK);
  CHECK(c.ok + c.shutdown == 2000 && c.other == 0);
  printf("test_api: 2000 requests queued before destroy: %d answered, %d shutdown\n", c.ok,
         c.shutdown);
}

static void test_null_loop(void) {
  char buf[64];
  size_t n;
  cd_start s = {0};
  cd_update u = {0};
  CHECK_STATUS(cd_loop_destroy(NULL), CD_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(cd_loop_request(NULL, LIT("{}"), buf, sizeof buf, &n), CD_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(cd_loop_request_async(NULL, LIT("{}"), NULL, NULL), CD_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(cd_loop_start_countdown(NULL, &s, buf, sizeof buf, &n), CD_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(cd_loop_start_elapsed(NULL, &s, buf, sizeof buf, &n), CD_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(cd_loop_update(NULL, LIT("a"), &u), CD_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(cd_loop_pause(NULL, LIT("a")), CD_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(cd_loop_resume(NULL, LIT("a")), CD_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(cd_loop_end(NULL, LIT("a"), CD_DISMISS_DEFAULT, 0), CD_ERR_INVALID_ARGUMENT);
}

static void test_loop(void) {
  static sink s;
  memset(&s, 0, sizeof s);
  pthread_mutex_init(&s.lock, NULL);
  cd_loop *loop = NULL;
  cd_loop_options o = cd_loop_options_default();
  CHECK_STATUS(cd_loop_create(&o, on_event, &s, &loop), CD_OK);

  /* Typed starts. */
  int64_t t0 = now_ms();
  char id[64];
  size_t n = 0;
  cd_start gate = {0};
  gate.id = "gate";
  gate.id_length = 4;
  gate.title = "Gate B12";
  gate.title_length = 8;
  gate.subtitle = "Boarding";
  gate.subtitle_length = 8;
  gate.color = "#1E90FF";
  gate.color_length = 7;
  gate.end_date = t0 + 3600 * 1000;
  CHECK_STATUS(cd_loop_start_countdown(loop, &gate, id, sizeof id, &n), CD_OK);
  CHECK(n == 4 && strcmp(id, "gate") == 0);
  CHECK_STATUS(cd_loop_start_countdown(loop, &gate, id, sizeof id, &n), CD_ERR_DUPLICATE_ID);
  CHECK(contains(cd_last_error_message(), "gate"));

  cd_start dose = {0};
  dose.title = "Dose";
  dose.title_length = 4;
  CHECK_STATUS(cd_loop_start_elapsed(loop, &dose, id, sizeof id, &n), CD_OK);
  CHECK(n == 36 && strlen(id) == 36); /* a made UUID */
  char made[64];
  strcpy(made, id);
  /* The id does not fit: the activity still started, the need is reported. */
  CHECK_STATUS(cd_loop_start_elapsed(loop, &dose, id, 10, &n), CD_ERR_BUFFER_TOO_SMALL);
  CHECK(n == 36);
  /* No id wanted. */
  CHECK_STATUS(cd_loop_start_elapsed(loop, &dose, NULL, 0, NULL), CD_OK);

  /* Bad starts: nothing starts. */
  cd_start bad = gate;
  bad.id = "g2";
  bad.id_length = 2;
  bad.end_date = 0;
  CHECK_STATUS(cd_loop_start_countdown(loop, &bad, NULL, 0, NULL), CD_ERR_INVALID_PAYLOAD);
  CHECK(contains(cd_last_error_message(), "endDate"));
  bad.end_date = t0 / 1000 + 60; /* seconds, not milliseconds */
  CHECK_STATUS(cd_loop_start_countdown(loop, &bad, NULL, 0, NULL), CD_ERR_INVALID_DATE);
  CHECK(contains(cd_last_error_message(), "seconds"));
  bad = gate;
  bad.id = "g3";
  bad.id_length = 2;
  bad.title = "Gate \xff\xfe";
  bad.title_length = 7;
  CHECK_STATUS(cd_loop_start_countdown(loop, &bad, NULL, 0, NULL), CD_ERR_INVALID_PAYLOAD);
  CHECK(contains(cd_last_error_message(), "title is not valid UTF-8 at byte 6"));
  bad = gate;
  bad.id = "\xc3";
  bad.id_length = 1;
  CHECK_STATUS(cd_loop_start_countdown(loop, &bad, NULL, 0, NULL), CD_ERR_INVALID_PAYLOAD);
  CHECK(contains(cd_last_error_message(), "id is not valid UTF-8"));
  bad = gate;
  bad.id = "g4";
  bad.id_length = 2;
  bad.color = "blue";
  bad.color_length = 4;
  CHECK_STATUS(cd_loop_start_countdown(loop, &bad, NULL, 0, NULL), CD_ERR_INVALID_PAYLOAD);
  CHECK(contains(cd_last_error_message(), "color"));
  bad = gate;
  bad.id = "g5";
  bad.id_length = 2;
  bad.title = NULL;
  bad.title_length = 0;
  CHECK_STATUS(cd_loop_start_countdown(loop, &bad, NULL, 0, NULL), CD_ERR_INVALID_PAYLOAD);
  bad = gate;
  bad.id = "g6";
  bad.id_length = 2;
  bad.title = NULL;
  bad.title_length = 3;
  CHECK_STATUS(cd_loop_start_countdown(loop, &bad, NULL, 0, NULL), CD_ERR_INVALID_PAYLOAD);
  CHECK_STATUS(cd_loop_start_countdown(loop, NULL, NULL, 0, NULL), CD_ERR_INVALID_ARGUMENT);
  /* A length that is no length (a negative int cast to size_t). */
  bad = gate;
  bad.id = "g7";
  bad.id_length = 2;
  bad.title_length = (size_t)-1;
  CHECK_STATUS(cd_loop_start_countdown(loop, &bad, NULL, 0, NULL), CD_ERR_INVALID_PAYLOAD);
  CHECK(contains(cd_last_error_message(), "title_length"));
  CHECK_STATUS(cd_loop_pause(loop, "gate", (size_t)-4), CD_ERR_INVALID_PAYLOAD);
  dose.end_date = t0 + 1000;
  CHECK_STATUS(cd_loop_start_elapsed(loop, &dose, NULL, 0, NULL), CD_ERR_INVALID_PAYLOAD);

  /* JSON requests. */
  char reply[4096];
  CHECK_STATUS(cd_loop_request(loop, LIT("{\"op\":\"get\",\"id\":\"gate\",\"rid\":7}\n"), reply,
                               sizeof reply, &n),
               CD_OK);
  CHECK(n == strlen(reply) && contains(reply, "{\"rid\":7,\"ok\":true,\"at\":"));
  CHECK(contains(reply, "\"title\":\"Gate B12\"") && contains(reply, "\"phase\":\"active\""));
  CHECK(reply[n - 1] == '}');
  CHECK_STATUS(cd_loop_request(loop, LIT("{\"op\":\"get\",\"id\":\"nope\"}"), reply, sizeof reply, &n),
               CD_ERR_NOT_FOUND);
  CHECK(contains(reply, "\"ok\":false") && contains(reply, "\"code\":\"notFound\""));
  CHECK(contains(cd_last_error_message(), "nope"));
  CHECK_STATUS(cd_loop_request(loop, LIT("{\"op\":"), reply, sizeof reply, &n),
               CD_ERR_INVALID_PAYLOAD);
  CHECK(contains(reply, "invalidPayload"));
  CHECK_STATUS(cd_loop_request(loop, LIT("{\"op\":\"get\",\"id\":\"\xff\"}"), reply, sizeof reply, &n),
               CD_ERR_INVALID_PAYLOAD);
  CHECK(contains(reply, "invalid UTF-8 at byte 19"));
  CHECK_STATUS(cd_loop_request(loop, LIT("{\"op\":\"subscribe\"}"), reply, sizeof reply, &n),
               CD_ERR_INVALID_PAYLOAD);
  CHECK(contains(reply, "callback"));
  CHECK_STATUS(cd_loop_request(loop, LIT("{\"op\":\"ping\",\"at\":1795248000000}"), reply,
                               sizeof reply, &n),
               CD_ERR_INVALID_PAYLOAD);
  CHECK_STATUS(cd_loop_request(loop, LIT("{\"op\":\"list\"}"), reply, sizeof reply, &n), CD_OK);
  CHECK(contains(reply, "\"activities\":[") && contains(reply, made));
  /* liveActivity (docs/pushes.md) in a JSON start: kept and returned; a bad one refused by name. */
  CHECK_STATUS(cd_loop_request(loop,
                               LIT("{\"op\":\"start\",\"id\":\"phone\",\"kind\":\"elapsed\",\"title\":\"Walk\","
                                   "\"liveActivity\":{\"pushTokens\":{\"A0B1\":true},\"keys\":{\"startDate\":\"startedAt\"}}}"),
                               reply, sizeof reply, &n),
               CD_OK);
  CHECK_STATUS(cd_loop_request(loop, LIT("{\"op\":\"get\",\"id\":\"phone\"}"), reply, sizeof reply, &n),
               CD_OK);
  CHECK(contains(reply, "\"liveActivity\":{") && contains(reply, "\"pushTokens\":{\"a0b1\":true}"));
  CHECK(contains(reply, "\"keys\":{\"startDate\":\"startedAt\"}"));
  CHECK_STATUS(cd_loop_request(loop,
                               LIT("{\"op\":\"update\",\"id\":\"phone\",\"title\":\"Run\","
                                   "\"liveActivity\":{\"pushTokens\":{\"xyz\":true}}}"),
                               reply, sizeof reply, &n),
               CD_ERR_INVALID_PAYLOAD);
  CHECK(contains(cd_last_error_message(), "liveActivity.pushTokens"));
  CHECK_STATUS(cd_loop_request(loop, LIT("{\"op\":\"get\",\"id\":\"phone\"}"), reply, sizeof reply, &n),
               CD_OK);
  CHECK(contains(reply, "\"title\":\"Walk\""));
  CHECK_STATUS(cd_loop_request(loop, LIT("{\"op\":\"end\",\"id\":\"phone\",\"dismissal\":\"immediate\"}"),
                               reply, sizeof reply, &n),
               CD_OK);
  /* A reply that does not fit: the need is reported. */
  CHECK_STATUS(cd_loop_request(loop, LIT("{\"op\":\"get\",\"id\":\"gate\"}"), reply, 10, &n),
               CD_ERR_BUFFER_TOO_SMALL);
  CHECK(n > 10);
  CHECK_STATUS(cd_loop_request(loop, LIT("{\"op\":\"ping\"}"), reply, sizeof reply, NULL),
               CD_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(cd_loop_request(loop, NULL, 5, reply, sizeof reply, &n), CD_ERR_INVALID_ARGUMENT);
  /* A line over 64 KiB. */
  size_t big = 70000;
  char *line = malloc(big);
  memset(line, ' ', big);
  line[0] = '{';
  line[big - 1] = '}';
  CHECK_STATUS(cd_loop_request(loop, line, big, reply, sizeof reply, &n), CD_ERR_LINE_TOO_LONG);
  CHECK(contains(reply, "lineTooLong"));
  CHECK_STATUS(cd_loop_request(loop, line, (size_t)-1, reply, sizeof reply, &n), CD_ERR_LINE_TOO_LONG);
  free(line);
  /* A JSON start with content the typed call does not have. */
  char start[512];
  int len = snprintf(start, sizeof start,
                     "{\"op\":\"start\",\"id\":\"park\",\"kind\":\"countdown\",\"endDate\":%lld,"
                     "\"title\":\"Parking\",\"fields\":{\"bay\":\"C4\"},\"milestones\":"
                     "[{\"name\":\"half\",\"atMs\":1000}]}",
                     (long long)(t0 + 3000));
  CHECK_STATUS(cd_loop_request(loop, start, (size_t)len, reply, sizeof reply, &n), CD_OK);
  CHECK(contains(reply, "\"id\":\"park\""));

  /* Asynchronous requests. */
  waiter w;
  memset(&w, 0, sizeof w);
  pthread_mutex_init(&w.lock, NULL);
  pthread_cond_init(&w.cond, NULL);
  CHECK_STATUS(cd_loop_request_async(loop, LIT("{\"op\":\"get\",\"id\":\"park\",\"rid\":\"r1\"}"),
                                     on_reply, &w),
               CD_OK);
  wait_reply(&w);
  CHECK(w.status == CD_OK && contains(w.reply, "\"rid\":\"r1\",\"ok\":true"));
  CHECK(contains(w.reply, "\"fields\":{\"bay\":\"C4\"}"));
  w.done = 0;
  CHECK_STATUS(cd_loop_request_async(loop, LIT("[1]"), on_reply, &w), CD_OK);
  wait_reply(&w);
  CHECK(w.status == CD_ERR_INVALID_PAYLOAD && contains(w.reply, "must be a JSON object"));
  CHECK_STATUS(cd_loop_request_async(loop, LIT("{\"op\":\"ping\"}"), NULL, NULL), CD_OK);
  CHECK_STATUS(cd_loop_request_async(loop, NULL, 3, NULL, NULL), CD_ERR_INVALID_ARGUMENT);

  /* Update, pause, resume. */
  cd_update u = {0};
  u.title = "Gate B14";
  u.title_length = 8;
  u.end_date = t0 + 7200 * 1000;
  CHECK_STATUS(cd_loop_update(loop, LIT("gate"), &u), CD_OK);
  CHECK_STATUS(cd_loop_request(loop, LIT("{\"op\":\"get\",\"id\":\"gate\"}"), reply, sizeof reply, &n),
               CD_OK);
  CHECK(contains(reply, "Gate B14"));
  CHECK_STATUS(cd_loop_update(loop, LIT("nope"), &u), CD_ERR_NOT_FOUND);
  CHECK_STATUS(cd_loop_update(loop, LIT("gate"), NULL), CD_ERR_INVALID_ARGUMENT);
  u.title = "\x80";
  u.title_length = 1;
  CHECK_STATUS(cd_loop_update(loop, LIT("gate"), &u), CD_ERR_INVALID_PAYLOAD);
  u.title = NULL;
  u.stale_date = 12;
  CHECK_STATUS(cd_loop_update(loop, LIT("gate"), &u), CD_ERR_INVALID_DATE);
  CHECK_STATUS(cd_loop_pause(loop, LIT("gate")), CD_OK);
  CHECK_STATUS(cd_loop_request(loop, LIT("{\"op\":\"get\",\"id\":\"gate\"}"), reply, sizeof reply, &n),
               CD_OK);
  CHECK(contains(reply, "\"phase\":\"paused\""));
  CHECK_STATUS(cd_loop_resume(loop, LIT("gate")), CD_OK);
  CHECK_STATUS(cd_loop_pause(loop, LIT("nope")), CD_ERR_NOT_FOUND);
  CHECK_STATUS(cd_loop_resume(loop, LIT("nope")), CD_ERR_NOT_FOUND);
  CHECK_STATUS(cd_loop_pause(loop, "\xe2\x82", 2), CD_ERR_INVALID_PAYLOAD);

  /* Let it tick; the callback's blocking calls from the loop thread are refused. */
  pthread_mutex_lock(&s.lock);
  s.loop = loop;
  pthread_mutex_unlock(&s.lock);
  sleep(3);

  /* End. */
  CHECK_STATUS(cd_loop_end(loop, LIT("gate"), CD_DISMISS_AFTER, 5), CD_ERR_INVALID_DATE);
  CHECK_STATUS(cd_loop_end(loop, LIT("gate"), (cd_dismissal)7, 0), CD_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(cd_loop_end(loop, LIT("gate"), CD_DISMISS_IMMEDIATE, 0), CD_OK);
  CHECK_STATUS(cd_loop_end(loop, LIT("gate"), CD_DISMISS_DEFAULT, 0), CD_ERR_NOT_FOUND);
  CHECK_STATUS(cd_loop_end(loop, LIT("dose"), CD_DISMISS_DEFAULT, 0), CD_ERR_NOT_FOUND);
  usleep(100000);

  CHECK_STATUS(cd_loop_destroy(loop), CD_OK);

  /* What the callback saw. */
  CHECK(s.tried_from_loop);
  CHECK(s.destroy_from_loop == CD_ERR_WRONG_THREAD);
  CHECK(s.request_from_loop == CD_ERR_WRONG_THREAD);
  CHECK(s.pause_from_loop == CD_ERR_WRONG_THREAD);
  CHECK(s.async_from_loop == CD_OK);
  int gate_ticks = 0, park_ticks = 0, early = 0, started = 0, ended = 0, milestones = 0;
  int dismissed = 0, text_ok = 1, paused = 0, resumed = 0, updated = 0, made_ticks = 0;
  for (int i = 0; i < s.count; i++) {
    recorded *r = &s.events[i];
    if (r->received < r->at) early++;
    if (r->kind == CD_EVENT_STARTED) started++;
    if (r->kind == CD_EVENT_PAUSED) paused++;
    if (r->kind == CD_EVENT_RESUMED) resumed++;
    if (r->kind == CD_EVENT_UPDATED) updated++;
    if (r->kind == CD_EVENT_TICK && strcmp(r->id, "gate") == 0) gate_ticks++;
    if (r->kind == CD_EVENT_TICK && strcmp(r->id, "park") == 0) park_ticks++;
    /* A 36-byte id (not a small string) arrives whole. */
    if (r->kind == CD_EVENT_TICK && strcmp(r->id, made) == 0) made_ticks++;
    if (r->kind == CD_EVENT_MILESTONE && strcmp(r->milestone, "half") == 0) milestones++;
    if (r->kind == CD_EVENT_ENDED && strcmp(r->id, "gate") == 0 && r->reason == CD_END_REQUESTED)
      ended++;
    if (r->kind == CD_EVENT_DISMISSED && strcmp(r->id, "gate") == 0) dismissed++;
    if (r->kind != CD_EVENT_ENDED && r->reason != CD_END_NONE) text_ok = 0;
    /* The text is the value in the loop's style. */
    char want[CD_FORMAT_MAX + 1];
    size_t wn;
    cd_format_options f = cd_format_options_default(CD_STYLE_TIMER);
    cd_format(&f, r->value * 1000, CD_ROUND_DOWN, want, sizeof want, &wn);
    if (strcmp(want, r->text) != 0) {
      fprintf(stderr, "event text '%s' for value %lld, wanted '%s'\n", r->text,
              (long long)r->value, want);
      text_ok = 0;
    }
  }
  CHECK(started == 6); /* gate, three doses, park, phone: none of the refused ones */
  CHECK(gate_ticks >= 2 && park_ticks >= 2 && made_ticks >= 2);
  CHECK(milestones == 1);
  CHECK(ended == 1 && dismissed == 1);
  CHECK(paused == 1 && resumed == 1 && updated == 1);
  CHECK(early == 0);
  CHECK(text_ok);
  pthread_mutex_destroy(&s.lock);
  pthread_mutex_destroy(&w.lock);
  pthread_cond_destroy(&w.cond);
}

static void test_last_error_per_thread(void) {
  char buf[8];
  size_t n;
  cd_format_options o = cd_format_options_default((cd_style)55);
  CHECK_STATUS(cd_format(&o, 0, CD_ROUND_UP, buf, sizeof buf, &n), CD_ERR_INVALID_ARGUMENT);
  CHECK(contains(cd_last_error_message(), "style 55"));
  /* A success leaves the message as it was. */
  o = cd_format_options_default(CD_STYLE_TIMER);
  CHECK_STATUS(cd_format(&o, 0, CD_ROUND_UP, buf, sizeof buf, &n), CD_OK);
  CHECK(contains(cd_last_error_message(), "style 55"));
}

static void *fresh_thread(void *unused) {
  (void)unused;
  /* A thread that never failed has an empty message. */
  return (void *)(intptr_t)(strcmp(cd_last_error_message(), "") == 0);
}

int main(void) {
  test_status();
  CHECK(strcmp(cd_last_error_message(), "") == 0);
  test_format();
  test_last_error_per_thread();
  pthread_t t;
  void *fresh = NULL;
  pthread_create(&t, NULL, fresh_thread, NULL);
  pthread_join(t, &fresh);
  CHECK(fresh == (void *)1);
  test_create_errors();
  test_null_loop();
  test_no_text();
  test_overtime();
  test_group();
  test_async_shutdown();
  test_loop();
  if (failures) {
    fprintf(stderr, "test_api: %d checks failed\n", failures);
    return 1;
  }
  printf("test_api: all checks passed\n");
  return 0;
}
