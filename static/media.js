/* NuBoard media panels (the Charts page's Media section, a run's Media tab: templates/
   _media_*.html, nuboard/web/media_panels.py). The server renders each panel and, as its step
   slider moves, what each run shows at that step (htmx); this file draws what needs a canvas:
   a histogram key's distribution over steps (shaded percentile bands, uPlot) and a step's
   histogram (bars), shows the slider's step as it moves, opens an image at full size,
   hides panels the Charts page's filter box leaves out, and asks again for the panels of
   runs that still run. Text reaches the DOM as textContent;
   no inline scripts (the CSP allows only files). */
(function () {
  "use strict";

  function $(sel, root) { return (root || document).querySelector(sel); }
  function $$(sel, root) { return Array.prototype.slice.call((root || document).querySelectorAll(sel)); }

  /* ---- colours ---- */

  function alpha(hex, a) {
    var m = /^#?([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/i.exec(hex || "");
    if (!m) return hex;
    return "rgba(" + parseInt(m[1], 16) + "," + parseInt(m[2], 16) + "," + parseInt(m[3], 16) + "," + a + ")";
  }

  function theme() {
    var css = window.getComputedStyle(document.documentElement);
    function v(name, fallback) { return (css.getPropertyValue(name) || "").trim() || fallback; }
    return { fg: v("--fg", "#1d2330"), grid: v("--grid", v("--line", "#e3e6ec")), muted: v("--muted", "#6b7280") };
  }

  function runColour(el) {
    var holder = el.closest("[data-colour]") || el.closest(".media-run");
    var given = holder && holder.dataset.colour;
    if (given) return given;
    var css = holder ? window.getComputedStyle(holder).getPropertyValue("--run-colour").trim() : "";
    return css || "#7f7f7f";
  }

  function axes(t, xValues) {
    var common = { stroke: t.fg, grid: { stroke: t.grid, width: 1 }, ticks: { stroke: t.grid, width: 1 },
                   font: "11px system-ui, sans-serif" };
    var x = Object.assign({}, common, { space: 60 });
    if (xValues) x.values = xValues;
    return [x, Object.assign({}, common, { size: 50, space: 22 })];
  }

  function shortNumber(v) {
    if (v === null || v === undefined || !isFinite(v)) return "";
    var a = Math.abs(v);
    if (a !== 0 && (a >= 1e5 || a < 1e-3)) return v.toExponential(1);
    return String(Number(v.toPrecision(4)));
  }

  /* ---- a histogram key's distribution over steps ---- */

  /* bands between percentiles 0-100, 7-93, 16-84, 31-69 (series 1..9), the median a line */
  function drawDistribution(el, run, percentiles) {
    var plotEl = $(".plot", el);
    plotEl.textContent = "";
    if (!run || !run.steps.length) {
      plotEl.textContent = "Nothing counted.";
      plotEl.className = "plot muted";
      return;
    }
    var colour = el.dataset.colour || runColour(el), t = theme();
    var n = percentiles.length, mid = Math.floor(n / 2);
    var series = [{ label: "step" }];
    for (var i = 0; i < n; i++) {
      series.push({ label: "p" + percentiles[i], stroke: i === mid ? colour : alpha(colour, 0.35),
                    width: i === mid ? 2 : (i === 0 || i === n - 1 ? 0.5 : 0),
                    points: { show: run.steps.length === 1 } });
    }
    var bands = [];
    for (var b = 0; b < mid; b++) {
      bands.push({ series: [n - b, b + 1], fill: alpha(colour, 0.14 + 0.06 * b) });
    }
    var steps = run.steps;
    var opts = {
      width: Math.max(200, el.clientWidth || 300), height: 170, series: series, bands: bands,
      legend: { show: false }, cursor: { points: { show: false }, drag: { x: false, y: false } },
      scales: { x: { time: false, range: function (u, min, max) {
        return min === max ? [min - 1, max + 1] : [min, max]; } } },
      axes: axes(t, function (u, vals) { return vals.map(shortNumber); }),
      hooks: { draw: [function (u) {
        el.dataset.xmin = u.scales.x.min; el.dataset.xmax = u.scales.x.max;
        el.dataset.drawn = "1";
        markStep(u, el);
      }] }
    };
    opts.axes[1].values = function (u, vals) { return vals.map(shortNumber); };
    var data = [steps].concat(run.bands);
    el._plot = new uPlot(opts, data, plotEl);
  }

  /* a dashed line at the step the panel's slider is on */
  function markStep(u, el) {
    var inner = el.closest(".media-inner"), step = inner ? Number(inner.dataset.step) : NaN;
    if (!inner || inner.dataset.step === "" || !isFinite(step)) return;
    var x = u.valToPos(step, "x", true), ctx = u.ctx;
    if (x < u.bbox.left || x > u.bbox.left + u.bbox.width) return;
    ctx.save();
    ctx.strokeStyle = theme().muted; ctx.lineWidth = Math.max(1, window.devicePixelRatio || 1);
    ctx.setLineDash([4, 4]);
    ctx.beginPath(); ctx.moveTo(x, u.bbox.top); ctx.lineTo(x, u.bbox.top + u.bbox.height); ctx.stroke();
    ctx.restore();
  }

  function loadDistributions(inner) {
    if (!window.uPlot || inner.dataset.distLoaded) return;
    inner.dataset.distLoaded = "1";
    fetch(inner.dataset.dist, { headers: { Accept: "application/json" } })
      .then(function (r) { if (!r.ok) throw new Error("HTTP " + r.status); return r.json(); })
      .then(function (payload) {
        var byRun = {};
        payload.runs.forEach(function (r) { byRun[r.run] = r; });
        $$(".media-dist", inner).forEach(function (el) {
          drawDistribution(el, byRun[el.dataset.run], payload.percentiles);
        });
      })
      .catch(function (err) {
        $$(".media-dist", inner).forEach(function (el) {
          $(".plot", el).textContent = "The distribution could not be loaded (" + err.message + ").";
        });
      });
  }

  /* ---- one step's histogram, as bars ---- */

  function drawHistogram(el) {
    if (!window.uPlot || el.dataset.drawn) return;
    var hist;
    try { hist = JSON.parse(el.dataset.hist); } catch (e) { return; }
    var plotEl = $(".plot", el);
    if (!hist || !hist.counts || !hist.counts.length) { el.dataset.drawn = "1"; return; }
    var colour = runColour(el), t = theme();
    var xs = hist.edges.slice(), ys = hist.counts.concat([hist.counts[hist.counts.length - 1]]);
    var opts = {
      width: Math.max(200, el.clientWidth || 300), height: 120, legend: { show: false },
      cursor: { points: { show: false }, drag: { x: false, y: false } },
      series: [{}, { stroke: colour, width: 1, fill: alpha(colour, 0.35),
                     paths: uPlot.paths.stepped({ align: 1 }), points: { show: false } }],
      scales: { x: { time: false }, y: { range: function (u, min, max) { return [0, max > 0 ? max * 1.05 : 1]; } } },
      axes: axes(t, function (u, vals) { return vals.map(shortNumber); }),
      hooks: { draw: [function (u) { el.dataset.xmin = u.scales.x.min; el.dataset.xmax = u.scales.x.max; el.dataset.drawn = "1"; }] }
    };
    opts.axes[1].values = function (u, vals) { return vals.map(shortNumber); };
    el._plot = new uPlot(opts, [xs, ys], plotEl);
  }

  /* ---- the step slider ---- */

  function onSlide(input) {
    var steps;
    try { steps = JSON.parse(input.dataset.steps); } catch (e) { return; }
    var step = steps[Math.min(steps.length - 1, Math.max(0, Number(input.value)))];
    var out = input.parentNode.querySelector(".media-step-value");
    if (out) out.textContent = String(step);
    var inner = input.closest(".media-inner");
    if (inner) {
      inner.dataset.step = String(step);
      $$(".media-dist", inner).forEach(function (el) { if (el._plot) el._plot.redraw(false, false); });
    }
  }

  /* ---- an image at full size ---- */

  function openImage(link) {
    var section = link.closest(".media-section"), dialog = section && $("dialog.media-viewer", section);
    if (!dialog || typeof dialog.showModal !== "function") return false;
    var img = $("img", dialog);
    img.src = link.getAttribute("href");
    img.alt = link.dataset.caption || "";
    $(".media-viewer-caption", dialog).textContent = link.dataset.caption || "";
    dialog.showModal();
    return true;
  }

  /* ---- the Charts page's filter box: panels whose key holds the text ---- */

  function applyFilter() {
    var box = $("#chart-filter");
    var text = box ? box.value.trim().toLowerCase() : "";
    var panels = $$(".media-panel");
    panels.forEach(function (p) { p.hidden = !!text && (p.dataset.key || "").toLowerCase().indexOf(text) < 0; });
    var section = $(".media-section");
    if (section) section.hidden = !!panels.length && panels.every(function (p) { return p.hidden; });
  }

  /* ---- runs hidden in the Charts page's run list are hidden in the panels too ---- */

  function applyHiddenRuns(root) {
    var off = {};
    $$(".legend-runs li.off[data-run]").forEach(function (li) { off[li.dataset.run] = true; });
    $$(".media-run[data-run], .media-run-absent[data-run]", root).forEach(function (cell) { cell.hidden = !!off[cell.dataset.run]; });
  }

  /* ---- wiring ---- */

  function enhance(root) {
    applyHiddenRuns(root);
    $$(".media-inner[data-dist]", root).forEach(loadDistributions);
    if (root.matches && root.matches(".media-inner[data-dist]")) loadDistributions(root);
    $$(".media-hist", root).forEach(drawHistogram);
    if (root.matches && root.matches(".media-hist")) drawHistogram(root);
  }

  document.addEventListener("input", function (ev) {
    if (ev.target.matches && ev.target.matches(".media-slider input[type=range]")) onSlide(ev.target);
    if (ev.target.id === "chart-filter") applyFilter();
  });
  document.addEventListener("click", function (ev) {
    var link = ev.target.closest && ev.target.closest("a.media-full");
    if (!link || ev.button !== 0 || ev.ctrlKey || ev.metaKey || ev.shiftKey) return;
    if (openImage(link)) ev.preventDefault();
  });
  document.addEventListener("click", function (ev) {   // charts.js toggled a run: follow it
    if (ev.target.closest && ev.target.closest(".legend-runs li")) applyHiddenRuns(document);
  });
  document.addEventListener("click", function (ev) {   // a click outside the picture closes it
    if (ev.target.matches && ev.target.matches("dialog.media-viewer")) ev.target.close();
  });
  /* ---- live: while a run runs, a panel whose slider is at its last step (or that has no
     slider yet) is asked for again, so new steps and new entries show up ---- */

  var LIVE_EVERY = 5000;
  var liveTimer = null;

  function atLastStep(inner) {
    var slider = $(".media-slider input[type=range]", inner);
    return !slider || Number(slider.value) === Number(slider.max);
  }

  function refreshLive() {
    liveTimer = null;
    var live = $$(".media-inner[data-live='1'][data-src]");
    live.forEach(function (inner) {
      if (!atLastStep(inner) || inner.closest("[hidden]") || !window.htmx) return;
      window.htmx.ajax("GET", inner.dataset.src, { target: inner, swap: "outerHTML" });
    });
    if (live.length) liveTimer = window.setTimeout(refreshLive, LIVE_EVERY);
  }

  function watchLive() {
    if (liveTimer === null && $(".media-inner[data-live='1']")) {
      liveTimer = window.setTimeout(refreshLive, LIVE_EVERY);
    }
  }

  document.addEventListener("htmx:load", function (ev) { enhance(ev.detail.elt); watchLive(); });
  document.addEventListener("DOMContentLoaded", function () { enhance(document); applyFilter(); });
})();
