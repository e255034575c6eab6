/* NuBoard chart tools, built on window.NuBoardCharts (static/charts.js): each chart's caption
   gains a "Full screen" button and an "Export" menu with "CSV (drawn)", "CSV (every point)"
   and "PNG".
   - Full screen: the figure takes the whole screen (the Fullscreen API, else the class
     chart-full over the page); the button again or Escape leaves; the chart is drawn again at
     its new size on the way in and out.
   - CSV (drawn): the lines as drawn (smoothed, zoomed, downsampled), built here: one row per x,
     a column per line shown (with smoothing, each run's raw and smoothed lines; grouped, each
     group's line and band edges), the header names the x axis and each line; numbers as
     JavaScript writes them (they read back to the same double), an empty cell for a gap.
   - CSV (every point): a link to the server's /p/<project>/.chart.csv with the chart's last
     data query (web/chart_csv.py): every point of the range, not downsampled.
   - PNG: the plot's canvas on the theme's background, the chart's name above it and its
     lines' names below.
   User text reaches the DOM as textContent only; no inline scripts (the CSP allows files). */
(function () {
  "use strict";

  function $(sel, root) { return (root || document).querySelector(sel); }
  function $$(sel, root) { return Array.prototype.slice.call((root || document).querySelectorAll(sel)); }

  var X_NAMES = { step: "step", wall: "wall_time", relative: "relative_seconds", process: "process_seconds" };
  var LINE_SUFFIX = { line: "", raw: " (raw)", low: " (band low)", high: " (band high)" };
  var FORMULA = /^[=+\-@\t\r]/, NUMBER = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;

  function Charts() { return window.NuBoardCharts; }

  /* ---- CSV ---- */

  /* a text cell: a leading "'" where a spreadsheet would take it as a formula (as
     nuboard/files/csv_cells.py does), quoted where it holds a comma, a quote or a line end */
  function textCell(text) {
    text = String(text);
    if (FORMULA.test(text) && !NUMBER.test(text)) text = "'" + text;
    return /[",\r\n]/.test(text) ? '"' + text.replace(/"/g, '""') + '"' : text;
  }

  function numberCell(v) {
    return v === null || v === undefined || typeof v !== "number" || !isFinite(v) ? "" : String(v);
  }

  /* the drawn chart (NuBoardCharts.drawn) as CSV text: the columns shown, the rows where one
     of them has a value */
  function drawnCsv(d) {
    var cols = d.columns.filter(function (c) { return c.shown; }), smoothed = {};
    cols.forEach(function (c) { if (c.line === "raw") smoothed[c.run] = true; });
    var x = d.query.get("x") || "step";
    var head = [x.indexOf("scalar:") === 0 ? x.slice(7) : X_NAMES[x] || d.xLabel].concat(cols.map(function (c) {
      return c.label + (c.line === "line" && smoothed[c.run] ? " (smoothed)" : LINE_SUFFIX[c.line] || "");
    }));
    var lines = [head.map(textCell).join(",")];
    for (var i = 0; i < d.x.length; i++) {
      var cells = cols.map(function (c) { return numberCell(c.values[i]); });
      if (!cells.some(function (v) { return v !== ""; })) continue;    // a break the chart drew
      lines.push([numberCell(d.x[i])].concat(cells).join(","));
    }
    return lines.join("\r\n") + "\r\n";
  }

  /* train/loss -> train_loss (as web/chart_csv.py names its file) */
  function fileStem(name) {
    var stem = String(name || "").replace(/[^A-Za-z0-9._-]+/g, "_").replace(/^[._]+|[._]+$/g, "").slice(0, 100);
    return stem || "chart";
  }

  function download(blob, filename) {
    var url = URL.createObjectURL(blob), a = document.createElement("a");
    a.href = url;
    a.download = filename;
    a.hidden = true;
    document.body.appendChild(a);
    a.click();
    a.remove();
    window.setTimeout(function () { URL.revokeObjectURL(url); }, 60000);
  }

  function note(fig, text) {
    var p = $(".chart-tools-msg", fig);
    if (p) { p.textContent = text; p.hidden = !text; }
  }

  function saveDrawnCsv(fig) {
    var d = Charts() && Charts().drawn(fig);
    if (!d) { note(fig, "This chart has not drawn yet: nothing to export."); return; }
    download(new Blob([drawnCsv(d)], { type: "text/csv" }), fileStem(d.name) + ".csv");
  }

  /* the server's every-point CSV for the chart's last data query (its buckets left out) */
  function everyPointUrl(fig, d) {
    var section = fig.closest("#charts"), api = section && section.dataset.api;
    if (!api || !d) return null;
    var q = new URLSearchParams(d.query.toString());
    q.delete("buckets");
    return api.replace("/api/p/", "/p/") + ".csv?" + q.toString();
  }

  function updateEveryPoint(fig) {
    var a = $("a.chart-csv-all", fig), d = Charts() && Charts().drawn(fig);
    if (!a) return;
    var url = d && !d.query.getAll("group").some(Boolean) ? everyPointUrl(fig, d) : null;
    if (url) {
      a.href = url;
      a.removeAttribute("aria-disabled");
      a.title = "every logged point of the chart's runs in its range, not downsampled (a CSV file)";
    } else {
      a.removeAttribute("href");
      a.setAttribute("aria-disabled", "true");
      a.title = d ? "a grouped chart's lines are computed from its runs: ungroup it to export their points"
                  : "the chart has not drawn yet";
    }
  }

  /* ---- PNG ---- */

  function themeColour(name, fallback) {
    var v = window.getComputedStyle(document.documentElement).getPropertyValue(name);
    return (v || "").trim() || fallback;
  }

  /* a line's colour: the one drawn() gives, else its run's in the run list */
  function colourOf(fig, col) {
    if (col.colour) return col.colour;
    var section = fig.closest("#charts");
    var li = section && $$(".legend-runs li[data-run]", section).filter(function (l) { return l.dataset.run === col.run; })[0];
    return (li && li.dataset.colour) || themeColour("--muted", "#6b7280");
  }

  /* the plot's canvas, its name above and its lines' names below, on the theme's card colour */
  function chartPng(fig, done) {
    var canvas = $(".plot canvas", fig), d = Charts() && Charts().drawn(fig);
    if (!canvas || !canvas.width) { note(fig, "This chart has not drawn yet: nothing to export."); return; }
    var scale = canvas.width / (canvas.getBoundingClientRect().width || canvas.width);
    var font = Math.round(13 * scale), pad = Math.round(8 * scale), lineH = Math.round(font * 1.5);
    var names = d ? d.columns.filter(function (c) { return c.shown && (c.line === "line"); }) : [];
    var ctx0 = document.createElement("canvas").getContext("2d");
    ctx0.font = font + "px sans-serif";
    // the names laid out in rows as wide as the canvas
    var rows = [[]], x = pad, swatch = Math.round(font * 1.2);
    names.forEach(function (c) {
      var w = swatch + Math.round(font * 0.4) + ctx0.measureText(c.label).width + pad * 2;
      if (x + w > canvas.width && rows[rows.length - 1].length) { rows.push([]); x = pad; }
      rows[rows.length - 1].push({ col: c, x: x });
      x += w;
    });
    var top = lineH + pad * 2, legend = names.length ? rows.length * lineH + pad : 0;
    var out = document.createElement("canvas");
    out.width = canvas.width;
    out.height = top + canvas.height + legend + pad;
    var ctx = out.getContext("2d");
    ctx.fillStyle = themeColour("--card", "#ffffff");
    ctx.fillRect(0, 0, out.width, out.height);
    ctx.fillStyle = themeColour("--fg", "#1d2330");
    ctx.textBaseline = "middle";
    ctx.font = "bold " + font + "px sans-serif";
    ctx.fillText((d && d.name) || fig.dataset.name || "", pad, pad + lineH / 2);
    ctx.drawImage(canvas, 0, top);
    ctx.font = font + "px sans-serif";
    rows.forEach(function (row, r) {
      var y = top + canvas.height + pad + r * lineH + lineH / 2;
      row.forEach(function (item) {
        ctx.fillStyle = colourOf(fig, item.col);
        ctx.fillRect(item.x, y - font * 0.3, swatch, font * 0.6);
        ctx.fillStyle = themeColour("--fg", "#1d2330");
        ctx.fillText(item.col.label, item.x + swatch + font * 0.4, y);
      });
    });
    out.toBlob(function (blob) { if (blob) done(blob); }, "image/png");
  }

  function savePng(fig) {
    var d = Charts() && Charts().drawn(fig);
    chartPng(fig, function (blob) { download(blob, fileStem((d && d.name) || fig.dataset.name) + ".png"); });
  }

  /* ---- full screen ---- */

  var fallbackFull = null;       // the figure shown full over the page where the API is not there

  function fullFigure() { return document.fullscreenElement || fallbackFull; }

  /* the plot as tall as the full figure leaves it (charts.js draws data-plot-height tall) */
  function fitHeight(fig) {
    var box = fig.getBoundingClientRect(), plot = $(".plot", fig), chartNote = $(".chart-note", fig);
    var above = plot ? plot.getBoundingClientRect().top - box.top : 0;
    var below = (chartNote ? chartNote.offsetHeight : 0) + 48;
    fig.dataset.plotHeight = String(Math.max(240, Math.round(box.height - above - below)));
  }

  function redrawSoon(fig) {
    window.requestAnimationFrame(function () {
      if (fig.classList.contains("chart-full")) fitHeight(fig);
      if (Charts()) Charts().redraw(fig);
    });
  }

  function markFull(fig, on) {
    fig.classList.toggle("chart-full", on);
    var button = $("button.chart-full-button", fig);
    if (button) {
      button.setAttribute("aria-pressed", on ? "true" : "false");
      button.title = on ? "Leave full screen (Escape)" : "Full screen";
    }
    if (!on) delete fig.dataset.plotHeight;
    redrawSoon(fig);
  }

  function enterFull(fig) {
    var leaving = fullFigure();
    if (leaving && leaving !== fig) leaveFull(leaving);
    if (fig.requestFullscreen) {
      fig.requestFullscreen().catch(function () { fallbackFull = fig; markFull(fig, true); });
    } else {
      fallbackFull = fig;
      markFull(fig, true);
    }
  }

  function leaveFull(fig) {
    if (document.fullscreenElement === fig && document.exitFullscreen) {
      document.exitFullscreen().catch(function () { /* already out */ });
    } else if (fallbackFull === fig) {
      fallbackFull = null;
      markFull(fig, false);
    }
  }

  var wasFull = null;
  document.addEventListener("fullscreenchange", function () {
    var now = document.fullscreenElement;
    if (wasFull && wasFull !== now && wasFull.matches && wasFull.matches("figure.chart")) markFull(wasFull, false);
    if (now && now.matches && now.matches("figure.chart")) markFull(now, true);
    wasFull = now;
  });

  window.addEventListener("resize", function () {
    var fig = fullFigure();
    if (fig) redrawSoon(fig);
  });

  document.addEventListener("keydown", function (ev) {
    var fig = fullFigure();
    if (ev.key === "Escape" && fig) leaveFull(fig);
  });

  /* ---- the caption's buttons ---- */

  function button(text, cls, title) {
    var b = document.createElement("button");
    b.type = "button";
    b.className = cls;
    b.textContent = text;
    if (title) b.title = title;
    return b;
  }

  /* four corners, the usual sign of full screen (an SVG: not every font has a glyph for it) */
  function fullIcon() {
    var ns = "http://www.w3.org/2000/svg", svg = document.createElementNS(ns, "svg"), path = document.createElementNS(ns, "path");
    svg.setAttribute("viewBox", "0 0 16 16");
    svg.setAttribute("width", "14");
    svg.setAttribute("height", "14");
    svg.setAttribute("aria-hidden", "true");
    path.setAttribute("d", "M1 6V1h5M10 1h5v5M15 10v5h-5M6 15H1v-5");
    path.setAttribute("fill", "none");
    path.setAttribute("stroke", "currentColor");
    path.setAttribute("stroke-width", "1.8");
    svg.appendChild(path);
    return svg;
  }

  function addTools(fig) {
    var caption = $("figcaption", fig);
    if (!caption || $(".chart-tools", caption)) return;
    var full = button("", "chart-full-button", "Full screen");
    full.appendChild(fullIcon());
    full.setAttribute("aria-label", "Full screen");
    full.setAttribute("aria-pressed", "false");
    var menu = document.createElement("details");
    menu.className = "chart-tools";
    var summary = document.createElement("summary");
    summary.textContent = "Export";
    summary.title = "Save this chart's data (CSV) or image (PNG)";
    var list = document.createElement("div");
    list.className = "chart-tools-menu";
    var csv = button("CSV (drawn)", "chart-csv", "the lines as drawn here, one row per x (a CSV file)");
    var all = document.createElement("a");
    all.className = "chart-csv-all";
    all.textContent = "CSV (every point)";
    all.setAttribute("aria-disabled", "true");
    var png = button("PNG", "chart-png", "the chart as an image, its name and lines' names with it");
    list.appendChild(csv); list.appendChild(all); list.appendChild(png);
    menu.appendChild(summary); menu.appendChild(list);
    var msg = document.createElement("p");
    msg.className = "chart-tools-msg muted";
    msg.hidden = true;
    var last = $("button.pin, button.chart-remove", caption);     // they stay at the end
    caption.insertBefore(menu, last);
    caption.insertBefore(full, last);
    fig.insertBefore(msg, $(".plot", fig));
    full.addEventListener("click", function () { if (fullFigure() === fig) leaveFull(fig); else enterFull(fig); });
    csv.addEventListener("click", function () { menu.open = false; saveDrawnCsv(fig); });
    png.addEventListener("click", function () { menu.open = false; savePng(fig); });
    all.addEventListener("click", function (ev) {
      updateEveryPoint(fig);
      if (!all.getAttribute("href")) { ev.preventDefault(); note(fig, all.title); return; }
      menu.open = false;
    });
    menu.addEventListener("toggle", function () { if (menu.open) { note(fig, ""); updateEveryPoint(fig); } });
    updateEveryPoint(fig);
  }

  function init() {
    var section = $("#charts");
    if (!section) return;
    $$("figure.chart", section).forEach(addTools);
    section.addEventListener("nuboard:chart-drawn", function (ev) {
      var fig = ev.target.closest && ev.target.closest("figure.chart");
      if (!fig) return;
      addTools(fig);               // a chart made since (the user's chart of several scalars)
      updateEveryPoint(fig);
    });
    // a click elsewhere closes an open Export menu
    document.addEventListener("click", function (ev) {
      $$("details.chart-tools[open]").forEach(function (m) { if (!m.contains(ev.target)) m.open = false; });
    });
  }

  window.NuBoardChartTools = { drawnCsv: drawnCsv, fileStem: fileStem };
  document.addEventListener("DOMContentLoaded", init);
})();
