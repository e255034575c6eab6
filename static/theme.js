/* NuBoard theme: loaded in <head> without defer, so <html data-theme="light|dark"> is set before
   the first paint. The choice stored in localStorage "nuboard:theme" wins; without one the page
   follows the system's prefers-color-scheme (and its changes). The header's #theme-toggle flips
   it, stores it and tells the page: document gets the event "nuboard:theme" ({detail: {theme}}). */
(function () {
  "use strict";

  var KEY = "nuboard:theme";
  var html = document.documentElement;
  var query = window.matchMedia ? window.matchMedia("(prefers-color-scheme: dark)") : null;

  function stored() {
    try {
      var value = window.localStorage.getItem(KEY);
      return value === "light" || value === "dark" ? value : null;
    } catch (e) {                       /* storage off (a private window, a policy) */
      return null;
    }
  }
  function system() { return query && query.matches ? "dark" : "light"; }

  function labelButton() {
    var button = document.getElementById("theme-toggle");
    if (!button) return;
    var other = html.getAttribute("data-theme") === "dark" ? "light" : "dark";
    button.textContent = other === "dark" ? "\u263E Dark" : "\u2600 Light";
    button.setAttribute("aria-label", "Switch to the " + other + " theme");
    button.title = "Switch to the " + other + " theme";
  }

  function apply(theme, announce) {
    if (html.getAttribute("data-theme") === theme && !announce) return;
    html.setAttribute("data-theme", theme);
    labelButton();
    if (announce) document.dispatchEvent(new CustomEvent("nuboard:theme", {detail: {theme: theme}}));
  }

  apply(stored() || system(), false);

  if (query) {
    var follow = function () { if (!stored()) apply(system(), true); };
    if (query.addEventListener) query.addEventListener("change", follow);
    else if (query.addListener) query.addListener(follow);
  }

  document.addEventListener("DOMContentLoaded", function () {
    var button = document.getElementById("theme-toggle");
    if (!button) return;
    labelButton();
    button.hidden = false;
    button.addEventListener("click", function () {
      var next = html.getAttribute("data-theme") === "dark" ? "light" : "dark";
      try { window.localStorage.setItem(KEY, next); } catch (e) { /* kept for this page only */ }
      apply(next, true);
    });
  });
}());
