// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

// kiosk.cpp: the Countdown loop in a small RAII class (C++17). The loop is destroyed (its
// thread joined) when the object goes out of scope; errors become exceptions on the calling
// thread; events reach a std::function on the loop thread.
//
//   c++ -std=c++17 kiosk.cpp $(pkg-config --cflags --libs countdown) -o kiosk-cpp
#include <countdown.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>

namespace countdown {

struct Error : std::runtime_error {
  cd_status status;
  Error(cd_status s, const std::string &what)
      : std::runtime_error(what + ": " + cd_status_name(s) + ": " + cd_last_error_message()),
        status(s) {}
};

inline void check(cd_status s, const char *what) {
  if (s != CD_OK) throw Error(s, what);
}

struct Event {
  int64_t at;
  cd_event_kind kind;
  std::string_view id, text, milestone;  // valid during the callback only
  int64_t value;
};

class Loop {
 public:
  using Handler = std::function<void(const Event &)>;

  explicit Loop(Handler handler, cd_loop_options options = cd_loop_options_default())
      : handler_(std::move(handler)) {
    check(cd_loop_create(&options, &Loop::trampoline, this, &loop_), "cd_loop_create");
  }
  ~Loop() {
    if (loop_) cd_loop_destroy(loop_);  // joins the loop thread
  }
  Loop(const Loop &) = delete;
  Loop &operator=(const Loop &) = delete;

  std::string startCountdown(std::string_view id, std::string_view title, int64_t endDate) {
    cd_start s{};
    s.id = id.data();
    s.id_length = id.size();
    s.title = title.data();
    s.title_length = title.size();
    s.end_date = endDate;
    return start(s, cd_loop_start_countdown);
  }

  std::string startElapsed(std::string_view title) {
    cd_start s{};
    s.title = title.data();
    s.title_length = title.size();
    return start(s, cd_loop_start_elapsed);
  }

  void pause(std::string_view id) { check(cd_loop_pause(loop_, id.data(), id.size()), "pause"); }
  void resume(std::string_view id) { check(cd_loop_resume(loop_, id.data(), id.size()), "resume"); }
  void end(std::string_view id) {
    check(cd_loop_end(loop_, id.data(), id.size(), CD_DISMISS_IMMEDIATE, 0), "end");
  }

  // One request line of docs/protocol.md; returns the reply JSON (throws on an error reply).
  std::string request(std::string_view line) {
    std::string reply(4096, '\0');
    size_t n = 0;
    cd_status s = cd_loop_request(loop_, line.data(), line.size(), reply.data(), reply.size(), &n);
    if (s == CD_ERR_BUFFER_TOO_SMALL) throw Error(s, "request (use a bigger buffer)");
    reply.resize(n);
    check(s, "request");
    return reply;
  }

 private:
  using StartFn = cd_status (*)(cd_loop *, const cd_start *, char *, size_t, size_t *);
  std::string start(const cd_start &s, StartFn fn) {
    char id[128];
    size_t n = 0;
    check(fn(loop_, &s, id, sizeof id, &n), "start");
    return std::string(id, n);
  }

  static void trampoline(void *context, const cd_event *e) {
    auto *self = static_cast<Loop *>(context);
    Event ev{e->at,
             e->kind,
             {e->id, e->id_length},
             {e->text, e->text_length},
             e->milestone ? std::string_view(e->milestone, e->milestone_length)
                          : std::string_view(),
             e->value};
    self->handler_(ev);
  }

  Handler handler_;
  cd_loop *loop_ = nullptr;
};

}  // namespace countdown

int main(int argc, char **argv) {
  int seconds = argc > 1 ? std::atoi(argv[1]) : 3;
  using namespace std::chrono;
  auto now = duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
  try {
    countdown::Loop loop([](const countdown::Event &e) {
      if (e.kind == CD_EVENT_TICK)
        std::printf("%lld tick %.*s %.*s\n", static_cast<long long>(e.at),
                    static_cast<int>(e.id.size()), e.id.data(), static_cast<int>(e.text.size()),
                    e.text.data());
      std::fflush(stdout);
    });
    loop.startCountdown("auction-17", "Auction 17", now + 90'000);
    auto dose = loop.startElapsed("Dose");
    std::printf("dose id %s\n", dose.c_str());
    std::printf("%s\n", loop.request(R"({"op":"get","id":"auction-17"})").c_str());
    try {
      loop.pause("no-such-activity");
    } catch (const countdown::Error &e) {
      std::printf("as expected: %s\n", e.what());
    }
    std::this_thread::sleep_for(seconds * 1s);
    loop.end("auction-17");
  } catch (const std::exception &e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
