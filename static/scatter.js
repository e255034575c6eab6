/* NuBoard Scatter: one point per run in its colour, drawn with uPlot from the page's JSON
   (script#scatter-data). uPlot gives the scales, axes (log: distr 3; a categorical field: its
   categories at 0, 1, 2...) and canvas; the points and the trend line are drawn in its draw hook.
   Hovering a point names its run (a tip built with textContent), clicking it opens the run.
   Changing a chooser (x, y, log) submits the form, so the URL carries the view.
   No inline scripts (CSP); user text reaches the DOM through textContent only. */
(function () {
  "use strict";

  var R = 4.5, HIT = 8;
  var Num = window.NuBoardNumbers;

  function num(v) { return Num ? Num.text(v) : String(v); }

  /* the theme's colours (nuboard.css variables), as charts.js reads them */
  function themeColours() {
    var css = getComputedStyle(document.documentElement);
    function v(name, fallback) { return (css.getPropertyValue(name) || "").trim() || fallback; }
    return { fg: v("--fg", "#1d2330"), muted: v("--muted", "#6b7280"), grid: v("--grid", "#eceef2") };
  }

  function axisRange(axis, vals) {
    if (axis.kind === "categorical") return [-0.5, Math.max(axis.categories.length - 0.5, 0.5)];
    var lo = Math.min.apply(null, vals), hi = Math.max.apply(null, vals);
    if (axis.log) {
      var a = Math.log10(lo), b = Math.log10(hi), p = a === b ? 0.5 : (b - a) * 0.05;
      return [Math.pow(10, a - p), Math.pow(10, b + p)];
    }
    var pad = lo === hi ? (Math.abs(lo) || 1) * 0.1 : (hi - lo) * 0.05;
    return [lo - pad, hi + pad];
  }

  function scaleOf(axis, vals) {
    var r = axisRange(axis, vals);
    var s = { time: false, auto: false, range: function () { return r; } };
    if (axis.log) { s.distr = 3; s.log = 10; }
    return s;
  }

  function axisOf(axis, side, theme) {
    var out = { label: axis.field + (axis.log ? " (log)" : ""), side: side, space: side === 2 ? 70 : 40,
                stroke: theme.muted, grid: { stroke: theme.grid, width: 1 }, ticks: { stroke: theme.grid, width: 1 } };
    if (axis.kind === "categorical") {
      var cats = axis.categories;
      out.splits = function () { return cats.map(function (_, i) { return i; }); };
      out.values = function (u, splits) { return splits.map(function (i) { return cats[i] === undefined ? "" : cats[i]; }); };
    } else if (Num) {
      out.values = function (u, vals) { return Num.distinct(vals, Num.tick); };
    }
    if (axis.log) {
      /* over a decade or more, the decades only: no 2..9 grid lines, no label of the range's
         end (6.913e-6) beside the decade next to it */
      out.filter = function (u, splits) {
        var decades = splits.filter(isDecade);
        return decades.length >= 2 ? splits.map(function (v) { return isDecade(v) ? v : null; }) : splits;
      };
    }
    if (side === 3) out.size = 70;
    return out;
  }

  function isDecade(v) {
    if (!(v > 0)) return false;
    var e = Math.round(Math.log10(v));
    return Math.abs(v / Math.pow(10, e) - 1) < 1e-9;
  }

  /* the value a point's coordinate names: a category's text or the number */
  function valueText(axis, v) { return axis.kind === "categorical" ? axis.categories[v] : num(v); }

  function drawPoints(u, data, theme) {
    var ctx = u.ctx, dpr = window.devicePixelRatio || 1;
    ctx.save();
    ctx.beginPath();
    ctx.rect(u.bbox.left, u.bbox.top, u.bbox.width, u.bbox.height);
    ctx.clip();
    if (data.trend) {
      var t = data.trend, xr = [u.scales.x.min, u.scales.x.max];
      var ends = xr.map(function (x) {
        var tx = data.axes.x.log ? Math.log10(x) : x, ty = t.slope * tx + t.intercept;
        return [u.valToPos(x, "x", true), u.valToPos(data.axes.y.log ? Math.pow(10, ty) : ty, "y", true)];
      });
      ctx.strokeStyle = theme.muted;
      ctx.setLineDash([6 * dpr, 4 * dpr]);
      ctx.lineWidth = 1.5 * dpr;
      ctx.beginPath();
      ctx.moveTo(ends[0][0], ends[0][1]);
      ctx.lineTo(ends[1][0], ends[1][1]);
      ctx.stroke();
      ctx.setLineDash([]);
    }
    data.points.forEach(function (p) {
      var x = u.valToPos(p.x, "x", true), y = u.valToPos(p.y, "y", true);
      p.px = x / dpr; p.py = y / dpr;
      ctx.fillStyle = p.colour;
      ctx.beginPath();
      ctx.arc(x, y, R * dpr, 0, 2 * Math.PI);
      ctx.fill();
    });
    ctx.restore();
  }

  function nearest(data, left, top) {
    var best = null, bestD = HIT * HIT;
    data.points.forEach(function (p) {
      var dx = p.px - left, dy = p.py - top, d = dx * dx + dy * dy;
      if (d <= bestD) { best = p; bestD = d; }
    });
    return best;
  }

  function showTip(tip, data, p, ev) {
    tip.textContent = "";
    var name = document.createElement("div");
    name.className = "sc-tip-name";
    name.style.color = p.colour;
    name.textContent = p.name || p.id;
    tip.appendChild(name);
    [["x", data.axes.x], ["y", data.axes.y]].forEach(function (pair) {
      var row = document.createElement("div");
      row.textContent = pair[1].field + ": " + valueText(pair[1], p[pair[0]]);
      tip.appendChild(row);
    });
    tip.hidden = false;
    tip.style.left = (ev.clientX + 14) + "px";
    tip.style.top = (ev.clientY + 14) + "px";
  }

  function draw(box, data) {
    var tip = document.getElementById("sc-tip");
    var xs = data.points.map(function (p) { return p.x; }), ys = data.points.map(function (p) { return p.y; });
    var xr = axisRange(data.axes.x, xs), yr = axisRange(data.axes.y, ys);
    var width = Math.max(320, box.clientWidth || 800), theme = themeColours();
    var opts = {
      width: width, height: Math.round(Math.min(560, Math.max(320, width * 0.55))),
      legend: { show: false },
      cursor: { drag: { x: false, y: false }, points: { show: false } },
      scales: { x: scaleOf(data.axes.x, xs), y: scaleOf(data.axes.y, ys) },
      axes: [axisOf(data.axes.x, 2, theme), axisOf(data.axes.y, 3, theme)],
      series: [{}, { paths: function () { return null; }, points: { show: false } }],
      hooks: { draw: [function (u) { drawPoints(u, data, theme); }] }
    };
    var plot = new uPlot(opts, [[xr[0], xr[1]], [null, null]], box);
    box.dataset.xmin = xr[0];
    box.dataset.xmax = xr[1];
    box.dataset.ymin = yr[0];
    box.dataset.ymax = yr[1];
    var over = plot.root.querySelector(".u-over");
    var hovered = null;
    over.addEventListener("mousemove", function (ev) {
      var b = over.getBoundingClientRect();
      hovered = nearest(data, ev.clientX - b.left + plot.bbox.left / (window.devicePixelRatio || 1),
                        ev.clientY - b.top + plot.bbox.top / (window.devicePixelRatio || 1));
      over.style.cursor = hovered ? "pointer" : "";
      if (hovered) showTip(tip, data, hovered, ev); else tip.hidden = true;
    });
    over.addEventListener("mouseleave", function () { hovered = null; tip.hidden = true; });
    over.addEventListener("click", function () { if (hovered) window.location.href = hovered.url; });
    box.dataset.drawn = String(data.points.length);
    return plot;
  }

  function init() {
    var form = document.getElementById("scatter-form");
    if (form) {
      ["sc-x", "sc-y", "sc-logx", "sc-logy"].forEach(function (id) {
        var el = document.getElementById(id);
        if (el) el.addEventListener("change", function () { form.submit(); });
      });
    }
    var box = document.getElementById("scatter"), src = document.getElementById("scatter-data");
    if (!box || !src || typeof uPlot === "undefined") return;
    var data = JSON.parse(src.textContent);
    if (data && data.points && data.points.length) draw(box, data);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
