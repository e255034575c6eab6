/* NuBoard Runs table: the column chooser's search box and the pinned name column.
   No inline scripts (the pages' CSP allows only files from here); the search reads the
   choices' data-name and hides what does not match, nothing a user wrote becomes HTML. */
(function () {
  "use strict";

  function $(sel, root) { return (root || document).querySelector(sel); }
  function $$(sel, root) { return Array.prototype.slice.call((root || document).querySelectorAll(sel)); }

  /* ---- the column chooser's search: every word typed must appear in the column's name ---- */
  function filterChoices(box) {
    var words = box.value.toLowerCase().split(/\s+/).filter(function (w) { return w; });
    var items = $$(".columns-chooser .col-item");
    var shown = 0;
    items.forEach(function (item) {
      var name = (item.dataset.name || "").toLowerCase();
      var match = words.every(function (w) { return name.indexOf(w) >= 0; });
      item.hidden = !match;
      if (match) shown += 1;
    });
    $$(".columns-chooser fieldset").forEach(function (set) {
      var own = $$(".col-item", set);
      set.classList.toggle("no-match", own.length > 0 && own.every(function (i) { return i.hidden; }));
    });
    var found = $("#columns-found");
    if (found) found.textContent = !words.length ? "" :
      shown ? shown + " of " + items.length + " columns" : "no column matches \u201c" + box.value.trim() + "\u201d";
  }

  function initSearch() {
    var box = $("#columns-search");
    if (!box) return;
    box.addEventListener("input", function () { filterChoices(box); });
    box.addEventListener("keydown", function (ev) {
      if (ev.key === "Enter") ev.preventDefault();          /* Enter finds, it does not apply */
      if (ev.key === "Escape") { box.value = ""; filterChoices(box); }
    });
    var details = box.closest("details");
    if (details) details.addEventListener("toggle", function () {
      if (details.open) box.focus();
    });
    if (box.value) filterChoices(box);
  }

  /* ---- long headers (optimizer.weight_decay, eval/mmlu/accuracy) may wrap after a . or / ---- */
  function breakHeaders() {
    $$("table.runs th.col a.sort").forEach(function (link) {
      if (link.dataset.broken) return;
      link.dataset.broken = "1";
      Array.prototype.slice.call(link.childNodes).forEach(function (node) {
        if (node.nodeType !== 3 || !/[.\/]./.test(node.nodeValue)) return;
        var parts = node.nodeValue.replace(/([.\/])(?=.)/g, "$1\u0000").split("\u0000");
        parts.forEach(function (part, i) {
          link.insertBefore(document.createTextNode(part), node);
          if (i < parts.length - 1) link.insertBefore(document.createElement("wbr"), node);
        });
        link.removeChild(node);
      });
    });
  }

  /* ---- the pinned name column sits just right of the selection column, whatever its width ---- */
  function pinName() {
    $$("table.runs.pinned").forEach(function (table) {
      var pick = $("th.pick", table);
      if (pick) table.style.setProperty("--pin-left", pick.getBoundingClientRect().width + "px");
    });
  }

  function layout() {
    breakHeaders();
    pinName();
  }

  function init() {
    initSearch();
    layout();
    document.body.addEventListener("htmx:afterSwap", layout);
    window.addEventListener("resize", pinName);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
