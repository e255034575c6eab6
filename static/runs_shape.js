/* NuBoard Runs table as a user shapes it: columns reordered by dragging a header (or Alt+Left /
   Alt+Right on a focused header), resized by dragging a header's edge (or the arrow keys on
   it), and group rows folded. The order (`cols`) and the widths (`widths=<col>:<px>,...`) go
   into the URL: each change asks the server for the table again (htmx, the URL pushed), so
   every link of the table carries them, a reload and a copied URL keep them, and a saved view
   takes them from the state the server rendered (#runs-results[data-state-url]).
   No inline scripts or style attributes in the templates: the widths become one stylesheet
   of nth-child rules (CSSOM), nothing a user wrote becomes HTML. */
(function () {
  "use strict";

  var MIN_WIDTH = 30, MAX_WIDTH = 2000, STEP = 10, BIG_STEP = 50, DRAG_FROM = 6;

  function $(sel, root) { return (root || document).querySelector(sel); }
  function $$(sel, root) { return Array.prototype.slice.call((root || document).querySelectorAll(sel)); }

  /* the results the server rendered last (a swap may leave an older one around it) */
  function results() { var all = $$("#runs-results[data-state-url]"); return all[all.length - 1] || null; }
  function headers() { var r = results(); return r ? $$("table.runs thead th[data-col]", r) : []; }
  function columns() { return headers().map(function (th) { return th.dataset.col; }); }
  function stateUrl() { var r = results(); return r ? new URL(r.dataset.stateUrl, window.location.href) : null; }

  function readWidths() {
    var r = results();
    try { return r && r.dataset.widths ? JSON.parse(r.dataset.widths) : {}; } catch (e) { return {}; }
  }
  function widthsText(widths) {
    return Object.keys(widths).map(function (c) { return c + ":" + widths[c]; }).join(",");
  }
  function clamp(px) { return Math.max(MIN_WIDTH, Math.min(MAX_WIDTH, Math.round(px))); }

  /* ---- one status line for screen readers ---- */
  function say(text) {
    var note = $("#runs-shape-note");
    if (!note) {
      note = document.createElement("p");
      note.id = "runs-shape-note";
      note.className = "visually-hidden";
      note.setAttribute("aria-live", "polite");
      document.body.appendChild(note);
    }
    note.textContent = text;
  }

  /* ---- widths: one stylesheet, one rule per sized column (the selection column is child 1;
     group rows, whose cells span columns, keep their own layout) ---- */
  var sheet = null, styleEl = null;
  function writeRules(widths) {
    var rules = [];
    columns().forEach(function (col, i) {
      if (!(col in widths)) return;
      var cell = "table.runs tr:not(.group-row) > :nth-child(" + (i + 2) + ")";
      var px = widths[col] + "px";
      rules.push(cell + " { box-sizing: border-box; width: " + px + "; min-width: " + px +
                 "; max-width: " + px + "; overflow: hidden; text-overflow: ellipsis; }");
      rules.push(cell + " .clip { max-width: 100%; }");
      rules.push(cell + " a.run-link { max-width: calc(100% - 1.3em); }");   /* beside its swatch */
      rules.push(cell + ".pin { text-overflow: clip; }");   /* the name ends in its own "…" */
    });
    var text = rules.join("\n");
    if (document.adoptedStyleSheets !== undefined && window.CSSStyleSheet && CSSStyleSheet.prototype.replaceSync) {
      if (!sheet) {
        sheet = new CSSStyleSheet();
        document.adoptedStyleSheets = document.adoptedStyleSheets.concat([sheet]);
      }
      sheet.replaceSync(text);
    } else {
      if (!styleEl) { styleEl = document.createElement("style"); document.head.appendChild(styleEl); }
      styleEl.textContent = text;
    }
    headers().forEach(function (th) {
      var handle = $(".col-resize", th);
      if (!handle) return;
      var w = widths[th.dataset.col];
      handle.setAttribute("aria-valuenow", String(w || Math.round(th.getBoundingClientRect().width)));
      handle.setAttribute("aria-valuemin", String(MIN_WIDTH));
      handle.setAttribute("aria-valuemax", String(MAX_WIDTH));
    });
  }

  /* ---- ask the server for the table in a new shape; the URL is pushed ---- */
  var pendingFocus = null;
  function reshape(order, widths, focus) {
    var url = stateUrl();
    if (!url || !window.htmx) return;
    url.searchParams.set("cols", order.join(","));
    var text = widthsText(widths);
    if (text) url.searchParams.set("widths", text); else url.searchParams.delete("widths");
    pendingFocus = focus || null;
    window.htmx.ajax("GET", url.pathname + url.search,
                     { source: "#runs-shape-push", target: "#runs-results", swap: "outerHTML" });
  }

  /* ---- reorder: drag a header, or Alt+Left / Alt+Right on it ---- */
  function moved(order, from, to, after) {
    var out = order.filter(function (c) { return c !== from; });
    var at = out.indexOf(to);
    if (at < 0) return order;
    out.splice(after ? at + 1 : at, 0, from);
    return out;
  }

  var drag = null, swallowClick = false;
  function dropTarget(x) {
    var ths = headers();
    for (var i = 0; i < ths.length; i++) {
      var box = ths[i].getBoundingClientRect();
      if (x >= box.left && x < box.right) return { th: ths[i], after: x >= box.left + box.width / 2 };
    }
    if (!ths.length) return null;
    var first = ths[0].getBoundingClientRect();
    return x < first.left ? { th: ths[0], after: false } : { th: ths[ths.length - 1], after: true };
  }
  function clearMarks() {
    $$("table.runs th.drop-before, table.runs th.drop-after, table.runs th.dragging").forEach(function (th) {
      th.classList.remove("drop-before", "drop-after", "dragging");
    });
  }

  function onHeaderDown(ev) {
    if (ev.button !== 0 || ev.target.closest(".col-resize")) return;
    var th = ev.target.closest("table.runs thead th[data-col]");
    if (!th) return;
    drag = { th: th, col: th.dataset.col, x: ev.clientX, y: ev.clientY, on: false, id: ev.pointerId };
  }
  function onHeaderMove(ev) {
    if (!drag || ev.pointerId !== drag.id) return;
    if (!drag.on) {
      if (Math.abs(ev.clientX - drag.x) + Math.abs(ev.clientY - drag.y) < DRAG_FROM) return;
      drag.on = true;
      drag.th.classList.add("dragging");
      document.body.classList.add("runs-dragging");
    }
    ev.preventDefault();
    clearMarks();
    drag.th.classList.add("dragging");
    var target = dropTarget(ev.clientX);
    if (target && target.th !== drag.th) target.th.classList.add(target.after ? "drop-after" : "drop-before");
  }
  function onHeaderUp(ev) {
    if (!drag || ev.pointerId !== drag.id) return;
    var was = drag;
    drag = null;
    document.body.classList.remove("runs-dragging");
    clearMarks();
    if (!was.on) return;
    swallowClick = true;                   /* the click that ends a drag does not sort */
    window.setTimeout(function () { swallowClick = false; }, 0);
    var target = dropTarget(ev.clientX);
    if (!target || target.th === was.th) return;
    var order = columns(), next = moved(order, was.col, target.th.dataset.col, target.after);
    if (next.join(",") === order.join(",")) return;
    say("Moved " + was.th.textContent.trim() + (target.after ? " after " : " before ") + target.th.textContent.trim());
    reshape(next, readWidths());
  }
  function onHeaderKey(ev) {
    if (!ev.altKey || (ev.key !== "ArrowLeft" && ev.key !== "ArrowRight")) return;
    var link = ev.target.closest("table.runs thead th[data-col] a.sort");
    if (!link) return;
    ev.preventDefault();
    var col = link.closest("th").dataset.col, order = columns(), i = order.indexOf(col);
    var j = ev.key === "ArrowLeft" ? i - 1 : i + 1;
    if (j < 0 || j >= order.length) { say("This column is already the " + (j < 0 ? "first" : "last")); return; }
    var next = moved(order, col, order[j], ev.key === "ArrowRight");
    say("Moved " + link.textContent.trim() + " to place " + (j + 1) + " of " + order.length);
    reshape(next, readWidths(), { col: col, part: "a.sort" });
  }

  /* ---- resize: drag a header's edge; arrow keys on it; double-click or Delete resets ---- */
  var sizing = null, keyTimer = null;
  function onEdgeDown(ev) {
    var handle = ev.target.closest("table.runs .col-resize");
    if (!handle || ev.button !== 0) return;
    ev.preventDefault();
    ev.stopPropagation();
    var th = handle.closest("th");
    sizing = { col: th.dataset.col, x: ev.clientX, start: th.getBoundingClientRect().width,
               widths: readWidths(), id: ev.pointerId, moved: false };
    if (handle.setPointerCapture) handle.setPointerCapture(ev.pointerId);
    document.body.classList.add("runs-resizing");
  }
  function onEdgeMove(ev) {
    if (!sizing || ev.pointerId !== sizing.id) return;
    ev.preventDefault();
    sizing.moved = true;
    sizing.widths[sizing.col] = clamp(sizing.start + ev.clientX - sizing.x);
    writeRules(sizing.widths);
  }
  function onEdgeUp(ev) {
    if (!sizing || ev.pointerId !== sizing.id) return;
    var was = sizing;
    sizing = null;
    document.body.classList.remove("runs-resizing");
    if (!was.moved) return;
    swallowClick = true;
    window.setTimeout(function () { swallowClick = false; }, 0);
    reshape(columns(), was.widths);
  }
  function onEdgeKey(ev) {
    var handle = ev.target.closest("table.runs .col-resize");
    if (!handle) return;
    var th = handle.closest("th"), col = th.dataset.col, widths = readWidths();
    var now = widths[col] || Math.round(th.getBoundingClientRect().width);
    if (ev.key === "ArrowLeft" || ev.key === "ArrowRight") {
      var step = (ev.shiftKey ? BIG_STEP : STEP) * (ev.key === "ArrowLeft" ? -1 : 1);
      widths[col] = clamp(now + step);
    } else if (ev.key === "Delete" || ev.key === "Backspace") {
      delete widths[col];
    } else {
      return;
    }
    ev.preventDefault();
    results().dataset.widths = JSON.stringify(widths);     /* the next key starts from here */
    writeRules(widths);
    say(col in widths ? "Width " + widths[col] + " pixels" : "Width reset");
    window.clearTimeout(keyTimer);
    keyTimer = window.setTimeout(function () { reshape(columns(), widths, { col: col, part: ".col-resize" }); }, 400);
  }
  function onEdgeDouble(ev) {
    var handle = ev.target.closest("table.runs .col-resize");
    if (!handle) return;
    var widths = readWidths();
    delete widths[handle.closest("th").dataset.col];
    reshape(columns(), widths);
  }

  /* ---- group rows fold; what is folded stays folded as the table is asked again ---- */
  var folded = {};
  function groupName(row) {
    var key = $(".group-key", row), value = $(".group-value", row);
    return (key ? key.textContent : "") + (value ? value.textContent : "");
  }
  function setFolded(row, fold) {
    var button = $(".group-fold", row);
    if (button) {
      button.setAttribute("aria-expanded", fold ? "false" : "true");
      button.textContent = fold ? "\u25b8" : "\u25be";
    }
    row.classList.toggle("folded", fold);
    $$('tr[data-run][data-group="' + row.dataset.group + '"]', row.parentNode).forEach(function (tr) { tr.hidden = fold; });
  }
  function onFold(ev) {
    var button = ev.target.closest("table.runs .group-fold");
    if (!button) return;
    var row = button.closest("tr"), fold = button.getAttribute("aria-expanded") === "true";
    folded[groupName(row)] = fold;
    setFolded(row, fold);
  }

  /* ---- forms that carry the table's state take it from the last render (the hidden fields
     were written with the page, before any sort, reorder or resize) ---- */
  function fillForm(ev) {
    var form = ev.target, url = stateUrl();
    if (!url) return;
    var take = { "query-form": ["cols", "sort", "desc", "widths"],
                 "columns-form": ["q", "sort", "desc", "widths", "group"],
                 "save-view": ["q", "cols", "sort", "desc", "widths", "group"] }[form.id];
    if (!take) return;
    var data = ev.formData, params = url.searchParams;
    take.forEach(function (name) { data.set(name, params.get(name) || ""); });
    if (form.id === "columns-form") {        /* kept columns keep their place; new ones go last */
      var chosen = $$(".col-choice", form).filter(function (b) { return b.checked; }).map(function (b) { return b.value; });
      var order = columns().filter(function (c) { return chosen.indexOf(c) >= 0; });
      chosen.forEach(function (c) { if (order.indexOf(c) < 0) order.push(c); });
      data.set("cols", order.join(","));
    }
  }

  function layout() {
    writeRules(readWidths());
    $$("table.runs tr.group-row").forEach(function (row) { if (folded[groupName(row)]) setFolded(row, true); });
    if (pendingFocus) {
      var th = $$("table.runs thead th[data-col]").filter(function (t) { return t.dataset.col === pendingFocus.col; })[0];
      var el = th && $(pendingFocus.part, th);
      if (el) el.focus();
      pendingFocus = null;
    }
  }

  function init() {
    var doc = document;
    doc.addEventListener("pointerdown", onEdgeDown, true);
    doc.addEventListener("pointermove", onEdgeMove);
    doc.addEventListener("pointerup", onEdgeUp);
    doc.addEventListener("pointercancel", onEdgeUp);
    doc.addEventListener("pointerdown", onHeaderDown);
    doc.addEventListener("pointermove", onHeaderMove);
    doc.addEventListener("pointerup", onHeaderUp);
    doc.addEventListener("pointercancel", function () { drag = null; clearMarks(); });
    doc.addEventListener("dragstart", function (ev) {          /* no native link drag */
      if (ev.target.closest && ev.target.closest("table.runs thead")) ev.preventDefault();
    });
    doc.addEventListener("click", function (ev) {
      if (swallowClick && ev.target.closest && ev.target.closest("table.runs thead")) {
        ev.preventDefault(); ev.stopImmediatePropagation();
      }
    }, true);
    doc.addEventListener("click", onFold);
    doc.addEventListener("dblclick", onEdgeDouble);
    doc.addEventListener("keydown", onHeaderKey);
    doc.addEventListener("keydown", onEdgeKey);
    doc.addEventListener("formdata", fillForm);
    doc.body.addEventListener("htmx:afterSwap", layout);
    doc.body.addEventListener("htmx:afterSettle", layout);
    layout();
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
