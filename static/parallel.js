/* NuBoard parallel coordinates: one vertical axis per field, one polyline per run, drawn on one
   canvas from the page's JSON (script#parallel-data) once per change (no DOM per run, so 2,000
   runs stay quick). Numeric axes are linear or log (kind "log"), a categorical axis spreads its
   categories evenly. Dragging along an axis brushes a range (in the axis's values; a category
   axis: category positions, 0 the first), clicking an axis clears it; runs outside any brushed
   range are faded. The ranges go into the URL (history.replaceState, ?brush=field:lo:hi,...),
   the count and the links follow: "Chart these runs" (?runs= of at most data-max runs inside)
   and "Select in the Runs table" (the Runs page's selection, kept per project in
   sessionStorage by nuboard.js, set to the runs inside before going there). Hovering near a
   line names its run and values (the run is drawn on top, thick); a click there opens the run.
   Dragging an axis's name sideways moves the axis; the order goes into the URL (?axes=).
   No inline scripts (CSP); user text reaches the DOM through textContent only. */
(function () {
  "use strict";

  var PAD = { top: 34, bottom: 26, side: 70 }, HIT = 14, HEIGHT = 440;
  var Num = window.NuBoardNumbers;

  function num(v) { return Num ? Num.text(v) : String(v); }

  function themeColours() {
    var css = getComputedStyle(document.documentElement);
    function v(name, fallback) { return (css.getPropertyValue(name) || "").trim() || fallback; }
    return { fg: v("--fg", "#1d2330"), muted: v("--muted", "#6b7280"), grid: v("--grid", "#eceef2"),
             bg: v("--bg", "#ffffff") };
  }

  /* an axis's mapping from its values (brush space: a number, or a category's position) to a
     fraction 0 (bottom) .. 1 (top) */
  function scaler(axis) {
    if (axis.kind === "categorical") {
      var n = axis.categories.length;
      return function (p) { return n > 1 ? p / (n - 1) : 0.5; };
    }
    if (!axis.range) return function () { return 0.5; };
    var log = axis.kind === "log", lo = axis.range[0], hi = axis.range[1];
    var a = log ? Math.log10(lo) : lo, b = log ? Math.log10(hi) : hi;
    return function (v) {
      var t = log ? Math.log10(v) : v;
      return b > a ? (t - a) / (b - a) : 0.5;
    };
  }

  /* the inverse: a fraction of the axis's height back to its value */
  function unscaler(axis) {
    if (axis.kind === "categorical") {
      var n = axis.categories.length;
      return function (f) { return n > 1 ? f * (n - 1) : 0; };
    }
    if (!axis.range) return function () { return 0; };
    var log = axis.kind === "log", lo = axis.range[0], hi = axis.range[1];
    var a = log ? Math.log10(lo) : lo, b = log ? Math.log10(hi) : hi;
    return function (f) { var t = a + f * (b - a); return log ? Math.pow(10, t) : t; };
  }

  function niceTicks(lo, hi, count) {
    if (!(hi > lo)) return [lo];
    var step = Math.pow(10, Math.floor(Math.log10((hi - lo) / count)));
    var err = (hi - lo) / count / step;
    step *= err >= 7.5 ? 10 : err >= 3.5 ? 5 : err >= 1.5 ? 2 : 1;
    var out = [];
    for (var v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(Number(v.toPrecision(12)));
    return out;
  }

  /* [value, label] pairs of an axis's ticks */
  function ticksOf(axis) {
    if (axis.kind === "categorical") return axis.categories.map(function (c, i) { return [i, c]; });
    if (!axis.range) return [];
    var lo = axis.range[0], hi = axis.range[1], out = [];
    if (axis.kind === "log") {
      for (var e = Math.ceil(Math.log10(lo) - 1e-9); e <= Math.floor(Math.log10(hi) + 1e-9); e++) out.push(Math.pow(10, e));
      /* the range's ends labelled too, unless a decade sits within a tenth of the axis */
      var span = Math.log10(hi) - Math.log10(lo) || 1;
      [lo, hi].forEach(function (end) {
        if (!out.some(function (v) { return Math.abs(Math.log10(v) - Math.log10(end)) < span / 10; })) out.push(end);
      });
    } else {
      out = niceTicks(lo, hi, 5);
      if (out.length < 2) out = [lo, hi];
    }
    /* a decade reads as it is; a range's end (0.098243) with three significant digits */
    return out.map(function (v) { return [v, num(axis.kind === "log" ? Number(v.toPrecision(3)) : v)]; });
  }

  function position(axis, value) {
    if (value === null || value === undefined) return null;
    if (axis.kind === "categorical") { var i = axis.categories.indexOf(value); return i < 0 ? null : i; }
    return value;
  }

  function Plot(box, canvas, data) {
    this.box = box; this.canvas = canvas; this.data = data;
    this.axes = data.axes;
    this.scale = data.axes.map(scaler);
    this.unscale = data.axes.map(unscaler);
    this.brush = {};
    var self = this;
    data.brush.forEach(function (b) { self.brush[b.field] = [b.lo, b.hi]; });
    /* each run's positions per axis, once */
    this.pos = data.runs.map(function (r) {
      return data.axes.map(function (a) { return position(a, r.values[a.field]); });
    });
  }

  Plot.prototype.layout = function () {
    var width = Math.max(360, this.box.clientWidth || 900), dpr = window.devicePixelRatio || 1;
    this.width = width; this.height = HEIGHT; this.dpr = dpr;
    this.canvas.width = Math.round(width * dpr);
    this.canvas.height = Math.round(HEIGHT * dpr);
    this.canvas.style.height = HEIGHT + "px";
    var n = this.axes.length, inner = width - 2 * PAD.side;
    this.xs = this.axes.map(function (_, i) { return PAD.side + (n > 1 ? inner * i / (n - 1) : inner / 2); });
    this.top = PAD.top; this.bottom = HEIGHT - PAD.bottom;
    this.box.dataset.axisX = this.xs.join(",");
    this.box.dataset.top = String(this.top);
    this.box.dataset.bottom = String(this.bottom);
  };

  Plot.prototype.y = function (i, p) { return this.bottom - this.scale[i](p) * (this.bottom - this.top); };

  Plot.prototype.isInside = function (k) {
    for (var i = 0; i < this.axes.length; i++) {
      var b = this.brush[this.axes[i].field];
      if (!b) continue;
      var p = this.pos[k][i];
      if (p === null || p < b[0] || p > b[1]) return false;
    }
    return true;
  };

  Plot.prototype.line = function (ctx, k) {
    var started = false;
    for (var i = 0; i < this.axes.length; i++) {
      var p = this.pos[k][i];
      if (p === null) { started = false; continue; }
      var x = this.xs[i], y = this.y(i, p);
      if (started) ctx.lineTo(x, y); else ctx.moveTo(x, y);
      started = true;
    }
  };

  Plot.prototype.draw = function () {
    var ctx = this.canvas.getContext("2d"), theme = themeColours(), self = this;
    ctx.setTransform(this.dpr, 0, 0, this.dpr, 0, 0);
    ctx.clearRect(0, 0, this.width, this.height);
    var inside = [], outside = [];
    this.data.runs.forEach(function (_, k) { (self.isInside(k) ? inside : outside).push(k); });
    this.inside = inside.map(function (k) { return self.data.runs[k].id; });
    /* the faded runs first, then those inside on top */
    ctx.lineWidth = 1;
    ctx.globalAlpha = 0.25;
    ctx.strokeStyle = theme.muted;
    ctx.beginPath();
    outside.forEach(function (k) { self.line(ctx, k); });
    ctx.stroke();
    ctx.globalAlpha = inside.length > 500 ? 0.5 : 0.9;
    ctx.lineWidth = 1.5;
    inside.forEach(function (k) {
      ctx.strokeStyle = self.data.runs[k].colour;
      ctx.beginPath();
      self.line(ctx, k);
      ctx.stroke();
    });
    if (this.hover !== null && this.hover !== undefined) {     /* the run under the cursor, on top */
      ctx.globalAlpha = 1;
      ctx.lineWidth = 3.5;
      ctx.strokeStyle = self.data.runs[this.hover].colour;
      ctx.beginPath();
      self.line(ctx, this.hover);
      ctx.stroke();
    }
    ctx.globalAlpha = 1;
    /* the axes, their ticks, labels and brushed ranges */
    ctx.font = "11px system-ui, sans-serif";
    this.axes.forEach(function (axis, i) {
      var x = self.xs[i];
      var b = self.brush[axis.field];
      if (b) {
        var clamp = function (y) { return Math.min(self.bottom, Math.max(self.top, y)); };
        var y0 = clamp(self.y(i, b[1])), y1 = clamp(self.y(i, b[0]));
        ctx.fillStyle = "rgba(59, 130, 246, 0.22)";
        ctx.strokeStyle = "rgba(37, 99, 235, 0.9)";
        ctx.fillRect(x - 8, y0, 16, Math.max(2, y1 - y0));
        ctx.strokeRect(x - 8, y0, 16, Math.max(2, y1 - y0));
      }
      ctx.strokeStyle = theme.fg;
      ctx.lineWidth = 1;
      ctx.beginPath();
      ctx.moveTo(x + 0.5, self.top);
      ctx.lineTo(x + 0.5, self.bottom);
      ctx.stroke();
      ctx.fillStyle = theme.muted;
      ctx.textAlign = "right";
      ctx.textBaseline = "middle";
      ticksOf(axis).forEach(function (t) {
        var y = self.y(i, t[0]);
        ctx.beginPath();
        ctx.moveTo(x - 4, y);
        ctx.lineTo(x, y);
        ctx.stroke();
        var label = String(t[1]);
        label = label.length > 14 ? label.slice(0, 13) + "…" : label;
        ctx.save();                     /* a halo in the page's colour: readable over 2,000 lines */
        ctx.lineWidth = 3;
        ctx.strokeStyle = theme.bg;
        ctx.strokeText(label, x - 6, y);
        ctx.restore();
        ctx.fillText(label, x - 6, y);
      });
      ctx.fillStyle = theme.fg;
      ctx.textAlign = i === 0 ? "left" : i === self.axes.length - 1 ? "right" : "center";
      ctx.textBaseline = "bottom";
      var name = axis.field + (axis.kind === "log" ? " (log)" : "");
      ctx.fillText(name, i === 0 ? x - 10 : i === self.axes.length - 1 ? x + 10 : x, self.top - 12);
    });
    this.box.dataset.inside = String(this.inside.length);
    this.box.dataset.drawn = String(this.data.runs.length);
  };

  Plot.prototype.brushText = function () {
    var self = this;
    return this.axes.filter(function (a) { return self.brush[a.field]; }).map(function (a) {
      var b = self.brush[a.field];
      return a.field + ":" + Number(b[0].toPrecision(6)) + ":" + Number(b[1].toPrecision(6));
    }).join(",");
  };

  /* the URL, the count and the links after the brushed ranges changed */
  Plot.prototype.publish = function () {
    var url = new URL(window.location.href), text = this.brushText();
    if (text) url.searchParams.set("brush", text); else url.searchParams.delete("brush");
    window.history.replaceState(null, "", url.toString());
    var count = document.getElementById("pc-inside");
    if (count) count.textContent = String(this.inside.length);
    var chart = document.getElementById("pc-chart-link");
    if (chart) {
      var max = Number(chart.dataset.max) || 50, ids = this.inside.slice(0, max);
      chart.href = chart.dataset.base + (ids.length ? "?runs=" + encodeURIComponent(ids.join(",")).replace(/%2C/g, ",") : "");
      chart.classList.toggle("disabled", !ids.length);
      var note = document.getElementById("pc-link-note");
      if (note) note.textContent = this.inside.length > max ? "the chart takes the first " + max : "";
    }
  };

  /* the run whose line passes nearest (x, y), within 6 px; runs inside the brushes first */
  Plot.prototype.runAt = function (x, y) {
    var i = -1;
    for (var j = 0; j + 1 < this.xs.length; j++) if (x >= this.xs[j] && x <= this.xs[j + 1]) i = j;
    if (i < 0) return null;
    var best = null, bestD = 6, self = this, t = (x - this.xs[i]) / (this.xs[i + 1] - this.xs[i]);
    [true, false].forEach(function (wanted) {
      if (best !== null) return;
      for (var k = 0; k < self.pos.length; k++) {
        var a = self.pos[k][i], b = self.pos[k][i + 1];
        if (a === null || b === null || self.isInside(k) !== wanted) continue;
        var ya = self.y(i, a), yb = self.y(i + 1, b);
        var d = Math.abs(ya + t * (yb - ya) - y) / Math.sqrt(1 + Math.pow((yb - ya) / (self.xs[i + 1] - self.xs[i]), 2));
        if (d < bestD) { bestD = d; best = k; }
      }
    });
    return best;
  };

  /* the tooltip naming run k and its values, at the cursor */
  Plot.prototype.showTip = function (k, x, y) {
    var tip = document.getElementById("pc-tip");
    if (!tip) return;
    if (k === null) { tip.hidden = true; this.box.dataset.hover = ""; return; }
    var run = this.data.runs[k];
    tip.textContent = "";
    var head = document.createElement("div");
    head.className = "pc-tip-name";
    head.textContent = run.name || run.id;
    tip.appendChild(head);
    this.axes.forEach(function (axis) {
      var row = document.createElement("div"), v = run.values[axis.field];
      row.textContent = axis.field + ": " + (v === null || v === undefined ? "-" : typeof v === "number" ? num(v) : String(v));
      tip.appendChild(row);
    });
    tip.hidden = false;
    var left = x + 14, top = y + 14;
    if (left + tip.offsetWidth > this.width) left = Math.max(0, x - tip.offsetWidth - 14);
    tip.style.left = left + "px";
    tip.style.top = top + "px";
    this.box.dataset.hover = run.id;
  };

  /* move axis `from` to place `to`, and keep the order in the URL and the form */
  Plot.prototype.moveAxis = function (from, to) {
    if (from === to) return;
    var self = this;
    [this.axes, this.scale, this.unscale].forEach(function (list) { list.splice(to, 0, list.splice(from, 1)[0]); });
    this.pos.forEach(function (row) { row.splice(to, 0, row.splice(from, 1)[0]); });
    var fields = this.axes.map(function (a) { return a.field; }).join(",");
    var url = new URL(window.location.href);
    url.searchParams.set("axes", fields);
    window.history.replaceState(null, "", url.toString());
    var input = document.getElementById("pc-axes");
    if (input) input.value = fields;
    self.layout();
    self.draw();
  };

  Plot.prototype.axisAt = function (x) {
    for (var i = 0; i < this.xs.length; i++) if (Math.abs(this.xs[i] - x) <= HIT) return i;
    return -1;
  };

  Plot.prototype.listen = function () {
    var self = this, drag = null;
    function point(ev) {
      var r = self.canvas.getBoundingClientRect();
      return [ev.clientX - r.left, ev.clientY - r.top];
    }
    function fraction(y) { return Math.min(1, Math.max(0, (self.bottom - y) / (self.bottom - self.top))); }
    function nameAt(p) {       /* an axis's name, above its top: [index] or -1 */
      if (p[1] > self.top - 10 || p[1] < 0) return -1;     /* the names sit 12 px above the top */
      for (var i = 0; i < self.xs.length; i++) if (Math.abs(self.xs[i] - p[0]) <= 60) return i;
      return -1;
    }
    this.canvas.addEventListener("mousedown", function (ev) {
      var p = point(ev), named = nameAt(p);
      if (named >= 0) { ev.preventDefault(); drag = { move: named, x: p[0] }; return; }
      var i = self.axisAt(p[0]);
      if (i < 0) {
        var k = self.runAt(p[0], p[1]);
        if (k !== null && self.data.runs[k].url) window.location.href = self.data.runs[k].url;
        return;
      }
      ev.preventDefault();
      drag = { axis: i, from: p[1], moved: false };
    });
    this.canvas.addEventListener("mouseleave", function () {
      if (self.hover !== null && self.hover !== undefined) { self.hover = null; self.draw(); }
      self.showTip(null);
    });
    window.addEventListener("mousemove", function (ev) {
      if (drag && drag.move !== undefined) { self.canvas.style.cursor = "ew-resize"; return; }
      if (!drag) {
        var p0 = point(ev), inside = p0[0] >= 0 && p0[1] >= 0 && p0[0] <= self.width && p0[1] <= self.height;
        var onAxis = self.axisAt(p0[0]) >= 0;
        self.canvas.style.cursor = nameAt(p0) >= 0 ? "ew-resize" : onAxis ? "ns-resize" : "";
        var k = inside && !onAxis ? self.runAt(p0[0], p0[1]) : null;
        if (k !== self.hover) { self.hover = k; self.draw(); }
        if (k !== null) { self.canvas.style.cursor = "pointer"; self.showTip(k, p0[0], p0[1]); } else self.showTip(null);
        return;
      }
      var p = point(ev);
      if (Math.abs(p[1] - drag.from) < 3 && !drag.moved) return;
      drag.moved = true;
      var a = self.unscale[drag.axis](fraction(Math.max(p[1], drag.from)));
      var b = self.unscale[drag.axis](fraction(Math.min(p[1], drag.from)));
      self.brush[self.axes[drag.axis].field] = [a, b];
      self.draw();
    });
    window.addEventListener("mouseup", function (ev) {
      if (drag && drag.move !== undefined) {
        var x = point(ev)[0], to = 0;
        for (var j = 0; j < self.xs.length; j++) if (j !== drag.move && x > self.xs[j]) to++;
        var from = drag.move;
        drag = null;
        self.moveAxis(from, Math.min(to, self.axes.length - 1));
        return;
      }
      if (!drag) return;
      if (!drag.moved) delete self.brush[self.axes[drag.axis].field];
      drag = null;
      self.draw();
      self.publish();
    });
    var select = document.getElementById("pc-select-link");
    if (select) select.addEventListener("click", function () {
      try {
        window.sessionStorage.setItem("nuboard:selection:" + select.dataset.project, JSON.stringify(self.inside));
      } catch (e) { /* storage refused: the Runs page opens without the selection */ }
    });
    window.addEventListener("resize", function () { self.layout(); self.draw(); });
  };

  function init() {
    var form = document.getElementById("parallel-form");
    var colour = document.getElementById("pc-colour");
    if (form && colour) colour.addEventListener("change", function () { form.submit(); });
    var box = document.getElementById("parallel"), canvas = document.getElementById("pc-canvas");
    var src = document.getElementById("parallel-data");
    if (!box || !canvas || !src) return;
    var data = JSON.parse(src.textContent);
    if (!data || !data.runs || !data.runs.length || !data.axes.length) return;
    var plot = new Plot(box, canvas, data);
    plot.layout();
    plot.draw();
    plot.listen();
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
