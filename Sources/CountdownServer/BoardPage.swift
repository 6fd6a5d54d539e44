// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import Countdown

/// The kiosk board (`GET /`, docs/http.md): one self-contained page, built into the binary, with
/// no external assets (kiosks are often offline).
///
/// The page reads `/v1/time` for the server's clock, `/v1/events` for a snapshot and then the
/// lifecycle events, and redraws each tile at the instant its displayed second changes (a
/// timeout per boundary, not a drifting interval), computing the value from the activity
/// objects and the server's clock, so it shows the same second as the server without a tick
/// from it. Styles are the server's `--style`. Without `controls` (a screen facing the public)
/// the tiles have no buttons and the page mentions no command.
enum BoardPage {
  /// The page, with the server's style and whether it has buttons written into it.
  static func html(style: TimerStyle, controls: Bool = true) -> [UInt8] {
    Array(
      template.replacing("__STYLE__", with: config(style))
        .replacing("__CONTROLS__", with: controls ? "true" : "false")
        .replacing(
          "__EMPTY__",
          with: controls ? "No activities. Start one with POST /v1/activities." : "No activities."
        ).utf8)
  }

  /// The style as the page's formatter takes it.
  static func config(_ style: TimerStyle) -> String {
    switch style {
    case .compact: return #"{"name":"compact"}"#
    case .remaining: return #"{"name":"remaining"}"#
    case .positional: return #"{"name":"positional"}"#
    case .minuteSecond: return #"{"name":"minute-second"}"#
    case .timer: return #"{"name":"timer"}"#
    case .timerWithoutHours: return #"{"name":"timer","noHours":true}"#
    case .units(let n): return #"{"name":"units","maxUnits":\#(n)}"#
    }
  }

  static let template = #"""
    <!doctype html>
    <html lang="en">
    <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>Countdown</title>
    <style>
    :root { color-scheme: dark; --bg: #0b0d12; --tile: #161a22; --text: #f2f4f8; --dim: #9aa3b2; --accent: #4f8cff; }
    * { box-sizing: border-box; }
    html, body { margin: 0; background: var(--bg); color: var(--text);
      font-family: system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; }
    header { display: flex; align-items: baseline; justify-content: space-between; padding: 14px 24px 6px; }
    header h1 { margin: 0; font-size: 22px; font-weight: 600; letter-spacing: .02em; }
    #status { font-size: 14px; color: var(--dim); }
    #status.down { color: #ff8a65; }
    #board { display: grid; grid-template-columns: repeat(auto-fill, minmax(400px, 1fr)); gap: 16px; padding: 12px 24px 24px; }
    #empty { padding: 48px 24px; color: var(--dim); font-size: 20px; }
    .tile { position: relative; background: var(--tile); border-radius: 14px; padding: 16px 20px 14px;
      border-left: 8px solid var(--c, var(--accent)); display: flex; flex-direction: column; gap: 6px; min-width: 0; }
    .tile.ended { opacity: .62; }
    .tile.pending { outline: 2px dashed var(--dim); }
    .top { display: flex; justify-content: space-between; gap: 10px; align-items: flex-start; }
    .title { font-size: 24px; font-weight: 650; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
    .subtitle { font-size: 16px; color: var(--dim); min-height: 1.2em; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
    .badges { display: flex; gap: 6px; flex-shrink: 0; }
    .badge { font-size: 12px; font-weight: 700; text-transform: uppercase; letter-spacing: .06em;
      padding: 3px 8px; border-radius: 999px; background: #2a3040; color: var(--text); }
    .badge.paused { background: #8a6d00; } .badge.stale { background: #6b3fa0; } .badge.ended { background: #7a2d2d; }
    .badge.overtime { background: #c62828; }
    .tile.overtime { border-left-color: #ff5252; }
    .tile.overtime .timer { color: #ff5252; }
    .timer { font-size: 64px; line-height: 1.05; font-weight: 700; font-variant-numeric: tabular-nums;
      letter-spacing: .01em; white-space: nowrap; overflow: hidden; }
    .bar { height: 8px; border-radius: 4px; background: #2a3040; overflow: hidden; }
    .bar > div { height: 100%; width: 0; background: var(--c, var(--accent)); }
    .bar.none { visibility: hidden; }
    .milestone { font-size: 15px; color: var(--dim); min-height: 1.2em; }
    .actions { display: flex; gap: 8px; margin-top: 4px; }
    button { font: inherit; font-size: 16px; font-weight: 600; padding: 8px 16px; border-radius: 9px; border: 0;
      background: #2f3749; color: var(--text); cursor: pointer; }
    button:disabled { opacity: .45; cursor: default; }
    button.end { background: #5a2a2a; }
    .error { font-size: 14px; color: #ffb4a8; min-height: 0; }
    /* One to four tiles fill the screen (a gate's, a stage's sign): the digits are sized to
       their tile by fit() below, the title and subtitle above them, progress below. */
    html, body { height: 100%; }
    body { display: flex; flex-direction: column; }
    #board.few, #board.one { flex: 1; min-height: 0; grid-auto-rows: 1fr; }
    #board.one { grid-template-columns: 1fr; }
    #board.few { grid-template-columns: repeat(2, minmax(0, 1fr)); }
    #board.one .tile, #board.few .tile { justify-content: center; overflow: hidden; }
    #board.one .timer, #board.few .timer { text-align: center; line-height: 1; }
    #board.one .title { font-size: clamp(20px, 6vh, 72px); }
    #board.one .subtitle { font-size: clamp(14px, 3.6vh, 40px); }
    #board.one .milestone { font-size: clamp(12px, 2.6vh, 28px); }
    #board.one .bar { height: clamp(8px, 2vh, 22px); border-radius: 11px; }
    #board.few .title { font-size: clamp(18px, 4vh, 44px); }
    #board.few .subtitle { font-size: clamp(13px, 2.6vh, 28px); }
    @media (max-width: 900px), (max-height: 560px) {
      header { padding: 6px 10px 2px; } header h1 { font-size: 16px; } #status { font-size: 12px; }
      #board { grid-template-columns: repeat(auto-fill, minmax(250px, 1fr)); gap: 8px; padding: 6px 10px 10px; }
      .tile { padding: 8px 10px 8px; border-radius: 10px; border-left-width: 6px; gap: 3px; }
      .title { font-size: 17px; } .subtitle { font-size: 13px; } .timer { font-size: 40px; }
      .milestone { font-size: 12px; } .bar { height: 6px; }
      button { font-size: 13px; padding: 5px 10px; } .badge { font-size: 10px; padding: 2px 6px; }
    }
    </style>
    </head>
    <body>
    <header><h1>Countdown</h1><span id="status">connecting…</span></header>
    <div id="empty" hidden>__EMPTY__</div>
    <main id="board"></main>
    <script>
    "use strict";
    (function () {
      const STYLE = __STYLE__;
      const CONTROLS = __CONTROLS__;
      const params = new URLSearchParams(location.search);
      const token = params.get("token");
      // ?id=ID (or ?ids=a,b): this activity alone, as a gate's screen shows its gate.
      const only = params.get("ids") || params.get("id");
      // ?group=NAME: that group's activities alone (a key with groups sees only its own).
      const group = params.get("group");
      const headers = token ? { "Authorization": "Bearer " + token } : {};
      const board = document.getElementById("board");
      const statusEl = document.getElementById("status");
      const emptyEl = document.getElementById("empty");
      const acts = new Map();   // id → activity object (as the server last gave it)
      const tiles = new Map();  // id → tile elements
      let offset = 0;           // server clock − Date.now(), in ms
      let timer = null;

      const pad2 = (n) => (n < 10 ? "0" : "") + n;
      // docs/activities.md, "Formatting", the same rules as the server's formatter.
      // A negative value (a countdown in overtime) is "-" and the text of its magnitude.
      function format(s, style) {
        style = style || STYLE;
        if (s < 0) return "-" + format(-s, style);
        s = Math.max(0, Math.floor(s));
        const d = Math.floor(s / 86400), h = Math.floor(s / 3600) % 24, m = Math.floor(s / 60) % 60, sec = s % 60;
        const H = Math.floor(s / 3600), M = Math.floor(s / 60);
        switch (style.name) {
          case "compact": return d > 0 ? d + "d " + h + "h" : H > 0 ? h + "h " + m + "m" : m + "m " + sec + "s";
          case "remaining": return s === 0 ? "Ended" : H > 0 ? H + "h " + m + "m" : M > 0 ? m + "m " + sec + "s" : sec + "s";
          case "positional": return H > 0 ? H + ":" + pad2(m) + ":" + pad2(sec) : pad2(m) + ":" + pad2(sec);
          case "minute-second": return pad2(M) + ":" + pad2(sec);
          case "units": {
            const parts = [[d, "d"], [h, "h"], [m, "m"], [sec, "s"]];
            let i = parts.findIndex((p) => p[0] > 0);
            if (i < 0) return "0s";
            const take = parts.slice(i, i + (style.maxUnits || 2));
            while (take.length > 1 && take[take.length - 1][0] === 0) take.pop();
            return take.map((p) => p[0] + p[1]).join(" ");
          }
          default:
            if (style.noHours) return M + ":" + pad2(sec);
            return H > 0 ? H + ":" + pad2(m) + ":" + pad2(sec) : M + ":" + pad2(sec);
        }
      }

      const serverNow = () => Date.now() + offset;

      // The displayed whole seconds now (docs/activities.md): ceil of the remaining time for a countdown
      // (past its end, -n from n whole seconds after it with overtime, else 0), floor of the elapsed
      // time for an elapsed timer; frozen while paused and once ended.
      function valueAt(a, now) {
        if (a.phase !== "active") return a.value;
        if (a.kind === "countdown") {
          const ms = a.endDate - now;
          if (ms > 0) return Math.ceil(ms / 1000);
          return a.overtime ? -Math.floor(-ms / 1000) || 0 : 0;
        }
        return Math.max(0, Math.floor((now - a.startDate) / 1000));
      }
      // Past the end of a countdown with overtime (running, or paused there); an ended one is ended.
      function inOvertime(a, now) {
        if (!a.overtime || a.kind !== "countdown" || a.phase === "ended") return false;
        return valueAt(a, now) < 0 || (a.phase === "active" && now >= a.endDate);
      }
      // When the displayed second next changes, by the server's clock (null: it does not).
      function nextChange(a, now) {
        if (a.phase !== "active") return null;
        const v = valueAt(a, now);
        if (a.kind === "countdown") {
          if (v > 0) return a.endDate - (v - 1) * 1000;
          return a.overtime ? a.endDate + (1 - v) * 1000 : null;
        }
        return a.startDate + (v + 1) * 1000;
      }
      function progressAt(a, now) {
        if (a.progress === null || a.progress === undefined) return null;
        if (a.phase !== "active") return a.progress;
        if (a.kind === "countdown" && a.startDate !== null && a.endDate > a.startDate)
          return Math.min(1, Math.max(0, (now - a.startDate) / (a.endDate - a.startDate)));
        if (a.kind === "elapsed" && a.goalMs) return Math.min(1, Math.max(0, (now - a.startDate) / a.goalMs));
        return a.progress;
      }
      // Where the tile sorts: active countdowns by their end, then paused countdowns by the
      // end they would have if resumed now, then elapsed timers in start order, ended last.
      function sortKey(a, now) {
        if (a.phase === "ended") return [3, a.endDate || 0];
        if (a.kind === "countdown")
          return a.phase === "active" ? [0, a.endDate] : [1, now + a.value * 1000];
        return [2, a.startDate || 0];
      }

      function remember(a, at) {
        acts.set(a.id, a);
      }

      function el(tag, cls, text) {
        const e = document.createElement(tag);
        if (cls) e.className = cls;
        if (text !== undefined) e.textContent = text;
        return e;
      }

      function tileFor(id) {
        let t = tiles.get(id);
        if (t) return t;
        const root = el("section", "tile");
        root.dataset.id = id;
        const top = el("div", "top");
        const names = el("div");
        names.style.minWidth = "0";
        const title = el("div", "title"), subtitle = el("div", "subtitle");
        names.append(title, subtitle);
        const badges = el("div", "badges");
        top.append(names, badges);
        const timerEl = el("div", "timer");
        const bar = el("div", "bar"), fill = el("div");
        bar.append(fill);
        const milestone = el("div", "milestone");
        root.append(top, timerEl, bar, milestone);
        let toggle = null, end = null, error = null;
        if (CONTROLS) {
          const actions = el("div", "actions");
          toggle = el("button", "toggle", "Pause");
          end = el("button", "end", "End");
          actions.append(toggle, end);
          error = el("div", "error");
          root.append(actions, error);
          toggle.addEventListener("click", () => {
            const a = acts.get(id);
            command(id, a && a.phase === "paused" ? "resume" : "pause");
          });
          end.addEventListener("click", () => command(id, "end"));
        }
        t = { root, title, subtitle, badges, timerEl, bar, fill, milestone, toggle, end, error, text: null };
        tiles.set(id, t);
        return t;
      }

      function render(a, t, now) {
        let content = a.content || {};
        t.title.textContent = content.title || a.id;
        t.subtitle.textContent = content.subtitle || "";
        if (/^#[0-9a-fA-F]{6}([0-9a-fA-F]{2})?$/.test(content.color || "")) t.root.style.setProperty("--c", content.color);
        else t.root.style.removeProperty("--c");
        t.root.classList.toggle("ended", a.phase === "ended");
        t.root.dataset.phase = a.phase;
        t.milestone.textContent = a.milestone ? "● " + a.milestone : "";
        if (t.toggle) {
          t.toggle.textContent = a.phase === "paused" ? "Resume" : "Pause";
          t.toggle.disabled = a.phase === "ended" || t.root.classList.contains("pending");
          t.end.disabled = a.phase === "ended" || t.root.classList.contains("pending");
        }
        tick(a, t, now);
      }

      // Badges follow the clock too: a countdown with overtime gets its own at its end.
      function badges(a, t, now) {
        const over = inOvertime(a, now);
        t.root.classList.toggle("overtime", over);
        const list = [];
        if (over) list.push("overtime");
        if (a.phase === "paused") list.push("paused");
        if (a.stale) list.push("stale");
        if (a.phase === "ended") list.push("ended");
        const key = list.join(",");
        if (t.badges.dataset.key !== key) {
          t.badges.dataset.key = key;
          t.badges.replaceChildren(...list.map((b) => el("span", "badge " + b, b)));
        }
      }

      function tick(a, t, now) {
        badges(a, t, now);
        const text = format(valueAt(a, now));
        if (t.text !== text) {
          t.timerEl.textContent = text;
          // A text of another length ("10:00" to "9:59") is fitted again.
          if (!t.text || t.text.length !== text.length) t.fitted = false;
          t.text = text;
        }
        if (!t.fitted) fit(t);
        const p = progressAt(a, now);
        t.bar.classList.toggle("none", p === null);
        if (p !== null) t.fill.style.width = (p * 100).toFixed(2) + "%";
      }

      function layout() {
        const now = serverNow();
        const order = [...acts.values()].sort((x, y) => {
          const a = sortKey(x, now), b = sortKey(y, now);
          return a[0] - b[0] || a[1] - b[1] || (x.id < y.id ? -1 : 1);
        });
        for (const [id, t] of tiles) if (!acts.has(id)) { t.root.remove(); tiles.delete(id); }
        order.forEach((a, i) => {
          const t = tileFor(a.id);
          render(a, t, now);
          if (board.children[i] !== t.root) board.insertBefore(t.root, board.children[i] || null);
        });
        emptyEl.hidden = acts.size > 0;
        const mode = acts.size === 1 ? "one" : acts.size >= 2 && acts.size <= 4 ? "few" : "";
        if (board.dataset.mode !== mode) {
          board.classList.toggle("one", mode === "one");
          board.classList.toggle("few", mode === "few");
          board.dataset.mode = mode;
          for (const t of tiles.values()) fit(t);
        }
        schedule(now);
      }

      // With one to four tiles, the digits as large as their tile allows: as wide as 94% of
      // it, and at most half its height (the title, subtitle and progress keep the rest).
      function fit(t) {
        t.fitted = true;
        const el = t.timerEl;
        if (!board.dataset.mode) { el.style.fontSize = ""; return; }
        el.style.fontSize = "100px";
        // The text's own width (the element is as wide as its tile).
        const range = document.createRange();
        range.selectNodeContents(el);
        const natural = range.getBoundingClientRect().width || 1;
        const width = t.root.clientWidth * 0.94 - 28;
        const height = t.root.clientHeight * (board.dataset.mode === "one" ? 0.5 : 0.42);
        el.style.fontSize = Math.max(32, Math.min(100 * width / natural, height)).toFixed(1) + "px";
      }
      window.addEventListener("resize", () => { for (const t of tiles.values()) fit(t); });

      // One timeout, for the soonest second boundary of any tile (by the server's clock) after
      // `now`, the instant the tiles were last drawn for: a boundary that passed since then
      // is due at once (a timeout that fired a little early is simply run again).
      function schedule(now) {
        if (timer !== null) clearTimeout(timer);
        let next = Infinity;
        for (const a of acts.values()) {
          const n = nextChange(a, now);
          if (n !== null && n < next) next = n;
        }
        if (next === Infinity) { timer = null; return; }
        target = next;
        timer = setTimeout(onBoundary, Math.max(0, next - serverNow()));
      }
      // The last redraws: [the boundary aimed at, when it ran], by the server's clock.
      const redraws = [];
      let target = 0;
      function onBoundary() {
        timer = null;
        const now = serverNow();
        redraws.push([target, now]);
        if (redraws.length > 32) redraws.shift();
        let resort = false;
        for (const a of acts.values()) {
          const t = tiles.get(a.id);
          if (t) tick(a, t, now);
          if (a.kind === "countdown" && a.phase === "active" && valueAt(a, now) === 0) resort = true;
        }
        if (resort) layout(); else schedule(now);
      }

      async function api(method, path, body) {
        const init = { method, headers: Object.assign({}, headers) };
        if (body !== undefined) { init.body = JSON.stringify(body); init.headers["Content-Type"] = "application/json"; }
        const r = await fetch(path, init);
        const j = await r.json().catch(() => ({}));
        if (!r.ok) {
          const e = new Error((j.code ? j.code + ": " : "") + (j.message || r.status + " " + r.statusText));
          e.status = r.status;
          throw e;
        }
        return j;
      }

      // The server's clock: the sample of five with the shortest round trip, its midpoint.
      // A slow sample (a busy page, a first connection) is retried a second later.
      let resync = null;
      async function syncClock() {
        let best = null;
        for (let i = 0; i < 5; i++) {
          const t0 = Date.now(), p0 = performance.now();
          const j = await api("GET", "/v1/time");
          const rtt = performance.now() - p0;
          if (best === null || rtt < best.rtt) best = { rtt, offset: j.now - (t0 + rtt / 2) };
        }
        offset = best.offset;
        board.dataset.rtt = best.rtt.toFixed(1);
        if (resync !== null) clearTimeout(resync);
        resync = setTimeout(() => syncClock().then(layout).catch(() => {}), best.rtt > 20 ? 1000 : 30000);
      }

      async function command(id, op) {
        const t = tiles.get(id);
        if (t) { t.root.classList.add("pending"); t.toggle.disabled = t.end.disabled = true; t.error.textContent = ""; }
        try {
          const a = await api("POST", "/v1/activities/" + encodeURIComponent(id) + "/" + op, {});
          remember(a, serverNow());
          if (t) t.root.classList.remove("pending");
          layout();
        } catch (e) {
          if (t) { t.root.classList.remove("pending"); t.error.textContent = "Refused: " + e.message; }
          const a = acts.get(id);
          if (a && t) render(a, t, serverNow());
        }
      }

      const refreshing = new Set();
      async function refresh(id) {
        if (refreshing.has(id)) return;
        refreshing.add(id);
        await Promise.resolve();
        refreshing.delete(id);
        try {
          const a = await api("GET", "/v1/activities/" + encodeURIComponent(id));
          remember(a, serverNow());
        } catch (e) {
          // Gone (404): off the board. Anything else (503 while a cluster's shard changes
          // hands, a dropped connection) keeps the tile as it was, ticking on the page's clock.
          if (e.status === 404) acts.delete(id);
        }
        layout();
      }

      let source = null;
      function connect() {
        const query = [];
        if (token) query.push("token=" + encodeURIComponent(token));
        if (only) query.push("ids=" + encodeURIComponent(only));
        if (group) query.push("group=" + encodeURIComponent(group));
        source = new EventSource("/v1/events" + (query.length ? "?" + query.join("&") : ""));
        source.addEventListener("open", () => {
          statusEl.textContent = "live";
          statusEl.classList.remove("down");
          syncClock().then(layout).catch(() => {});
        });
        const mine = source;
        source.addEventListener("error", () => {
          statusEl.textContent = "reconnecting…";
          statusEl.classList.add("down");
          // The browser connects again by itself after a dropped connection, but not after an
          // answer that is not a stream (503 while the server stops, a proxy's 502): then the
          // page does, a second later.
          if (mine.readyState === EventSource.CLOSED && source === mine) setTimeout(connect, 1000);
        });
        source.addEventListener("snapshot", (m) => {
          const s = JSON.parse(m.data);
          acts.clear();
          for (const a of s.activities) remember(a, s.at);
          board.dataset.snapshots = String(Number(board.dataset.snapshots || 0) + 1);
          layout();
        });
        for (const name of ["started", "updated", "paused", "resumed", "ended", "milestone", "stale", "expired"])
          source.addEventListener(name, (m) => refresh(JSON.parse(m.data).id));
        source.addEventListener("dismissed", (m) => { acts.delete(JSON.parse(m.data).id); layout(); });
      }

      window.countdownBoard = { format, serverNow, acts, redraws, get offset() { return offset; } };
      syncClock().catch(() => {}).finally(connect);
    })();
    </script>
    </body>
    </html>
    """#
}
