/* NuBoard viewer: the project picker, run selection, column chooser, the forms that ask
   first, console and artifacts (the Charts are in charts.js).
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
    var diff = $("#diff-selected");
    if (diff) {         /* the Diff page compares 2 to 20 runs (web/run_diff_data.py) */
      var n = selection.length;
      diff.href = diff.dataset.base + (n ? "?runs=" + encodeURIComponent(selection.join(",")) : "");
      diff.classList.toggle("disabled", n < 2 || n > 20);
      diff.textContent = n >= 2 && n <= 20 ? "Compare " + n + " runs" : "Compare selected (2 to 20)";
    }
    var del = $("#delete-selected");
    if (del) {          /* --edit-runs: the confirmation page of deleting the selected runs */
      del.href = del.dataset.base + (selection.length ? "?runs=" + encodeURIComponent(selection.join(",")) : "");
      del.classList.toggle("disabled", !selection.length);
    }
    var hide = $("#hide-selected");
    if (hide) hide.disabled = !selection.length;
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
    var hideForm = $("#hide-selected-form");
    if (hideForm) hideForm.addEventListener("submit", function () {
      hideForm.elements.runs.value = selection.join(",");     /* the runs hidden leave the list: */
      selection = []; saveSelection();                          /* and the selection */
    });
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

  /* ---- forms that ask first (deleting a saved view): data-confirm is the question, which
     the user can refuse; a refused form is not sent ---- */
  function initConfirm() {
    document.addEventListener("submit", function (ev) {
      var form = ev.target;
      if (form.dataset && form.dataset.confirm && !window.confirm(form.dataset.confirm)) {
        ev.preventDefault();
      }
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
    initPicker(); initSelection(); initColumns(); initArtifacts(); initConfirm(); scrollConsole();
    document.body.addEventListener("htmx:afterSwap", scrollConsole);
  });
})();
