/* NuBoard Charts (the Charts page and the run page's Charts tab): one run list for every chart
   (hide, highlight), a tooltip at the cursor, the cursor synced across charts, settings kept in
   the URL and per project in localStorage, a filter box, pinned charts, group lines with a
   min-max band, colours that follow the theme and the user's choice, and one zoom for every
   chart (each drawn only with the data fetched for its range). Numbers as text:
   static/chart_numbers.js. Everything a user wrote reaches the DOM as
   text (textContent), never as HTML; no inline scripts (the CSP allows only files). */
(function () {
  "use strict";

  function $(sel, root) { return (root || document).querySelector(sel); }
  function $$(sel, root) { return Array.prototype.slice.call((root || document).querySelectorAll(sel)); }

  var Num = window.NuBoardNumbers;      // static/chart_numbers.js
  var SYNC_KEY = "nuboard-charts";
  var UNSYNCED = { mousedown: 1, mouseup: 1, dblclick: 1 };
  var TIP_ROWS = 16;
  var DEFAULTS = { x: "step", rank: "0", smoothing: 0, smoothingKind: "ema", log: false, outliers: false, group: "", then: "",
                   agg: "mean", band: "minmax" };
  var AGGS = { mean: 1, median: 1 };
  var BANDS = { minmax: 1, std: 1, stderr: 1, none: 1 };
  var charts = [];
  var state = null;
  var pins = [];
  var hidden = {};          // legend key -> true while hidden on every chart
  var highlight = null;     // legend key hovered in the run list, or null
  var zoom = null;          // the page's x range [lo, hi] (every chart's), or null: the whole run
  var chosenColours = {};   // run id -> the colour its user set on this page (nuboard:colour)
  var root = null;
  var own = {};             // chart key -> its own settings {ymin, ymax, log, smoothing, kind} (?cs=)
  var plots = [];           // the user's charts of several scalars: [[name, ...], ...] (?plot=)
  var DASHES = [null, [6, 4], [2, 3], [10, 3, 2, 3]];   // the 2nd, 3rd... scalar of a chart

  /* ---- colours ---- */

  /* the run's colour as the page gives it (data-colour from the server's run_colours) */
  function colourFromTemplate(runId) {
    var li = root && root.querySelector('.legend-runs li[data-run="' + cssEscape(runId) + '"]');
    return li && li.dataset.colour ? li.dataset.colour : null;
  }

  /* a run's colour is the server's (nuboard/web/run_colours.py): on each series and in the run list */
  function runColour(runId) {
    return colourFromTemplate(runId) || "#7f7f7f";
  }

  function alpha(hex, a) {
    var m = /^#?([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/i.exec(hex || "");
    if (!m) return hex;
    return "rgba(" + parseInt(m[1], 16) + "," + parseInt(m[2], 16) + "," + parseInt(m[3], 16) + "," + a + ")";
  }

  function cssEscape(text) { return window.CSS && CSS.escape ? CSS.escape(text) : text.replace(/["\\]/g, "\\$&"); }

  /* the theme's colours (CSS variables on the page, light fallbacks) */
  function themeColours() {
    var css = window.getComputedStyle(document.documentElement);
    function v(name, fallback) { return (css.getPropertyValue(name) || "").trim() || fallback; }
    return { fg: v("--fg", "#1d2330"), muted: v("--muted", "#6b7280"), line: v("--line", "#e3e6ec"),
             grid: v("--grid", v("--line", "#e3e6ec")), card: v("--card", "#fff") };
  }

  /* ---- numbers ---- */

  /* Smoothing: the slider's value v (0..0.99) says how much, the kind says how.
     ema: TensorBoard's debiased exponential moving average with weight v (a null stays null;
       the average carries on past it, as it always has);
     mean: a centred running average of 2 * round(50 v) + 1 points (v 0.1: 11 points, 0.5: 51,
       0.99: 101), fewer at a segment's ends, where it averages the points it has;
     gauss: a Gaussian kernel of sigma 20 v points (v 0.5: sigma 10), cut at 3 sigma (at most
       60 points each side) and renormalised at a segment's ends, so a constant stays constant.
     For mean and gauss a null (a break, a gap) stays null and no window reaches across it.
     Pure functions, exposed as window.NuBoardSmoothing for tests; O(n) and O(n * window). */
  var SMOOTHING_KINDS = { ema: 1, mean: 1, gauss: 1 };

  function missing(y) { return y === null || y === undefined || !isFinite(y); }

  function smoothEma(ys, weight) {
    if (!weight) return ys;
    var out = new Array(ys.length), last = 0, n = 0;
    for (var i = 0; i < ys.length; i++) {
      var y = ys[i];
      if (missing(y)) { out[i] = y; continue; }
      last = last * weight + (1 - weight) * y; n++;
      out[i] = last / (1 - Math.pow(weight, n));
    }
    return out;
  }

  /* calls each(lo, hi) for every run [lo, hi) of finite values; out starts as a copy of ys */
  function bySegment(ys, each) {
    var i = 0, n = ys.length;
    while (i < n) {
      if (missing(ys[i])) { i++; continue; }
      var lo = i;
      while (i < n && !missing(ys[i])) i++;
      each(lo, i);
    }
  }

  function meanWindow(v) { return 2 * Math.round(50 * v) + 1; }

  function smoothMean(ys, points) {
    var half = Math.floor(points / 2), out = ys.slice();
    if (half < 1) return out;
    bySegment(ys, function (lo, hi) {
      var sums = new Float64Array(hi - lo + 1);       // prefix sums: O(n) whatever the window
      for (var i = lo; i < hi; i++) sums[i - lo + 1] = sums[i - lo] + ys[i];
      for (var j = lo; j < hi; j++) {
        var a = Math.max(lo, j - half), b = Math.min(hi, j + half + 1);
        out[j] = (sums[b - lo] - sums[a - lo]) / (b - a);
      }
    });
    return out;
  }

  function gaussSigma(v) { return 20 * v; }

  function smoothGauss(ys, sigma) {
    var out = ys.slice();
    if (!(sigma > 0)) return out;
    var half = Math.min(60, Math.ceil(3 * sigma)), w = new Float64Array(half + 1);
    for (var k = 0; k <= half; k++) w[k] = Math.exp(-(k * k) / (2 * sigma * sigma));
    bySegment(ys, function (lo, hi) {
      for (var j = lo; j < hi; j++) {
        var a = Math.max(lo, j - half), b = Math.min(hi - 1, j + half), sum = 0, total = 0;
        for (var i = a; i <= b; i++) { var wi = w[i > j ? i - j : j - i]; sum += wi * ys[i]; total += wi; }
        out[j] = sum / total;
      }
    });
    return out;
  }

  /* the series smoothed by v (0..0.99) of a kind (the page's unless given) */
  function smooth(ys, v, kind) {
    if (!v) return ys;
    kind = kind || (state && state.smoothingKind) || "ema";
    if (kind === "mean") return smoothMean(ys, meanWindow(v));
    if (kind === "gauss") return smoothGauss(ys, gaussSigma(v));
    return smoothEma(ys, v);
  }

  /* the slider's value as the user reads it: the weight, and the window or sigma it gives */
  function smoothingText(st) {
    var v = st.smoothing, text = v.toFixed(2);
    if (!v || st.smoothingKind === "ema") return text;
    if (st.smoothingKind === "mean") return text + " (" + meanWindow(v) + " points)";
    return text + " (\u03c3 " + Num.text(gaussSigma(v), false) + ")";
  }

  window.NuBoardSmoothing = { ema: smoothEma, mean: smoothMean, gauss: smoothGauss, apply: smooth,
                              meanWindow: meanWindow, gaussSigma: gaussSigma };

  /* the x of the tooltip's head: a step's digits, a date, a duration */
  function xLabel(v) {
    if (v === null || v === undefined) return "-";
    if (state.x === "wall") return new Date(v * 1000).toLocaleString();
    if (relativeAxis()) return Num.seconds(v);
    return Num.text(v, Number.isInteger(v));
  }

  /* the axes that count seconds from each run's start: wall time or process time */
  function relativeAxis() { return state.x === "relative" || state.x === "process"; }

  /* the settings a chart draws with: the page's, with the chart's own (?cs=) over them */
  function settingsOf(chart) {
    var o = chart && own[chart.key];
    if (!o) return state;
    var st = Object.assign({}, state);
    if (o.log !== undefined) st.log = o.log;
    if (o.smoothing !== undefined) st.smoothing = o.smoothing;
    if (o.kind !== undefined) st.smoothingKind = o.kind;
    st.ymin = o.ymin; st.ymax = o.ymax;
    return st;
  }

  /* the axis is another logged scalar (x=scalar:NAME): its name, else null */
  function xScalar() { return state.x.indexOf("scalar:") === 0 ? state.x.slice(7) : null; }

  /* ---- series: breaks, sparseness, ranges ---- */

  /* a null between two points whose x gap is far larger than the series' usual step (a fork's
     copied history and its own points, a pause in wall time): uPlot draws a gap there */
  function withBreaks(xs, ys) {
    if (xs.length < 4) return [xs, ys];
    var diffs = [], steps = [];
    for (var i = 1; i < xs.length; i++) {
      diffs.push(xs[i] - xs[i - 1]);
      if (xs[i] > xs[i - 1]) steps.push(xs[i] - xs[i - 1]);
    }
    steps.sort(function (a, b) { return a - b; });
    var typical = steps[Math.floor(steps.length / 2)];
    if (!(typical > 0)) return [xs, ys];
    // downsampled data pairs a bucket's min and max at nearly one x: a break is also a
    // twentieth of the whole span at least
    var limit = Math.max(typical * 20, (xs[xs.length - 1] - xs[0]) / 20), ox = [xs[0]], oy = [ys[0]];
    for (var j = 1; j < xs.length; j++) {
      if (diffs[j - 1] > limit) { ox.push((xs[j] + xs[j - 1]) / 2); oy.push(null); }
      ox.push(xs[j]); oy.push(ys[j]);
    }
    return [ox, oy];
  }

  /* few points, or a point with a gap on both sides: draw the points, not only the line */
  function isSparse(ys) {
    var n = 0;
    for (var i = 0; i < ys.length; i++) {
      if (ys[i] === null || ys[i] === undefined) continue;
      n++;
      var before = i === 0 || ys[i - 1] === null, after = i === ys.length - 1 || ys[i + 1] === null;
      if (before && after) return true;
    }
    return n <= 40;
  }

  /* the x range: the range the data was fetched for when zoomed (so the scale never changes
     without its data), else the data's; uPlot widens a lone x by itself (a day on a time axis),
     so a single point gets a small pad */
  function xRange(u, min, max, fetched) {
    if (fetched) return fetched.slice();
    if (min === null || min === undefined || !isFinite(min)) return [0, 1];
    if (u.data[0] && u.data[0].length === 1) min = max = u.data[0][0];
    if (min === max) {
      var pad = state.x === "wall" ? 60 : (relativeAxis() ? 1 : Math.max(1, Math.abs(min) * 0.1));
      return [min - pad, max + pad];
    }
    return [min, max];
  }

  /* the 1st to 99th percentile of the values drawn (shown series), padded a little */
  function percentileRange(u, meta, st) {
    var vals = [];
    u.series.forEach(function (s, i) {
      if (!i || !s.show || !meta[i] || meta[i].raw || meta[i].edge) return;
      var ys = u.data[i];
      for (var j = 0; j < ys.length; j++) {
        var y = ys[j];
        if (y !== null && y !== undefined && isFinite(y) && (!st.log || y > 0)) vals.push(y);
      }
    });
    if (vals.length < 10) return null;
    vals.sort(function (a, b) { return a - b; });
    var lo = vals[Math.floor(0.01 * (vals.length - 1))], hi = vals[Math.ceil(0.99 * (vals.length - 1))];
    if (st.log) return [lo / 1.2, hi * 1.2];
    var pad = (hi - lo) * 0.05 || Math.abs(lo) * 0.1 || 1;
    return [lo - pad, hi + pad];
  }

  function yRange(u, min, max, meta, st) {
    var auto = autoRange(u, min, max, meta, st);
    /* the chart's own y range: either end given wins, the other stays automatic */
    var lo = typeof st.ymin === "number" ? st.ymin : auto[0], hi = typeof st.ymax === "number" ? st.ymax : auto[1];
    return hi > lo ? [lo, hi] : auto;
  }

  function autoRange(u, min, max, meta, st) {
    if (st.outliers) {
      var r = percentileRange(u, meta, st);
      if (r) return r;
    }
    if (min === null || min === undefined || !isFinite(min) || !isFinite(max)) return st.log ? [0.1, 10] : [0, 1];
    if (min === max) {
      if (st.log) return [min / 2, max * 2];
      var pad = Math.abs(min) * 0.1 || 1;
      return [min - pad, max + pad];
    }
    return st.log ? uPlot.rangeLog(min, max, 10, true) : uPlot.rangeNum(min, max, 0.1, true);
  }

  /* ---- one chart ---- */

  /* the payload as uPlot's tables and series (with what the tooltip and legend need in meta) */
  function build(chart) {
    var payload = chart.payload, tables = [], meta = [null], keys = [], bands = [];
    var grouped = payload.groups && payload.groups.length, st = settingsOf(chart);
    var names = payload.names || [payload.name];
    function dashOf(line) { return DASHES[Math.max(0, names.indexOf(line.scalar)) % DASHES.length]; }
    if (grouped) {
      /* every group's band edges first, then every centre line: uPlot draws in series order,
         so no group's band tints another group's line */
      var lines = payload.groups.map(function (g) {
        var key = "g:" + JSON.stringify(g.value), colour = g.colour || "#7f7f7f";
        var centre = g[state.agg] || g.mean;
        var spread = bandOf(g, centre);
        var mean = smooth(centre, st.smoothing, st.smoothingKind);
        var lo = spread[0], hi = spread[1];
        if (st.log) {
          var pos = function (v) { return v !== null && v > 0 ? v : null; };
          mean = mean.map(pos); lo = lo.map(pos); hi = hi.map(pos);
        }
        tables.push([g.x, hi, lo]);
        var at = meta.length;
        meta.push({ key: key, colour: colour, edge: true, label: g.label });
        meta.push({ key: key, colour: colour, edge: true, label: g.label });
        bands.push({ series: [at, at + 1], fill: alpha(colour, 0.15) });
        /* the legend names the group once, without the scalar a chart of several adds */
        var suffix = names.length > 1 && g.scalar ? " \u00b7 " + g.scalar : "";
        var plain = suffix && g.label.slice(-suffix.length) === suffix ? g.label.slice(0, -suffix.length) : g.label;
        if (!keys.some(function (k) { return k.key === key; })) keys.push({ key: key, label: plain, colour: colour, count: g.count });
        return { g: g, key: key, colour: colour, mean: mean };
      });
      lines.forEach(function (l) {
        tables.push([l.g.x, l.mean]);
        meta.push({ key: l.key, colour: l.colour, label: l.g.label + " (" + l.g.count + ")", sparse: isSparse(l.mean), dash: dashOf(l.g) });
      });
    } else {
      payload.series.forEach(function (s) {
        var colour = (!s.rank && chosenColours[s.run]) || s.colour || runColour(s.run);
        var ys = st.log ? s.y.map(function (v) { return v !== null && v > 0 ? v : null; }) : s.y;
        var broken = withBreaks(s.x, ys), xs = broken[0], raw = broken[1];
        var sparse = isSparse(raw);
        if (st.smoothing) {
          tables.push([xs, raw, smooth(raw, st.smoothing, st.smoothingKind)]);
          meta.push({ key: s.run, colour: colour, raw: true, label: s.label, sparse: sparse, dash: dashOf(s) });
        } else {
          tables.push([xs, raw]);
        }
        meta.push({ key: s.run, colour: colour, label: s.label, sparse: sparse, dash: dashOf(s) });
      });
    }
    if (!tables.length) return null;
    /* NULL_EXPAND (2): a null (a break, a gap) spreads over the holes the join leaves beside
       it where other runs have an x, so the line stays broken with other runs on the chart
       (the default keeps the lone null, and uPlot draws on across the holes) */
    var nullModes = tables.map(function (t) { return t.map(function (_c, i) { return i ? 2 : 0; }); });
    return { data: uPlot.join(tables, nullModes), meta: meta, bands: bands, groupKeys: keys };
  }

  /* the band around a group's centre line, as the page's band choice says: [low, high] */
  function bandOf(g, centre) {
    if (state.band === "none") return [g.x.map(function () { return null; }), g.x.map(function () { return null; })];
    if (state.band === "minmax" || !g.std) return [g.min, g.max];
    var lo = [], hi = [];
    centre.forEach(function (c, i) {
      var sd = g.std[i], n = g.n ? g.n[i] : null;
      var d = sd === null || sd === undefined || c === null ? null
        : (state.band === "stderr" ? (n ? sd / Math.sqrt(n) : null) : sd);
      lo.push(d === null ? null : c - d);
      hi.push(d === null ? null : c + d);
    });
    return [lo, hi];
  }

  function groupList() {
    return [state.group, state.then].filter(function (k, i, all) { return k && all.indexOf(k) === i; });
  }

  function strokeFor(m) {
    return function () {
      var a = m.raw ? 0.25 : 1;
      if (highlight && highlight !== m.key) a *= 0.15;
      return m.edge ? "rgba(0,0,0,0)" : alpha(m.colour, a);
    };
  }

  function makeOptions(chart, built, width) {
    var theme = themeColours();
    var st = settingsOf(chart);
    var series = [{ label: xScalar() || (state.x === "step" ? "step" : (state.x === "wall" ? "time" : (state.x === "process" ? "process time" : "elapsed"))) }];
    built.meta.slice(1).forEach(function (m) {
      series.push({
        label: m.label, stroke: strokeFor(m), width: m.raw ? 1 : (m.edge ? 0 : 1.6), spanGaps: false,
        dash: m.dash || undefined,
        show: !hidden[m.key],
        points: { show: function () { return !!m.sparse && !m.raw; }, size: 5, fill: strokeFor(m), stroke: strokeFor(m) }
      });
    });
    var axis = { stroke: theme.muted, grid: { stroke: theme.grid, width: 1 }, ticks: { stroke: theme.grid, width: 1 } };
    var xAxis = Object.assign({}, axis);
    if (relativeAxis()) {
      xAxis.incrs = Num.SECOND_INCRS;
      xAxis.values = function (u, vals, ai, space, incr) { return vals.map(function (v) { return v === null ? "" : Num.seconds(v, incr); }); };
    } else if (state.x === "wall") {
      xAxis.space = 80;           // room for uPlot's two-line date labels
    } else {
      if (!xScalar()) xAxis.incrs = Num.STEP_INCRS;     // a logged scalar's x may be fractional
      xAxis.space = 60;
      xAxis.values = function (u, vals) { return Num.distinct(vals, Num.si); };
    }
    /* the labels drawn (on the canvas) kept on the figure too: data-x-ticks, data-y-ticks */
    function kept(which, values) {
      return function (u, vals, ai, space, incr) {
        var labels = values(u, vals, ai, space, incr);
        chart.el.dataset[which] = labels.filter(function (l) { return l !== ""; }).join("|");
        return labels;
      };
    }
    if (state.x !== "wall") xAxis.values = kept("xTicks", xAxis.values);
    var range = function (u, min, max) { return yRange(u, min, max, chart.meta, st); };
    /* the y axis as wide as its widest label (measured in its font), so no label is clipped */
    var yAxis = Object.assign({}, axis, {
      font: Num.AXIS_FONT,
      values: kept("yTicks", function (u, vals) { return Num.distinct(vals, Num.tick); }),
      size: function (u, values) { return Math.max(40, Math.ceil(Num.widest(values) + 10 + 5 + 6)); }
    });
    xAxis.font = Num.AXIS_FONT;
    return {
      width: width, height: +chart.el.dataset.plotHeight || 240, series: series, bands: built.bands,
      scales: { x: { time: state.x === "wall", range: function (u, min, max) { return xRange(u, min, max, chart.range); } },
                y: st.log ? { distr: 3, range: range } : { range: range } },
      axes: [xAxis, yAxis],
      legend: { show: false },
      focus: { alpha: 0.35 },
      /* the cursor is synced, but not a drag or a double-click: those set the page's zoom
         (zoomTo), and uPlot never changes a scale by itself (drag.setScale false, its own
         double-click unbound): a chart's x changes only with the data fetched for it */
      cursor: { y: false, focus: { prox: 24 }, drag: { x: true, y: false, setScale: false }, points: { size: 7 },
                sync: { key: SYNC_KEY, setSeries: false, filters: { pub: function (type) { return !UNSYNCED[type]; } } },
                bind: { dblclick: function () { return null; } } },
      hooks: {
        setSelect: [function (u) {
          var left = u.select.left, width = u.select.width;
          if (width < 2) return;
          u.setSelect({ left: 0, width: 0, top: 0, height: 0 }, false);
          zoomTo([u.posToVal(left, "x"), u.posToVal(left + width, "x")]);
        }],
        setCursor: [function (u) { tooltip(chart, u); }],
        draw: [function (u) {
          chart.el.dataset.ymin = String(u.scales.y.min);
          chart.el.dataset.ymax = String(u.scales.y.max);
          chart.el.dataset.xmin = String(u.scales.x.min);
          chart.el.dataset.xmax = String(u.scales.x.max);
          chart.el.dataset.view = u.scales.x.min + "," + u.scales.x.max;
          chart.el.dataset.fetched = chart.range ? chart.range.join(",") : "";
          chart.el.dataset.drawn = "1";
        }]
      }
    };
  }

  /* the value of series i nearest to index idx (the joined table has holes where runs' x differ) */
  function valueNear(u, i, idx) {
    var ys = u.data[i], left = true, right = true;
    if (ys[idx] === null) return null;             // in a gap of this series
    for (var d = 0; d < 64 && (left || right); d++) {
      var a = ys[idx - d], b = ys[idx + d];
      if (left && a !== undefined) { if (a !== null) return a; left = false; }
      if (right && b !== undefined) { if (b !== null) return b; right = false; }
      if (idx - d <= 0) left = false;
      if (idx + d >= ys.length - 1) right = false;
    }
    return null;
  }

  function tooltip(chart, u) {
    var tip = chart.tip, idx = u.cursor.idx, over = u.root.querySelector(".u-over");
    if (!over || !over.matches(":hover") || idx === null || idx === undefined || u.cursor.left < 0) { tip.hidden = true; return; }
    var rows = [];
    u.series.forEach(function (s, i) {
      var m = chart.meta[i];
      if (!i || !s.show || !m || m.raw || m.edge) return;
      var v = valueNear(u, i, idx);
      if (v === null || !isFinite(v)) return;
      rows.push({ label: m.label, colour: m.colour, value: v, pos: u.valToPos(v, "y") });
    });
    if (!rows.length) { tip.hidden = true; return; }
    var nearest = rows.reduce(function (a, b) { return Math.abs(b.pos - u.cursor.top) < Math.abs(a.pos - u.cursor.top) ? b : a; });
    rows.sort(function (a, b) { return b.value - a.value; });
    var more = 0;
    if (rows.length > TIP_ROWS) {        // the largest, and the nearest wherever it ranks
      var keep = rows.slice(0, TIP_ROWS);
      if (keep.indexOf(nearest) < 0) keep[TIP_ROWS - 1] = nearest;
      more = rows.length - TIP_ROWS;
      rows = keep;
    }
    tip.textContent = "";
    var head = document.createElement("div");
    head.className = "tip-x";
    head.textContent = (state.x === "step" ? "step " : xScalar() ? xScalar() + " " : "") + xLabel(u.data[0][idx]);
    tip.appendChild(head);
    rows.forEach(function (r) {
      var row = document.createElement("div");
      row.className = "tip-row" + (r === nearest ? " nearest" : "");
      var sw = document.createElement("span");
      sw.className = "swatch";
      sw.style.background = r.colour;
      var name = document.createElement("span");
      name.className = "tip-name";
      name.textContent = r.label;
      var val = document.createElement("span");
      val.className = "tip-value";
      val.textContent = Num.text(r.value);
      row.appendChild(sw); row.appendChild(name); row.appendChild(val);
      tip.appendChild(row);
    });
    if (more) {
      var rest = document.createElement("div");
      rest.className = "tip-x";
      rest.textContent = "and " + more + " more";
      tip.appendChild(rest);
    }
    tip.hidden = false;
    var box = chart.el.getBoundingClientRect(), ob = over.getBoundingClientRect();
    var left = ob.left - box.left + u.cursor.left + 14, top = ob.top - box.top + u.cursor.top + 14;
    if (left + tip.offsetWidth > box.width) left = Math.max(0, left - tip.offsetWidth - 28);
    if (top + tip.offsetHeight > box.height) top = Math.max(0, top - tip.offsetHeight - 28);
    tip.style.left = left + "px";
    tip.style.top = top + "px";
  }

  /* fresh: new data for the same settings (live polling): the chart keeps its plot (and the
     tooltip its place) when the series are the same, else it is made again */
  function draw(chart, fresh) {
    var plotEl = $(".plot", chart.el);
    var note = $(".chart-note", chart.el);
    var built = chart.payload ? build(chart) : null;
    var shape = built && JSON.stringify([settingsOf(chart), plotEl.clientWidth, built.meta.slice(1).map(function (m) {
      return [m.key, m.label, m.colour, !!m.raw, !!m.edge, !!m.sparse];
    })]);
    if (fresh && built && chart.plot && chart.shape === shape) {
      chart.meta = built.meta;
      chart.plot.setData(built.data);      // x: the range fetched (xRange), with its data
      describe(chart, note);
      return;
    }
    if (chart.plot) { chart.plot.destroy(); chart.plot = null; }
    plotEl.textContent = "";
    chart.tip.hidden = true;
    chart.shape = shape;
    if (!built) {
      note.textContent = state.group ? "No points for these groups at this rank." : "No points for these runs at this rank.";
      chart.el.dataset.series = "";
      return;
    }
    var width = Math.max(280, plotEl.clientWidth || chart.el.clientWidth || 400);
    var opts = makeOptions(chart, built, width);
    chart.meta = built.meta;
    chart.el.dataset.series = built.meta.slice(1).filter(function (m) { return !m.raw && !m.edge; })
      .map(function (m) { return m.label; }).join("\n");
    chart.el.dataset.xLabel = opts.series[0].label;
    var plot = new uPlot(opts, built.data, plotEl);
    chart.plot = plot;
    $(".u-over", plot.root).addEventListener("mouseleave", function () { chart.tip.hidden = true; });
    if (built.groupKeys.length && JSON.stringify(chart.payload.grouped_by) === JSON.stringify(groupList())) {
      groupLegend(built.groupKeys);
    }
    describe(chart, note);
    chart.el.dispatchEvent(new CustomEvent("nuboard:chart-drawn", { bubbles: true }));
  }

  function describe(chart, note) {
    var total = 0, sent = 0, payload = chart.payload;
    var parts = payload.groups && payload.groups.length ? payload.groups.length + " groups" : payload.series.length + " series";
    (payload.series || []).forEach(function (s) { total += s.in_range || 0; sent += s.sent || 0; });
    note.textContent = parts + (total ? " · " + total.toLocaleString() + " points" : "") +
      (sent < total ? ", " + sent.toLocaleString() + " drawn (min and max per bucket)" : "") +
      (chart.range ? " · zoomed, as every chart (double-click to reset)" : "");
  }

  /* ask for the chart's data for the page's zoom; only the latest answer is drawn, and its
     range (chart.range, data-fetched) goes with it */
  function fetchChart(chart) {
    var want = zoom ? zoom.slice() : null;
    var params = new URLSearchParams({ runs: root.dataset.runs, x: state.x,
                                       rank: state.rank, buckets: String(chart.buckets()) });
    chart.names.forEach(function (n) { params.append("name", n); });
    groupList().forEach(function (k) { params.append("group", k); });
    if (want) { params.set("lo", want[0]); params.set("hi", want[1]); }
    var seq = ++chart.seq;
    chart.asked = params;
    chart.el.dataset.asked = want ? want.join(",") : "";
    return fetch(root.dataset.api + "?" + params.toString(), { headers: { Accept: "application/json" } })
      .then(function (r) {
        if (r.ok) return r.json();
        return r.text().then(function (body) { throw new Error(serverMessage(r, body)); });
      })
      .then(function (payload) {
        if (seq !== chart.seq) return;
        chart.payload = payload;
        chart.range = want;
        chart.el.classList.remove("failed");
        showStatus(payload.status || {});
        draw(chart, true);
      })
      .catch(function (err) {
        if (seq !== chart.seq) return;
        if (chart.plot) { chart.plot.destroy(); chart.plot = null; }   // no plot of other settings
        chart.payload = null;
        chart.shape = null;
        $(".plot", chart.el).textContent = "";
        chart.tip.hidden = true;
        chart.el.classList.add("failed");
        chart.el.dataset.view = "";
        chart.el.dataset.error = err.message || String(err);
        $(".chart-note", chart.el).textContent = "Could not load this chart: " + (err.message || err);
      });
  }

  /* what a failed data request says: the JSON's error (or message), else the error page's
     message (or its text), after the status */
  function serverMessage(r, body) {
    var said = "";
    try {
      var doc = JSON.parse(body);
      said = doc && (doc.error || doc.message) ? String(doc.error || doc.message) : "";
    } catch (e) {
      var page = new DOMParser().parseFromString(body, "text/html");
      var main = ["main .error", "h1", "title"].map(function (sel) { return page.querySelector(sel); })
        .filter(function (el) { return el && el.textContent.trim(); })[0];
      said = main ? main.textContent.replace(/\s+/g, " ").trim().slice(0, 300) : "";
    }
    var status = r.status + (r.statusText ? " " + r.statusText : "");
    return said ? said + " (" + status + ")" : status;
  }

  /* the page's zoom: every chart asks for this range (a chart not yet seen, when it comes into
     view) and takes it with the data that answers; null is the whole run */
  function zoomTo(range) {
    if (range && !(range[1] > range[0])) return;
    zoom = range;
    root.dataset.zoom = zoom ? zoom.join(",") : "";
    charts.forEach(function (c) { if (c.visible) fetchChart(c); });
  }

  /* each run's badge in the run list takes the status the latest data says (finished, lost) */
  function showStatus(statuses) {
    $$(".legend-runs li[data-run]", root).forEach(function (li) {
      var status = statuses[li.dataset.run];
      var badge = li.querySelector(".badge");
      if (!status || !badge || badge.textContent === status) return;
      badge.textContent = status;
      badge.className = "badge status-" + status;
    });
  }

  /* ---- the run list (legend): hide and highlight on every chart ---- */

  function legendKey(li) { return li.dataset.run !== undefined ? li.dataset.run : "g:" + li.dataset.group; }

  function applyHidden(key) {
    charts.forEach(function (c) {
      if (!c.plot) return;
      c.plot.series.forEach(function (s, i) {
        var m = c.meta[i];
        if (i && m && m.key === key) c.plot.setSeries(i, { show: !hidden[key] });
      });
    });
  }

  function setHighlight(key) {
    if (highlight === key) return;
    highlight = key;
    charts.forEach(function (c) { if (c.plot) c.plot.redraw(false, false); });
  }

  function initLegend() {
    root.addEventListener("click", function (ev) {
      var li = ev.target.closest ? ev.target.closest(".legend-runs li, .legend-groups li") : null;
      if (!li || ev.target.closest("a, input")) return;
      var key = legendKey(li);
      if (hidden[key]) delete hidden[key]; else hidden[key] = true;
      li.classList.toggle("off", !!hidden[key]);
      var button = $(".swatch", li);
      if (button) button.setAttribute("aria-pressed", hidden[key] ? "false" : "true");
      applyHidden(key);
    });
    root.addEventListener("mouseover", function (ev) {
      var li = ev.target.closest ? ev.target.closest(".legend-runs li, .legend-groups li") : null;
      setHighlight(li ? legendKey(li) : null);
    });
    $$(".legend-runs, .legend-groups", root).forEach(function (ul) {
      ul.addEventListener("mouseleave", function () { setHighlight(null); });
    });
    $$(".legend-runs li[data-run]", root).forEach(function (li) {
      var colour = runColour(li.dataset.run);
      li.style.setProperty("--run-colour", colour);
      if (!li.dataset.colour) li.dataset.colour = colour;
    });
  }

  /* the groups' legend, made from what the data says (value, label, colour, count) */
  function groupLegend(keys) {
    var ul = $(".legend-groups", root);
    if (!ul) return;
    keys.forEach(function (k) {
      var value = k.key.slice(2);
      if (ul.querySelector('li[data-group="' + cssEscape(value) + '"]')) return;
      var li = document.createElement("li");
      li.dataset.group = value;
      li.style.setProperty("--run-colour", k.colour);
      if (hidden[k.key]) li.classList.add("off");
      var sw = document.createElement("button");
      sw.type = "button"; sw.className = "swatch"; sw.setAttribute("aria-label", "show or hide");
      sw.setAttribute("aria-pressed", hidden[k.key] ? "false" : "true");
      var name = document.createElement("span");
      name.textContent = k.label + " ";
      var count = document.createElement("span");
      count.className = "muted";
      count.textContent = "(" + k.count + (k.count === 1 ? " run)" : " runs)");
      li.appendChild(sw); li.appendChild(name); li.appendChild(count);
      ul.appendChild(li);
    });
  }

  function showLegends() {
    var runs = $(".legend-runs", root), groups = $(".legend-groups", root);
    if (groups) { groups.hidden = !state.group; groups.textContent = ""; }   // the new grouping's only
    if (runs) runs.classList.toggle("grouped", !!state.group);
    $$(".group-only", root).forEach(function (el) { el.hidden = !state.group; });
  }

  /* ---- settings: URL first, then what this project last used, then the defaults ---- */

  function storageKey() { return "nuboard:charts:" + root.dataset.project; }

  function stored() {
    try { return JSON.parse(window.localStorage.getItem(storageKey())) || {}; } catch (e) { return {}; }
  }

  function save() {
    try {
      window.localStorage.setItem(storageKey(), JSON.stringify({
        x: state.x, rank: state.rank, smoothing: state.smoothing, smoothingKind: state.smoothingKind,
        log: state.log,
        outliers: state.outliers, pins: pins,
        // a page without the group select (the run page) keeps the Charts page's choice
        group: $("#group-by") ? state.group : stored().group,
        then: $("#group-by") ? state.then : stored().then,
        agg: state.agg, band: state.band, cs: own, plots: plots }));
    } catch (e) { /* private mode: the URL still keeps them */ }
  }

  function hasOption(select, value) {
    return !!select && $$("option", select).some(function (o) { return o.value === value; });
  }

  function loadSettings() {
    var saved = stored(), url = new URLSearchParams(window.location.search);
    var s = Object.assign({}, DEFAULTS);
    ["x", "rank", "smoothing", "smoothingKind", "log", "outliers", "group", "then", "agg", "band"].forEach(function (k) {
      if (saved[k] !== undefined && saved[k] !== null) s[k] = saved[k];
    });
    ["x", "rank", "agg", "band"].forEach(function (k) { if (url.has(k)) s[k] = url.get(k); });
    if (url.has("group")) { var keys = url.getAll("group"); s.group = keys[0] || ""; s.then = keys[1] || ""; }
    if (url.has("smoothing")) s.smoothing = url.get("smoothing");
    if (url.has("smoothing_kind")) s.smoothingKind = url.get("smoothing_kind");
    ["log", "outliers"].forEach(function (k) { if (url.has(k)) s[k] = url.get(k) === "1"; });
    s.smoothing = Math.max(0, Math.min(0.99, parseFloat(s.smoothing) || 0));
    if (!SMOOTHING_KINDS[s.smoothingKind]) s.smoothingKind = DEFAULTS.smoothingKind;
    s.log = !!s.log; s.outliers = !!s.outliers;
    if (!hasOption($("#x-axis"), s.x)) s.x = DEFAULTS.x;
    if (!hasOption($("#rank"), String(s.rank))) s.rank = $("#rank") ? $("#rank").value : "0";
    if (!hasOption($("#group-by"), s.group)) s.group = "";
    if (!s.group || !hasOption($("#group-then"), s.then)) s.then = "";
    if (!AGGS[s.agg]) s.agg = DEFAULTS.agg;
    if (!BANDS[s.band]) s.band = DEFAULTS.band;
    state = s;
    own = {};
    var wanted = saved.cs;
    if (url.has("cs")) { try { wanted = JSON.parse(url.get("cs")); } catch (e) { wanted = null; } }
    if (wanted && typeof wanted === "object") Object.keys(wanted).forEach(function (k) {
      var o = window.NuBoardChartOwn ? window.NuBoardChartOwn.check(wanted[k]) : null;
      if (o) own[k] = o;
    });
    var asked = url.has("plot") ? url.getAll("plot").map(function (t) { try { return JSON.parse(t); } catch (e) { return null; } })
      : (Array.isArray(saved.plots) ? saved.plots : []);
    plots = asked.filter(function (names) {
      return Array.isArray(names) && names.length >= 1 && names.length <= 10 &&
        names.every(function (n) { return typeof n === "string" && n; });
    });
    pins = Array.isArray(saved.pins) ? saved.pins.filter(function (p) { return typeof p === "string"; }) : [];
    $("#x-axis").value = s.x;
    if ($("#rank")) $("#rank").value = String(s.rank);
    if ($("#group-by")) $("#group-by").value = s.group;
    if ($("#group-then")) $("#group-then").value = s.then;
    if ($("#group-agg")) $("#group-agg").value = s.agg;
    if ($("#group-band")) $("#group-band").value = s.band;
    $("#smoothing").value = String(s.smoothing);
    if ($("#smoothing-kind")) $("#smoothing-kind").value = s.smoothingKind;
    $("#log-scale").checked = s.log;
    if ($("#outliers")) $("#outliers").checked = s.outliers;
    $("#smoothing-value").textContent = smoothingText(s);
  }

  function readControls() {
    state = {
      x: $("#x-axis").value,
      rank: $("#rank") ? $("#rank").value : "0",
      smoothing: parseFloat($("#smoothing").value) || 0,
      smoothingKind: $("#smoothing-kind") && SMOOTHING_KINDS[$("#smoothing-kind").value]
        ? $("#smoothing-kind").value : DEFAULTS.smoothingKind,
      log: $("#log-scale").checked,
      outliers: $("#outliers") ? $("#outliers").checked : false,
      group: $("#group-by") ? $("#group-by").value : "",
      then: $("#group-then") && $("#group-by") && $("#group-by").value ? $("#group-then").value : "",
      agg: $("#group-agg") ? $("#group-agg").value : DEFAULTS.agg,
      band: $("#group-band") ? $("#group-band").value : DEFAULTS.band
    };
    $("#smoothing-value").textContent = smoothingText(state);
  }

  function updateUrl() {
    var params = new URLSearchParams(window.location.search);
    params.set("x", state.x); params.set("rank", state.rank);
    params.set("smoothing", String(state.smoothing));
    if (state.smoothingKind !== DEFAULTS.smoothingKind) params.set("smoothing_kind", state.smoothingKind);
    else params.delete("smoothing_kind");
    params.set("log", state.log ? "1" : "0");
    params.set("outliers", state.outliers ? "1" : "0");
    params.delete("group");
    groupList().forEach(function (k) { params.append("group", k); });
    if (state.group && state.agg !== DEFAULTS.agg) params.set("agg", state.agg); else params.delete("agg");
    if (state.group && state.band !== DEFAULTS.band) params.set("band", state.band); else params.delete("band");
    if (Object.keys(own).length) params.set("cs", JSON.stringify(own)); else params.delete("cs");
    params.delete("plot");
    plots.forEach(function (names) { params.append("plot", JSON.stringify(names)); });
    window.history.replaceState(null, "", window.location.pathname + "?" + params.toString());
  }

  /* ---- the run list: a box that finds runs in it, and folding (a long list takes two
     lines until unfolded); neither changes what the charts draw ---- */

  function wireRunList() {
    var list = $(".legend-runs", root), box = $("#run-filter", root), fold = $("#runs-fold", root);
    if (!list) return;
    function setFolded(folded) {
      if (!fold) return;
      list.classList.toggle("folded", folded);
      fold.setAttribute("aria-expanded", folded ? "false" : "true");
      fold.textContent = folded ? "Show all " + fold.dataset.count + " runs" : "Fold the list";
    }
    if (fold) fold.addEventListener("click", function () { setFolded(!list.classList.contains("folded")); });
    if (box) box.addEventListener("input", function () {
      var text = box.value.trim().toLowerCase(), shown = 0;
      $$("li[data-run]", list).forEach(function (li) {
        var match = !text || li.textContent.toLowerCase().indexOf(text) >= 0;
        li.classList.toggle("unmatched", !match);
        if (match) shown++;
      });
      var count = $("#run-filter-count", root);
      if (count) count.textContent = text ? shown + " of " + fold.dataset.count + " runs" : "";
      if (text) setFolded(false);
    });
  }

  /* ---- filter box and pins ---- */

  function applyFilter() {
    var box = $("#chart-filter");
    var text = box ? box.value.trim().toLowerCase() : "";
    charts.forEach(function (c) { c.el.hidden = !!text && c.name.toLowerCase().indexOf(text) < 0; });
    $$(".chart-group", root).forEach(function (g) {
      var figs = $$("figure.chart", g);
      g.hidden = !figs.length || figs.every(function (f) { return f.hidden; });
    });
  }

  function placePin(chart) {
    var pinned = pins.indexOf(chart.name) >= 0;
    var button = $("button.pin", chart.el);
    if (button) {
      button.setAttribute("aria-pressed", pinned ? "true" : "false");
      button.textContent = pinned ? "\u2605" : "\u2606";
      button.title = pinned ? "Unpin" : "Pin to the top";
    }
    var grid = pinned ? $(".chart-group.pinned .chart-grid", root) : chart.home;
    if (!grid || chart.el.parentNode === grid) return false;
    var after = $$("figure.chart", grid).filter(function (f) {
      return pinned ? pins.indexOf(f._chart.name) > pins.indexOf(chart.name) : f._chart.order > chart.order;
    })[0];
    grid.insertBefore(chart.el, after || null);
    return true;
  }

  function placePins() {
    charts.forEach(function (c) { if (placePin(c) && c.payload) draw(c); });
    applyFilter();
  }

  /* ---- what a chart drew, for static/chart_tools.js (CSV, PNG, full screen) ---- */

  /* {name, xLabel, x: [...], columns: [{label, run, line: "line"|"raw"|"low"|"high", shown,
     values: [...]}], query: the data request's query string (URLSearchParams)}, the values as
     drawn (smoothed, log-masked) on uPlot's joined x; null before the chart has drawn */
  function drawn(fig) {
    var chart = fig && fig._chart;
    if (!chart || !chart.plot) return null;
    var data = chart.plot.data, columns = [];
    chart.meta.forEach(function (m, i) {
      if (!i || !m) return;
      var line = m.raw ? "raw" : m.edge ? (columns.length && columns[columns.length - 1].line === "high" ? "low" : "high") : "line";
      columns.push({ label: m.label, run: m.key, line: line, colour: m.colour, shown: chart.plot.series[i].show !== false,
                     values: Array.prototype.slice.call(data[i]) });
    });
    return { name: chart.name, xLabel: chart.el.dataset.xLabel || "x", x: Array.prototype.slice.call(data[0]),
             columns: columns, query: new URLSearchParams(chart.asked ? chart.asked.toString() : "") };
  }

  /* draw a chart again at its box's new size (after it went full screen, or came back) */
  function redraw(fig) {
    var chart = fig && fig._chart;
    if (chart && chart.payload) { chart.shape = null; draw(chart); }
  }

  window.NuBoardCharts = { drawn: drawn, redraw: redraw };

  /* ---- the charts: each figure (a scalar's, or the user's of several), its own settings ---- */

  var watch = null;          // starts watching a chart's figure for when it comes into view

  function chartKey(names) { return names.length > 1 ? "+" + JSON.stringify(names) : names[0]; }

  function addChart(el, names) {
    var tip = document.createElement("div");
    tip.className = "chart-tip";
    tip.hidden = true;
    el.appendChild(tip);
    var chart = { el: el, names: names, name: names.join(" + "), key: chartKey(names), range: null, seq: 0,
                  plot: null, payload: null, visible: false, tip: tip, order: charts.length, home: el.parentNode,
                  buckets: function () {
                    /* 1000 (the server's default, which it computes ahead for the first charts)
                       up to 1000 px wide, one a pixel above, at most 2000 */
                    var w = Math.round(el.clientWidth || 600);
                    return w <= 1000 ? 1000 : Math.min(2000, w); } };
    el._chart = chart;
    el.addEventListener("dblclick", function (ev) {   // on the plot: every chart back to the whole run
      if (ev.target.closest(".plot") && (zoom || charts.some(function (c) { return c.range; }))) zoomTo(null);
    });
    var pin = $("button.pin", el);
    if (pin) pin.addEventListener("click", function () {
      var at = pins.indexOf(chart.name);
      if (at >= 0) pins.splice(at, 1); else pins.push(chart.name);
      save(); placePins();
    });
    ownSettings(chart);
    charts.push(chart);
    if (watch) watch(el);
    return chart;
  }

  /* the chart's settings button and form (static/chart_own.js): its own y range, log scale and
     smoothing win over the page's for this chart until Reset */
  function ownSettings(chart) {
    var caption = $("figcaption", chart.el), Own = window.NuBoardChartOwn;
    if (!caption || !Own) return;
    var button = document.createElement("button");
    button.type = "button";
    button.className = "chart-own-toggle";
    button.textContent = "\u2699";
    button.title = "This chart's settings";
    button.setAttribute("aria-label", "settings of " + chart.name);
    button.setAttribute("aria-expanded", "false");
    var form = Own.form(own[chart.key], function (settings) {
      if (settings) own[chart.key] = settings; else delete own[chart.key];
      chart.el.classList.toggle("own-settings", !!settings);
      updateUrl(); save();
      if (chart.payload) draw(chart);
    });
    chart.el.classList.toggle("own-settings", !!own[chart.key]);
    button.addEventListener("click", function () {
      form.hidden = !form.hidden;
      button.setAttribute("aria-expanded", form.hidden ? "false" : "true");
    });
    caption.insertBefore(button, $("button.pin, button.chart-remove", caption));
    caption.parentNode.insertBefore(form, caption.nextSibling);
  }

  /* a figure for the user's chart of several scalars, in the "Your charts" section */
  function plotFigure(names) {
    var fig = document.createElement("figure");
    fig.className = "chart plot-of-several";
    fig.dataset.names = JSON.stringify(names);
    var caption = document.createElement("figcaption");
    var title = document.createElement("span");
    title.className = "chart-name";
    title.textContent = names.join(" + ");
    var remove = document.createElement("button");
    remove.type = "button";
    remove.className = "chart-remove";
    remove.textContent = "\u00d7";
    remove.title = "Remove this chart";
    remove.setAttribute("aria-label", "remove the chart of " + names.join(", "));
    remove.addEventListener("click", function () {
      var key = chartKey(names);
      plots = plots.filter(function (p) { return chartKey(p) !== key; });
      delete own[key];
      charts = charts.filter(function (c) { return c.el !== fig; });
      if (fig._chart.plot) fig._chart.plot.destroy();
      fig.remove();
      $(".chart-group.custom", root).hidden = !plots.length;
      updateUrl(); save();
    });
    caption.appendChild(title); caption.appendChild(remove);
    var plot = document.createElement("div");
    plot.className = "plot";
    var note = document.createElement("p");
    note.className = "chart-note muted";
    fig.appendChild(caption); fig.appendChild(plot); fig.appendChild(note);
    $(".chart-group.custom .chart-grid", root).appendChild(fig);
    return fig;
  }

  /* the New chart box: tick scalars (up to 10), Add chart draws them on one chart */
  function initNewChart() {
    var box = $("#new-chart", root);
    if (!box) return;
    var find = $("#new-chart-find", box), add = $("#new-chart-add", box), msg = $("#new-chart-msg", box);
    find.addEventListener("input", function () {
      var text = find.value.trim().toLowerCase();
      $$("li", box).forEach(function (li) { li.hidden = !!text && li.textContent.toLowerCase().indexOf(text) < 0; });
    });
    find.addEventListener("keydown", function (ev) { if (ev.key === "Enter") ev.preventDefault(); });
    add.addEventListener("click", function () {
      var names = $$("input[type=checkbox]:checked", box).map(function (c) { return c.value; });
      if (names.length < 1 || names.length > 10) {
        msg.textContent = names.length ? "A chart draws at most 10 scalars: " + names.length + " are ticked."
                                       : "Tick the scalars to draw on one chart.";
        return;
      }
      msg.textContent = "";
      if (plots.some(function (p) { return chartKey(p) === chartKey(names); })) return;
      plots.push(names);
      $(".chart-group.custom", root).hidden = false;
      var chart = addChart(plotFigure(names), names);
      $$("input[type=checkbox]:checked", box).forEach(function (c) { c.checked = false; });
      box.open = false;
      updateUrl(); save();
      chart.visible = true;
      fetchChart(chart);
    });
  }

  /* ---- the page ---- */

  function initCharts() {
    root = $("#charts");
    if (!root || !window.uPlot || !root.dataset.runs) return;
    loadSettings();
    updateUrl();
    root.dataset.zoom = "";
    showLegends();
    initLegend();
    var observer = new IntersectionObserver(function (entries) {
      entries.forEach(function (e) {
        if (!e.isIntersecting) return;
        var chart = e.target._chart;
        observer.unobserve(e.target);
        chart.visible = true;
        fetchChart(chart);
      });
    }, { rootMargin: "200px" });
    watch = function (el) { observer.observe(el); };
    $$(".chart", root).forEach(function (el) { addChart(el, [el.dataset.name]); });
    plots.forEach(function (names) { addChart(plotFigure(names), names); });
    $(".chart-group.custom", root).hidden = !plots.length;
    initNewChart();
    placePins();
    /* the charts in the first screen are asked for now, not after the observer's first callback
       (a frame later): the server starts on them while the page finishes loading */
    charts.forEach(function (chart) {
      var box = chart.el.getBoundingClientRect();
      if (box.height && box.top < window.innerHeight + 200 && box.bottom > -200) {
        observer.unobserve(chart.el);
        chart.visible = true;
        fetchChart(chart);
      }
    });
    var filter = $("#chart-filter");
    if (filter) filter.addEventListener("input", applyFilter);
    wireRunList();
    ["#x-axis", "#rank", "#group-by", "#group-then"].forEach(function (sel) {
      var el = $(sel);
      if (el) el.addEventListener("change", function () {
        readControls(); updateUrl(); save(); showLegends();
        zoomTo(null);                  // another axis, rank or grouping: the whole run again
      });
    });
    ["#smoothing", "#smoothing-kind", "#log-scale", "#outliers", "#group-agg", "#group-band"].forEach(function (sel) {
      var el = $(sel);
      if (el) el.addEventListener("input", function () {
        readControls(); updateUrl(); save();
        charts.forEach(function (c) { if (c.payload) draw(c); });
      });
    });
    /* a colour the user set (static/run_colours.js): the run list and every chart take it */
    document.addEventListener("nuboard:colour", function (ev) {
      var d = ev.detail || {};
      if (typeof d.run !== "string" || !/^#[0-9a-f]{6}$/i.test(d.colour || "")) return;
      chosenColours[d.run] = d.colour;
      var li = root.querySelector('.legend-runs li[data-run="' + cssEscape(d.run) + '"]');
      if (li) {
        li.dataset.colour = d.colour;
        li.style.setProperty("--run-colour", d.colour);
        var input = $("input.run-colour", li);
        if (input && input.value !== d.colour) input.value = d.colour;
      }
      charts.forEach(function (c) { if (c.payload) draw(c); });
    });
    document.addEventListener("nuboard:theme", function () {
      charts.forEach(function (c) { if (c.payload) draw(c); });
    });
    if (root.dataset.live === "1") {
      // poll while a chosen run runs; stop once the data says none does (finished or lost)
      var poll = window.setInterval(function () {
        var answered = charts.filter(function (c) { return c.payload; });
        if (answered.length && answered.every(function (c) { return c.payload.live === false; })) {
          window.clearInterval(poll);
          root.dataset.live = "0";
          var badge = $(".charts-live");
          if (badge) badge.remove();
          return;
        }
        charts.forEach(function (c) { if (c.visible) fetchChart(c); });   // zoomed too: the zoom's range
      }, 5000);
    }
    var resizeTimer = null;
    window.addEventListener("resize", function () {
      window.clearTimeout(resizeTimer);
      resizeTimer = window.setTimeout(function () { charts.forEach(function (c) { if (c.payload) draw(c); }); }, 200);
    });
  }

  document.addEventListener("DOMContentLoaded", initCharts);
})();
