/* NuBoard Timeline: a project's runs as bars on a wall-time axis, drawn as SVG from the page's
   JSON (and, while a run runs, from the JSON twin every few seconds).
   Wheel over the bars zooms around the cursor, drag pans, Reset (or a double-click) shows all.
   The axis fits the runs: a version made far from its run's bar (promoted weeks later) does not
   stretch it; it is drawn at the edge, an arrow pointing to where it is and a label saying
   when ("model:v3 made 60 days later"), and panning that way brings it into view.
   A bar's colour is its status's, as on the Runs table in either theme (timeline.css, from the
   theme's variables); the run's own colour is the swatch by its name. Each run's elements carry
   data-run="<run id>" (static/run_colours.js repaints them when a colour is set), and each bar
   and diamond link has a name (aria-label) for screen readers.
   No inline scripts (the page's CSP allows only static/); text a user wrote reaches the DOM
   through textContent, or an attribute, only. */
(function () {
  "use strict";

  var SVGNS = "http://www.w3.org/2000/svg";
  var ROW = 20, BAR = 10, LABEL_W = 230, AXIS_H = 34, PAD_R = 14, MIN_SPAN = 1;
  var DIAMOND = 5.5, LABEL_CHARS = 32;
  var FAR = 0.5, FAR_ROOM = 0.22, ON_BAR_S = 2;   /* far: beyond half the runs' span; room for its label */
  var TICK_STEPS = [0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800,
                    21600, 43200, 86400, 172800, 604800, 1209600, 2592000, 7776000, 31536000];
  var MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

  var box, axisSvg, bodySvg, scroller, tip, plot, grid, nowLines, clipRect;
  var data = null, fetchedAt = 0, view = null, plotW = 600, items = [], timer = null, byId = {};
  var drag = null, dragged = false, frame = 0;

  function el(name, attrs, parent) {
    var node = document.createElementNS(SVGNS, name);
    for (var k in attrs) if (Object.prototype.hasOwnProperty.call(attrs, k)) node.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(node);
    return node;
  }

  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }

  function pad2(n) { return (n < 10 ? "0" : "") + n; }

  function localTime(t) {
    if (t === null || t === undefined) return "-";
    var d = new Date(t * 1000);
    return d.getFullYear() + "-" + pad2(d.getMonth() + 1) + "-" + pad2(d.getDate()) + " " +
      pad2(d.getHours()) + ":" + pad2(d.getMinutes()) + ":" + pad2(d.getSeconds());
  }

  /* '42s', '3m 05s', '1h 02m', '2d 03h' as the Runs table writes durations */
  function duration(s) {
    if (s === null || s === undefined || !isFinite(s) || s < 0) return "-";
    var total = Math.floor(s);
    if (total < 60) return total + "s";
    var m = Math.floor(total / 60), sec = total % 60;
    if (m < 60) return m + "m " + pad2(sec) + "s";
    var h = Math.floor(m / 60); m = m % 60;
    if (h < 24) return h + "h " + pad2(m) + "m";
    return Math.floor(h / 24) + "d " + pad2(h % 24) + "h";
  }

  /* the server's clock, moved on by the time since the data came */
  function now() { return data.now + (performance.now() - fetchedAt) / 1000; }

  function runEnd(run) { return run.end !== null && run.end !== undefined ? run.end : (run.status === "running" ? now() : run.start); }

  /* where a version's diamond goes: on its run's bar (`at`), unless it was made well away
     from the bar (a checkpoint promoted later): then at its creation time */
  function versionTime(v, run) {
    var at = v.at !== null && v.at !== undefined ? v.at : runEnd(run);
    if (v.created === null || v.created === undefined || at === null) return at;
    return Math.abs(v.created - at) > ON_BAR_S ? v.created : at;
  }

  /* the runs' span; versions near it widen it, those far from it (FAR) only make room for
     their edge label */
  function extent() {
    var lo = Infinity, hi = -Infinity;
    data.runs.forEach(function (r) {
      if (r.start !== null) { lo = Math.min(lo, r.start); hi = Math.max(hi, r.start); }
      var e = runEnd(r);
      if (e !== null && e !== undefined) hi = Math.max(hi, e);
    });
    if (!isFinite(lo)) {
      data.runs.forEach(function (r) {
        r.versions.forEach(function (v) { var t = versionTime(v, r); if (t !== null) { lo = Math.min(lo, t); hi = Math.max(hi, t); } });
      });
    }
    if (!isFinite(lo)) { lo = now() - 3600; hi = now(); }
    if (hi - lo < 10) { var mid = (lo + hi) / 2; lo = mid - 5; hi = mid + 5; }
    var span = hi - lo, near = { lo: lo - span * FAR, hi: hi + span * FAR }, before = false, after = false;
    data.runs.forEach(function (r) {
      r.versions.forEach(function (v) {
        var t = versionTime(v, r);
        if (t === null || t === undefined) return;
        if (t < near.lo) before = true;
        else if (t > near.hi) after = true;
        else { lo = Math.min(lo, t); hi = Math.max(hi, t); }
      });
    });
    span = hi - lo;
    return { lo: lo - span * (before ? FAR_ROOM : 0.02), hi: hi + span * (after ? FAR_ROOM : 0.02) };
  }

  /* '60 days', '5 hours', '12 minutes' */
  function howLong(s) {
    var units = [[86400, "day"], [3600, "hour"], [60, "minute"], [1, "second"]];
    for (var i = 0; i < units.length; i++) {
      if (s >= units[i][0] || i === units.length - 1) {
        var n = Math.round(s / units[i][0]);
        return n + " " + units[i][1] + (n === 1 ? "" : "s");
      }
    }
    return "";
  }

  /* 'made 60 days later' for a version made after its run's end (before its start: 'earlier') */
  function offBar(v, run) {
    var t = versionTime(v, run), end = runEnd(run);
    if (t === null || v.created === null || v.created === undefined) return null;
    if (end !== null && t > end + ON_BAR_S) return "made " + howLong(t - end) + " later";
    if (run.start !== null && t < run.start - ON_BAR_S) return "made " + howLong(run.start - t) + " earlier";
    return null;
  }

  function current() { return view || extent(); }

  function xOf(t, v) {
    var x = LABEL_W + (t - v.lo) / (v.hi - v.lo) * plotW;
    return Math.max(-1e6, Math.min(1e6, x));
  }

  /* ---- building the rows (once per data) ---- */
  function build() {
    clear(plot); clear(grid); clear(nowLines);
    items = [];
    var labels = bodySvg.querySelector(".tl-labels");
    clear(labels);
    var stripes = bodySvg.querySelector(".tl-stripes");
    clear(stripes);
    var links = bodySvg.querySelector(".tl-links");
    clear(links);
    var rowOf = {};
    byId = {};
    data.runs.forEach(function (r, i) { rowOf[r.id] = i; byId[r.id] = r; });
    var height = Math.max(ROW, data.runs.length * ROW) + 6;
    bodySvg.setAttribute("height", height);
    clipRect.setAttribute("height", height);

    data.runs.forEach(function (run, i) {
      var cy = i * ROW + ROW / 2 + 3;
      if (i % 2 === 1) el("rect", { x: 0, y: cy - ROW / 2, height: ROW, width: LABEL_W + plotW + PAD_R, "class": "tl-stripe" }, stripes);
      var name = run.name || run.id;
      var label = el("a", { href: run.url, "class": "tl-label", "data-run": run.id }, labels);
      if (run.colour) { label.style.setProperty("--run-colour", run.colour); label.setAttribute("data-colour", run.colour); }
      el("rect", { x: 8, y: cy - 5, width: 10, height: 10, rx: 2, "class": "tl-swatch" }, label);
      var text = el("text", { x: 24, y: cy + 4 }, label);
      text.textContent = name.length > LABEL_CHARS ? name.slice(0, LABEL_CHARS - 1) + "\u2026" : name;

      var link = el("a", { href: run.url, "class": "tl-run status-" + run.status, "data-run": run.id,
                           "aria-label": name + ": " + run.status + ", started " + localTime(run.start) }, plot);
      run.sessions.forEach(function (s, k) {
        var rect = el("rect", { y: cy - BAR / 2, height: BAR, rx: 2, "class": "tl-seg" }, link);
        items.push({ kind: "seg", node: rect, run: run, seg: s, first: k === 0 });
      });
      if (!run.sessions.length) {
        var only = el("rect", { y: cy - BAR / 2, height: BAR, rx: 2, "class": "tl-seg" }, link);
        items.push({ kind: "seg", node: only, run: run, seg: { start: run.start, end: run.end }, first: true });
      }
      var mark = endMark(run.status, cy, link);
      if (mark) items.push({ kind: "mark", node: mark, run: run });

      if (run.parent && run.parent.shown && rowOf[run.parent.id] !== undefined) {
        var py = rowOf[run.parent.id] * ROW + ROW / 2 + 3;
        var path = el("path", { "class": "tl-fork" }, links);
        var dot = el("circle", { r: 2.5, "class": "tl-fork-dot" }, links);
        items.push({ kind: "fork", node: path, dot: dot, run: run, py: py, cy: cy });
      }
      run.versions.forEach(function (v, j) {
        var a = el("a", { "class": "tl-version state-" + v.state, "data-run": run.id, "data-version": j,
                          "aria-label": v.label + (v.state === "linked" ? "" : " (" + v.state + ")") + ", made by " + name }, plot);
        if (v.url) a.setAttribute("href", v.url);
        var line = el("line", { "class": "tl-version-link", display: "none" }, a);
        var shape = el("path", { "class": "tl-diamond" }, a);
        var arrow = el("path", { "class": "tl-edge-arrow", display: "none" }, a);   /* none: out of the link's box */
        var note = el("text", { "class": "tl-edge-label", display: "none" }, a);
        var short = v.label.indexOf("/") >= 0 ? v.label.slice(v.label.lastIndexOf("/") + 1) : v.label;
        note.textContent = short + " " + (offBar(v, run) || "");
        items.push({ kind: "version", node: shape, line: line, arrow: arrow, note: note, run: run, version: v, cy: cy });
      });
    });
    position();
  }

  function endMark(status, cy, parent) {
    if (status === "crashed" || status === "failed") {
      return el("path", { "class": "tl-mark tl-crash", "data-cy": cy }, parent);
    }
    if (status === "lost") return el("circle", { r: 4, cy: cy, "class": "tl-mark tl-lost" }, parent);
    if (status === "running") return el("path", { "class": "tl-mark tl-growing", "data-cy": cy }, parent);
    if (status === "killed") return el("rect", { width: 7, height: 7, y: cy - 3.5, "class": "tl-mark tl-killed" }, parent);
    return null;
  }

  /* ---- placing everything for the current view (every zoom and pan) ---- */
  function position() {
    var v = current(), t = now();
    items.forEach(function (it) {
      var run = it.run;
      if (it.kind === "seg") {
        var end = it.seg.end !== null && it.seg.end !== undefined ? it.seg.end : runEnd(run);
        var x0 = xOf(it.seg.start, v), x1 = xOf(end, v);
        if (!it.first) x0 += 1.5;           /* a notch between sessions */
        it.node.setAttribute("x", x0);
        it.node.setAttribute("width", Math.max(2, x1 - x0));
      } else if (it.kind === "mark") {
        var xe = xOf(runEnd(run), v), cy = +it.node.getAttribute("data-cy");
        if (run.status === "crashed" || run.status === "failed") {
          it.node.setAttribute("d", "M" + (xe - 4) + " " + (cy - 6) + "L" + (xe + 4) + " " + (cy + 6) +
                               "M" + (xe - 4) + " " + (cy + 6) + "L" + (xe + 4) + " " + (cy - 6));
        } else if (run.status === "lost") {
          it.node.setAttribute("cx", xe);
        } else if (run.status === "running") {
          it.node.setAttribute("d", "M" + (xe + 1) + " " + (cy - 6) + "L" + (xe + 7) + " " + cy + "L" + (xe + 1) + " " + (cy + 6) + "Z");
        } else if (run.status === "killed") {
          it.node.setAttribute("x", xe - 3.5);
        }
      } else if (it.kind === "version") {
        placeVersion(it, v);
      } else if (it.kind === "fork") {
        var at = run.parent.time !== null ? run.parent.time : run.start;
        var xp = xOf(at, v), xc = xOf(run.start, v);
        it.node.setAttribute("d", "M" + xp + " " + it.py + "V" + it.cy + "H" + xc);
        it.dot.setAttribute("cx", xp); it.dot.setAttribute("cy", it.py);
      }
    });
    drawAxis(v, t);
    var reset = document.getElementById("tl-reset");
    if (reset) reset.disabled = view === null;
  }

  /* a version on its bar, off it within the view (a dotted line back to the bar), or past
     the view's edge: pinned there with an arrow and its label */
  function placeVersion(it, v) {
    var run = it.run, y = it.cy, when = versionTime(it.version, run);
    var xv = xOf(when, v), left = LABEL_W + DIAMOND + 2, right = LABEL_W + plotW - DIAMOND - 2;
    var off = offBar(it.version, run);
    var side = !off ? 0 : xv > right ? 1 : xv < left ? -1 : 0;   /* one on its bar scrolls away with it */
    if (side) xv = side > 0 ? right - 8 : left + 8;
    it.node.setAttribute("d", "M" + xv + " " + (y - DIAMOND) + "L" + (xv + DIAMOND) + " " + y + "L" + xv + " " + (y + DIAMOND) + "L" + (xv - DIAMOND) + " " + y + "Z");
    if (off) {
      var xb = xOf(when > runEnd(run) ? runEnd(run) : run.start, v);
      it.line.setAttribute("x1", xb); it.line.setAttribute("x2", xv);
      it.line.setAttribute("y1", y); it.line.setAttribute("y2", y);
    }
    it.line.setAttribute("display", off ? "inline" : "none");
    it.arrow.setAttribute("display", side ? "inline" : "none");
    it.note.setAttribute("display", side ? "inline" : "none");
    it.node.parentNode.classList.toggle("tl-at-edge", !!side);
    if (!side) return;
    var xa = xv + side * (DIAMOND + 3);
    it.arrow.setAttribute("d", "M" + xa + " " + (y - 4) + "L" + (xa + side * 5) + " " + y + "L" + xa + " " + (y + 4) + "Z");
    it.note.setAttribute("x", xv - side * (DIAMOND + 4));
    it.note.setAttribute("y", y + 4);
    it.note.setAttribute("text-anchor", side > 0 ? "end" : "start");
  }

  function schedule() {
    if (frame) return;
    frame = window.requestAnimationFrame(function () { frame = 0; position(); });
  }

  /* ---- the time axis: ticks on round local times, the date where it changes ---- */
  function tickTimes(v) {
    var span = v.hi - v.lo, want = Math.max(2, plotW / 110), step = TICK_STEPS[TICK_STEPS.length - 1];
    for (var i = 0; i < TICK_STEPS.length; i++) if (span / TICK_STEPS[i] <= want) { step = TICK_STEPS[i]; break; }
    var out = [], d, guard = 0;
    if (step < 86400) {
      var off = -new Date(v.lo * 1000).getTimezoneOffset() * 60;
      var first = Math.ceil((v.lo + off) / step);
      for (var n = first; (n * step - off) <= v.hi && guard < 500; n++, guard++) out.push(n * step - off);
      return { step: step, times: out };
    }
    d = new Date(v.lo * 1000); d.setHours(0, 0, 0, 0);
    if (step >= 31536000) { d.setMonth(0, 1); }
    else if (step >= 2592000) { d.setDate(1); }
    while (d.getTime() / 1000 <= v.hi && guard < 500) {
      if (d.getTime() / 1000 >= v.lo) out.push(d.getTime() / 1000);
      if (step >= 31536000) d.setFullYear(d.getFullYear() + 1);
      else if (step >= 2592000) d.setMonth(d.getMonth() + Math.round(step / 2592000));
      else d.setDate(d.getDate() + Math.round(step / 86400));
      guard++;
    }
    return { step: step, times: out };
  }

  function tickLabel(t, step) {
    var d = new Date(t * 1000);
    if (step < 1) return pad2(d.getHours()) + ":" + pad2(d.getMinutes()) + ":" + pad2(d.getSeconds()) + "." + Math.round(d.getMilliseconds() / 100) % 10;
    if (step < 60) return pad2(d.getHours()) + ":" + pad2(d.getMinutes()) + ":" + pad2(d.getSeconds());
    if (step < 86400) return pad2(d.getHours()) + ":" + pad2(d.getMinutes());
    if (step < 2592000) return MONTHS[d.getMonth()] + " " + d.getDate();
    if (step < 31536000) return MONTHS[d.getMonth()] + " " + d.getFullYear();
    return String(d.getFullYear());
  }

  function dayLabel(t) {
    var d = new Date(t * 1000);
    return MONTHS[d.getMonth()] + " " + d.getDate() + ", " + d.getFullYear();
  }

  function drawAxis(v, t) {
    clear(axisSvg); clear(grid); clear(nowLines);
    var width = LABEL_W + plotW + PAD_R, height = +bodySvg.getAttribute("height");
    axisSvg.setAttribute("width", width);
    el("line", { x1: LABEL_W, x2: LABEL_W + plotW, y1: AXIS_H - 0.5, y2: AXIS_H - 0.5, "class": "tl-axis-line" }, axisSvg);
    var ticks = tickTimes(v), lastDay = null;
    ticks.times.forEach(function (tt) {
      var x = xOf(tt, v);
      el("line", { x1: x, x2: x, y1: AXIS_H - 6, y2: AXIS_H, "class": "tl-tick" }, axisSvg);
      el("line", { x1: x, x2: x, y1: 0, y2: height, "class": "tl-grid" }, grid);
      var label = el("text", { x: x, y: AXIS_H - 10, "class": "tl-tick-label" }, axisSvg);
      label.textContent = tickLabel(tt, ticks.step);
      var day = new Date(tt * 1000).toDateString();
      if (ticks.step < 86400 && day !== lastDay) {
        var date = el("text", { x: x, y: 11, "class": "tl-day-label" }, axisSvg);
        date.textContent = dayLabel(tt);
        lastDay = day;
      }
    });
    if (!ticks.times.length || ticks.step >= 86400) {
      var span = el("text", { x: LABEL_W, y: 11, "class": "tl-day-label tl-start" }, axisSvg);
      span.textContent = dayLabel(v.lo);
    }
    var head = el("text", { x: 8, y: AXIS_H - 10, "class": "tl-axis-title" }, axisSvg);
    head.textContent = "run (sorted by start)";
    if (data.live && t >= v.lo && t <= v.hi) {
      var xn = xOf(t, v);
      el("line", { x1: xn, x2: xn, y1: 0, y2: height, "class": "tl-now" }, nowLines);
      var nowText = el("text", { x: xn + 3, y: AXIS_H - 22, "class": "tl-now-label" }, axisSvg);
      nowText.textContent = "now";
    }
  }

  /* ---- hover: what a bar or diamond is ---- */
  function tipLines(target) {
    var id = target.getAttribute("data-run");
    if (id === null) return null;
    var run = byId[id];
    if (!run) return null;
    var j = target.getAttribute("data-version");
    if (j !== null) {
      var v = run.versions[+j];
      return [[v.label + (v.state === "unlinked" ? " (unlinked)" : v.state === "missing" ? " (missing)" : ""), "tl-tip-head"],
              ["type: " + (v.type || "-")],
              ["created: " + (v.created !== null ? localTime(v.created) : "unknown")],
              ["made by: " + run.name + (offBar(v, run) ? ", " + offBar(v, run).replace("made ", "") : "")]];
    }
    var lines = [[run.name, "tl-tip-head"], ["status: " + run.status, "status-line status-" + run.status],
                 ["start: " + localTime(run.start)]];
    if (run.status === "running") lines.push(["running for " + duration(now() - run.start)]);
    else lines.push([(run.status === "lost" ? "last seen: " : "end: ") + localTime(run.end)],
                    ["duration: " + duration(run.end !== null && run.start !== null ? run.end - run.start : null)]);
    if (run.sessions.length > 1) lines.push(["sessions: " + run.sessions.length + " (resumed " + (run.sessions.length - 1) + (run.sessions.length === 2 ? " time)" : " times)")]);
    if (run.parent) {
      var parent = null;
      data.runs.forEach(function (r) { if (r.id === run.parent.id) parent = r; });
      lines.push(["forked from " + (parent ? parent.name : run.parent.id) + (run.parent.step !== null ? " at step " + run.parent.step : "")]);
    }
    if (run.versions.length) lines.push(["made " + run.versions.length + (run.versions.length === 1 ? " version" : " versions")]);
    if (run.world_size && run.world_size > 1) lines.push([run.world_size + " ranks"]);
    lines.push([run.id, "tl-tip-id"]);
    return lines;
  }

  function showTip(ev) {
    var target = ev.target.closest ? ev.target.closest("[data-run]") : null;
    if (!target || drag) { hideTip(); return; }
    var lines = tipLines(target);
    if (!lines) { hideTip(); return; }
    clear(tip);
    lines.forEach(function (line) {
      var div = document.createElement("div");
      div.textContent = line[0];
      if (line[1]) div.className = line[1];
      tip.appendChild(div);
    });
    tip.hidden = false;
    var x = ev.clientX + 14, y = ev.clientY + 14;
    var w = tip.offsetWidth, h = tip.offsetHeight;
    if (x + w > window.innerWidth - 8) x = Math.max(8, ev.clientX - w - 14);
    if (y + h > window.innerHeight - 8) y = Math.max(8, ev.clientY - h - 14);
    tip.style.left = x + "px"; tip.style.top = y + "px";
  }

  function hideTip() { if (tip) tip.hidden = true; }

  /* ---- zoom and pan ---- */
  function plotX(ev) { return ev.clientX - bodySvg.getBoundingClientRect().left; }

  function onWheel(ev) {
    var x = plotX(ev);
    if (x < LABEL_W || ev.shiftKey) return;            /* over the names: scroll the rows */
    ev.preventDefault();
    var v = current(), span = v.hi - v.lo;
    var dy = ev.deltaY * (ev.deltaMode === 1 ? 16 : ev.deltaMode === 2 ? 400 : 1);
    var dx = ev.deltaX * (ev.deltaMode === 1 ? 16 : ev.deltaMode === 2 ? 400 : 1);
    if (Math.abs(dx) > Math.abs(dy)) {                  /* a sideways swipe pans */
      var shift = dx / plotW * span;
      view = { lo: v.lo + shift, hi: v.hi + shift };
    } else {
      var at = v.lo + (x - LABEL_W) / plotW * span;
      var full = extent(), maxSpan = Math.max(span, (full.hi - full.lo) * 4);
      var next = Math.min(maxSpan, Math.max(MIN_SPAN, span * Math.exp(dy * 0.0015)));
      var lo = at - (at - v.lo) * next / span;
      view = { lo: lo, hi: lo + next };
    }
    schedule();
  }

  function onDown(ev) {
    if (ev.button !== 0) return;
    dragged = false;
    drag = { x: ev.clientX, view: current(), id: ev.pointerId, captured: false };
  }

  function onMove(ev) {
    if (!drag) { showTip(ev); return; }
    var dx = ev.clientX - drag.x;
    if (!drag.captured && Math.abs(dx) < 4) return;
    if (!drag.captured) {
      drag.captured = true; dragged = true; hideTip();
      bodySvg.setPointerCapture(drag.id);
      box.classList.add("dragging");
    }
    var span = drag.view.hi - drag.view.lo, shift = -dx / plotW * span;
    view = { lo: drag.view.lo + shift, hi: drag.view.hi + shift };
    schedule();
  }

  function onUp() {
    if (drag && drag.captured && bodySvg.hasPointerCapture(drag.id)) bodySvg.releasePointerCapture(drag.id);
    drag = null;
    box.classList.remove("dragging");
  }

  function onClick(ev) {
    if (dragged) { ev.preventDefault(); dragged = false; }
  }

  function reset() { view = null; schedule(); }

  /* ---- size and refresh ---- */
  function resize() {
    var width = scroller.clientWidth || box.clientWidth || 900;
    plotW = Math.max(200, width - LABEL_W - PAD_R);
    bodySvg.setAttribute("width", LABEL_W + plotW + PAD_R);
    clipRect.setAttribute("width", plotW + 4);
    bodySvg.querySelectorAll(".tl-stripe").forEach(function (r) { r.setAttribute("width", LABEL_W + plotW + PAD_R); });
    schedule();
  }

  function refreshLater() {
    if (timer) window.clearTimeout(timer);
    timer = null;
    if (!data.live) return;
    timer = window.setTimeout(refresh, (data.refresh_s || 5) * 1000);
  }

  function refresh() {
    if (document.hidden) { refreshLater(); return; }
    fetch(box.dataset.api, { headers: { Accept: "application/json" }, credentials: "same-origin" })
      .then(function (resp) { return resp.ok ? resp.json() : null; })
      .then(function (fresh) {
        if (fresh && fresh.runs) { take(fresh); build(); resize(); }
        refreshLater();
      })
      .catch(function () { refreshLater(); });
  }

  function take(fresh) {
    data = fresh; fetchedAt = performance.now();
    var live = document.getElementById("tl-live");
    if (live) live.hidden = !data.live;
    var total = document.getElementById("tl-total");
    if (total) total.textContent = String(data.total);
  }

  function init() {
    box = document.getElementById("timeline");
    var source = document.getElementById("timeline-data");
    if (!box || !source) return;
    take(JSON.parse(source.textContent));
    axisSvg = el("svg", { "class": "tl-axis", height: AXIS_H, "aria-hidden": "true" });
    scroller = document.createElement("div");
    scroller.className = "tl-scroll";
    bodySvg = el("svg", { "class": "tl-body", role: "img", "aria-label": "runs on a time axis" });
    var defs = el("defs", {}, bodySvg);
    var clip = el("clipPath", { id: "tl-clip" }, defs);
    clipRect = el("rect", { x: LABEL_W - 2, y: 0, width: plotW, height: 10 }, clip);
    el("g", { "class": "tl-stripes" }, bodySvg);
    grid = el("g", { "class": "tl-grid-lines", "clip-path": "url(#tl-clip)" }, bodySvg);
    el("g", { "class": "tl-labels" }, bodySvg);
    var clipped = el("g", { "clip-path": "url(#tl-clip)" }, bodySvg);
    nowLines = el("g", { "class": "tl-now-lines" }, clipped);
    el("g", { "class": "tl-links" }, clipped);
    plot = el("g", { "class": "tl-plot" }, clipped);
    scroller.appendChild(bodySvg);
    tip = document.createElement("div");
    tip.className = "tl-tip"; tip.setAttribute("role", "tooltip"); tip.hidden = true;
    box.appendChild(axisSvg); box.appendChild(scroller); document.body.appendChild(tip);

    bodySvg.addEventListener("wheel", onWheel, { passive: false });
    bodySvg.addEventListener("pointerdown", onDown);
    bodySvg.addEventListener("pointermove", onMove);
    bodySvg.addEventListener("pointerup", onUp);
    bodySvg.addEventListener("pointercancel", onUp);
    bodySvg.addEventListener("pointerleave", hideTip);
    bodySvg.addEventListener("click", onClick, true);
    bodySvg.addEventListener("dblclick", function (ev) { if (plotX(ev) >= LABEL_W) reset(); });
    scroller.addEventListener("scroll", hideTip);
    var resetButton = document.getElementById("tl-reset");
    if (resetButton) resetButton.addEventListener("click", reset);
    window.addEventListener("resize", resize);
    resize();
    build();
    refreshLater();
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
