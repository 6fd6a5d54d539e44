// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

/*
 * kiosk.c: three activities on a Countdown loop, from C. A boarding gate counting down, a
 * parking timer, and an elapsed dose timer; their ticks are printed for a few seconds, then
 * the gate is ended and the loop destroyed.
 *
 *   cc kiosk.c $(pkg-config --cflags --libs countdown) -o kiosk && ./kiosk [SECONDS]
 */
#define _DEFAULT_SOURCE
#define _POSIX_C_SOURCE 200809L
#include <countdown.h>

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static const char *kinds[] = {"started", "updated", "tick",   "milestone", "stale",
                              "expired", "paused",  "resumed", "ended",    "dismissed"};

/* Runs on the loop thread, at (never before) each event's instant. Must not block. */
static void on_event(void *context, const cd_event *e) {
  (void)context;
  printf("%lld  %-9s %-8.*s %.*s%s%.*s\n", (long long)e->at, kinds[e->kind], (int)e->id_length,
         e->id, (int)e->text_length, e->text, e->milestone ? "  milestone " : "",
         (int)e->milestone_length, e->milestone ? e->milestone : "");
  fflush(stdout);
}

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int fail(const char *what, cd_status status) {
  fprintf(stderr, "%s: %s: %s\n", what, cd_status_name(status), cd_last_error_message());
  return 1;
}

int main(int argc, char **argv) {
  int seconds = argc > 1 ? atoi(argv[1]) : 4;
  cd_loop_options options = cd_loop_options_default();
  options.format = cd_format_options_default(CD_STYLE_POSITIONAL);
  cd_loop *loop = NULL;
  cd_status st = cd_loop_create(&options, on_event, NULL, &loop);
  if (st != CD_OK) return fail("cd_loop_create", st);

  int64_t now = now_ms();
  cd_start gate = {.id = "gate-b12", .id_length = 8, .title = "Gate B12", .title_length = 8,
                   .subtitle = "Boarding", .subtitle_length = 8, .end_date = now + 15 * 60000};
  if ((st = cd_loop_start_countdown(loop, &gate, NULL, 0, NULL)) != CD_OK)
    return fail("gate", st);

  cd_start parking = {.id = "parking-c4", .id_length = 10, .title = "Parking C4",
                      .title_length = 10, .color = "#E4572E", .color_length = 7,
                      .end_date = now + 2 * 3600000};
  if ((st = cd_loop_start_countdown(loop, &parking, NULL, 0, NULL)) != CD_OK)
    return fail("parking", st);

  /* The dose timer, as a JSON request: milestones and fields have no typed call. */
  char line[256], reply[1024];
  size_t n = 0;
  int len = snprintf(line, sizeof line,
                     "{\"op\":\"start\",\"id\":\"dose\",\"kind\":\"elapsed\",\"title\":\"Dose\","
                     "\"fields\":{\"drug\":\"amoxicillin\"},\"milestones\":"
                     "[{\"name\":\"2 s in\",\"atMs\":2000}]}");
  if ((st = cd_loop_request(loop, line, (size_t)len, reply, sizeof reply, &n)) != CD_OK)
    return fail("dose", st);
  printf("reply: %s\n", reply);

  sleep((unsigned)seconds);
  if ((st = cd_loop_end(loop, "gate-b12", 8, CD_DISMISS_IMMEDIATE, 0)) != CD_OK)
    return fail("end", st);
  usleep(100000);
  if ((st = cd_loop_destroy(loop)) != CD_OK) return fail("cd_loop_destroy", st);
  return 0;
}
