/* NuBoard viewer: the project picker, run selection, column chooser, and the Charts page.
   No inline scripts (the pages' CSP allows only this file); everything a user wrote reaches
   the DOM as text (textContent), never as HTML. */
(function () {
  "use strict";

  function $(sel, root) { return (root || document).querySelector(sel); }
  function $$(sel, root) { return Array.prototype.slice.call((root || document).querySelectorAll(sel)); }

  /* ---- project picker ---- */
  function initPicker() {
    var picker = $("#project-picker");
    if (picker) picker.addEventListener("change", function () {
      if (picker.value) window.location.href = picker.value;
    });
  }

  /* ---- run selection on the Runs page (kept per project in sessionStorage) ---- */
  var selection = null;
  function selectionKey() {
    var el = $("#selection-count");
    return el ? "nuboard:selection:" + el.dataset.project : null;
  }
  function loadSelection() {
    var key = selectionKey();
    if (!key) return null;
    var el = $("#selection-count");
    var stored = window.sessionStorage.getItem(key);
    var initial = el.dataset.initial ? el.dataset.initial.split(",") : [];
    var ids = stored !== null && !initial.length ? JSON.parse(stored) : initial;
    return ids.filter(function (x) { return x; });
  }
  function saveSelection() {
    var key = selectionKey();
    if (key) window.sessionStorage.setItem(key, JSON.stringify(selection));
  }
  function renderSelection() {
    if (!selection) return;
    var count = $("#selection-count");
    count.textContent = selection.length + (selection.length === 1 ? " run selected" : " runs selected");
    var link = $("#chart-selected");
    if (link) {
      link.href = link.dataset.base + (selection.length ? "?runs=" + encodeURIComponent(selection.join(",")) : "");
      link.classList.toggle("disabled", !selection.length);
    }
    $$(".selection-field").forEach(function (f) { f.value = selection.join(","); });
    $$(".run-select").forEach(function (box) { box.checked = selection.indexOf(box.value) >= 0; });
  }
  function initSelection() {
    if (!$("#selection-count")) return;
    selection = loadSelection() || [];
    document.addEventListener("change", function (ev) {
      var t = ev.target;
      if (t.classList && t.classList.contains("run-select")) {
        var i = selection.indexOf(t.value);
        if (t.checked && i < 0) selection.push(t.value);
        if (!t.checked && i >= 0) selection.splice(i, 1);
        saveSelection(); renderSelection();
      } else if (t.id === "select-page") {
        $$(".run-select").forEach(function (box) {
          var j = selection.indexOf(box.value);
          if (t.checked && j < 0) selection.push(box.value);
          if (!t.checked && j >= 0) selection.splice(j, 1);
        });
        saveSelection(); renderSelection();
      }
    });
    var clear = $("#clear-selection");
    if (clear) clear.addEventListener("click", function () { selection = []; saveSelection(); renderSelection(); });
    document.body.addEventListener("htmx:afterSwap", renderSelection);
    var save = $("#save-view");
    if (save) save.addEventListener("submit", function () {
      var params = new URLSearchParams(window.location.search);
      ["q", "cols", "sort", "desc"].forEach(function (k) {
        if (params.has(k)) save.elements[k].value = params.get(k);
      });
      save.elements.runs.value = selection.join(",");
    });
    saveSelection(); renderSelection();
  }

  /* ---- column chooser ---- */
  function initColumns() {
    var form = $("#columns-form");
    if (!form) return;
    form.addEventListener("submit", function () {
      var chosen = $$(".col-choice", form).filter(function (b) { return b.checked; }).map(function (b) { return b.value; });
      $("#cols-field").value = chosen.join(",");
      var params = new URLSearchParams(window.location.search);
      if (params.has("q")) form.elements.q.value = params.get("q");
    });
  }

  /* ---- Charts ---- */
  var PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
                 "#7f7f7f", "#bcbd22", "#17becf", "#393b79", "#ad494a", "#637939", "#843c39"];
  var charts = [];
  var state = null;

  function smooth(ys, weight) {
    if (!weight) return ys;
    var out = new Array(ys.length), last = 0, n = 0;
    for (var i = 0; i < ys.length; i++) {
      var y = ys[i];
      if (y === null || y === undefined || !isFinite(y)) { out[i] = y; continue; }
      last = last * weight + (1 - weight) * y; n++;
      out[i] = last / (1 - Math.pow(weight, n));
    }
    return out;
  }

  /* 4 significant digits, so 0.00021 and 3.2e-7 do not all print as 0 */
  function formatTick(v) {
    if (v === null || v === undefined) return "";
    if (v === 0) return "0";
    var a = Math.abs(v);
    if (a >= 1e6 || a < 1e-4) return Number(v.toPrecision(3)).toExponential();
    return String(Number(v.toPrecision(4)));
  }

  function formatSeconds(s) {
    s = Math.round(s);
    var h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), sec = s % 60;
    return (h ? h + "h" : "") + (h || m ? m + "m" : "") + sec + "s";
  }

  function chartData(chart) {
    var payload = chart.payload;
    if (!payload || !payload.series.length) return null;
    var tables = payload.series.map(function (s) {
      var ys = smooth(s.y, state.smoothing);
      if (state.log) ys = ys.map(function (v) { return v !== null && v > 0 ? v : null; });
      return [s.x, ys];
    });
    return uPlot.join(tables);
  }

  function makeOptions(chart, width) {
    var payload = chart.payload;
    var series = [{ label: state.x === "step" ? "step" : (state.x === "wall" ? "time" : "elapsed"),
                    value: function (u, v) { return v === null || v === undefined ? "-" : xLabel(v); } }];
    payload.series.forEach(function (s, i) {
      series.push({ label: s.label, stroke: PALETTE[i % PALETTE.length], width: 1.5, spanGaps: true,
                    points: { show: false },
                    value: function (u, v) { return v === null || v === undefined ? "-" : Number(v).toPrecision(5); } });
    });
    return {
      width: width, height: 240, series: series,
      scales: { x: { time: state.x === "wall" }, y: state.log ? { distr: 3 } : {} },
      axes: [{ values: state.x === "relative" ? function (u, vals) { return vals.map(formatSeconds); } : undefined },
             { size: 64, values: function (u, vals) { return vals.map(formatTick); } }],
      cursor: { drag: { x: true, y: false } },
      legend: { live: true },
      hooks: { setSelect: [function (u) {
        if (u.select.width < 2) return;
        var lo = u.posToVal(u.select.left, "x"), hi = u.posToVal(u.select.left + u.select.width, "x");
        chart.range = [lo, hi];
        fetchChart(chart);
      }] }
    };
  }

  function xLabel(v) {
    if (state.x === "wall") return new Date(v * 1000).toLocaleString();
    if (state.x === "relative") return formatSeconds(v);
    return String(v);
  }

  function draw(chart) {
    var plotEl = $(".plot", chart.el);
    var note = $(".chart-note", chart.el);
    var data = chartData(chart);
    if (chart.plot) { chart.plot.destroy(); chart.plot = null; }
    plotEl.textContent = "";
    if (!data) { note.textContent = "No points for these runs at this rank."; return; }
    var width = Math.max(280, plotEl.clientWidth || chart.el.clientWidth || 400);
    chart.plot = new uPlot(makeOptions(chart, width), data, plotEl);
    if (chart.range) chart.plot.setScale("x", { min: chart.range[0], max: chart.range[1] });
    var total = 0, sent = 0;
    chart.payload.series.forEach(function (s) { total += s.in_range; sent += s.sent; });
    note.textContent = chart.payload.series.length + " series · " + total.toLocaleString() +
      " points" + (sent < total ? ", " + sent.toLocaleString() + " drawn (min and max per bucket)" : "") +
      (chart.range ? " · zoomed (double-click to reset)" : "");
    chart.el.dataset.drawn = "1";
  }

  function fetchChart(chart) {
    var root = $("#charts");
    var params = new URLSearchParams({ name: chart.name, runs: root.dataset.runs, x: state.x,
                                       rank: state.rank, buckets: String(chart.buckets()) });
    if (chart.range) { params.set("lo", chart.range[0]); params.set("hi", chart.range[1]); }
    var seq = ++chart.seq;
    return fetch(root.dataset.api + "?" + params.toString(), { headers: { Accept: "application/json" } })
      .then(function (r) { return r.json(); })
      .then(function (payload) {
        if (seq !== chart.seq) return;
        chart.payload = payload;
        showStatus(payload.status || {});
        draw(chart);
      })
      .catch(function (err) { $(".chart-note", chart.el).textContent = "Could not load: " + err; });
  }

  /* each run's badge in the legend takes the status the latest data says (finished, lost) */
  function showStatus(statuses) {
    document.querySelectorAll(".legend-runs li[data-run]").forEach(function (li) {
      var status = statuses[li.dataset.run];
      var badge = li.querySelector(".badge");
      if (!status || !badge || badge.textContent === status) return;
      badge.textContent = status;
      badge.className = "badge status-" + status;
    });
  }

  function readControls() {
    state = {
      x: $("#x-axis").value,
      rank: $("#rank").value,
      smoothing: parseFloat($("#smoothing").value) || 0,
      log: $("#log-scale").checked
    };
    $("#smoothing-value").textContent = state.smoothing.toFixed(2);
  }

  function updateUrl() {
    var params = new URLSearchParams(window.location.search);
    params.set("x", state.x); params.set("rank", state.rank);
    window.history.replaceState(null, "", window.location.pathname + "?" + params.toString());
  }

  function initCharts() {
    var root = $("#charts");
    if (!root || !window.uPlot || !root.dataset.runs) return;
    readControls();
    var observer = new IntersectionObserver(function (entries) {
      entries.forEach(function (e) {
        if (!e.isIntersecting) return;
        var chart = e.target._chart;
        observer.unobserve(e.target);
        chart.visible = true;
        fetchChart(chart);
      });
    }, { rootMargin: "200px" });
    $$(".chart", root).forEach(function (el) {
      var chart = { el: el, name: el.dataset.name, range: null, seq: 0, plot: null, payload: null,
                    visible: false,
                    buckets: function () { return Math.max(200, Math.min(2000, Math.round((el.clientWidth || 600)))); } };
      el._chart = chart;
      el.addEventListener("dblclick", function () { if (chart.range) { chart.range = null; fetchChart(chart); } });
      charts.push(chart);
      observer.observe(el);
    });
    ["#x-axis", "#rank"].forEach(function (sel) {
      $(sel).addEventListener("change", function () {
        readControls(); updateUrl();
        charts.forEach(function (c) { c.range = null; if (c.visible) fetchChart(c); });
      });
    });
    ["#smoothing", "#log-scale"].forEach(function (sel) {
      $(sel).addEventListener("input", function () {
        readControls();
        charts.forEach(function (c) { if (c.payload) draw(c); });
      });
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
        charts.forEach(function (c) { if (c.visible && !c.range) fetchChart(c); });
      }, 5000);
    }
    var resizeTimer = null;
    window.addEventListener("resize", function () {
      window.clearTimeout(resizeTimer);
      resizeTimer = window.setTimeout(function () { charts.forEach(function (c) { if (c.payload) draw(c); }); }, 200);
    });
  }

  /* ---- console: keep the view at the end, as a terminal does ---- */
  function scrollConsole() {
    var pre = $("pre.console");
    if (pre) pre.scrollTop = pre.scrollHeight;
  }

  /* ---- artifacts: copy the use_artifact line; one more metadata row in the form ---- */
  function initArtifacts() {
    document.addEventListener("click", function (ev) {
      var button = ev.target.closest ? ev.target.closest("button.copy") : null;
      if (!button) return;
      var source = $(button.dataset.copyFrom);
      if (!source) return;
      var text = source.textContent;
      var done = function () { button.textContent = "Copied"; window.setTimeout(function () { button.textContent = "Copy"; }, 1500); };
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(text).then(done, function () { selectText(source); });
      } else {
        selectText(source); try { document.execCommand("copy"); done(); } catch (e) { /* selected for the user */ }
      }
    });
    var add = $("#add-meta-row");
    if (add) add.addEventListener("click", function () {
      var rows = $$("#meta-table tbody tr.meta-row");
      var last = rows[rows.length - 1];
      var copy = last.cloneNode(true);
      var n = rows.length;
      $$("input, select", copy).forEach(function (el) {
        el.name = el.name.replace(/_\d+$/, "_" + n);
        if (el.tagName === "INPUT") el.value = "";
      });
      last.parentNode.appendChild(copy);
      $("#meta-rows").value = String(n + 1);
    });
  }

  function selectText(el) {
    var range = document.createRange();
    range.selectNodeContents(el);
    var sel = window.getSelection();
    sel.removeAllRanges(); sel.addRange(range);
  }

  document.addEventListener("DOMContentLoaded", function () {
    initPicker(); initSelection(); initColumns(); initCharts(); initArtifacts(); scrollConsole();
    document.body.addEventListener("htmx:afterSwap", scrollConsole);
  });
})();
