/* NuBoard Charts: the form of a chart's own settings (y range, log scale, smoothing), which win
   over the page's for that chart until Reset, and the checks of what the URL or localStorage
   say of them. static/charts.js keeps them (?cs=) and draws with them. Built with the DOM:
   no text becomes HTML. */
(function () {
  "use strict";

  var KINDS = { ema: "EMA", mean: "running average", gauss: "Gaussian" };

  function make(tag, attrs, text) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    if (text) node.textContent = text;
    return node;
  }

  function labelled(text, control) {
    var label = make("label", {}, text + " ");
    label.appendChild(control);
    return label;
  }

  function select(name, options) {
    var box = make("select", { name: name });
    options.forEach(function (o) { box.appendChild(make("option", { value: o[0] }, o[1])); });
    return box;
  }

  /* a chart's settings as kept: {ymin, ymax: numbers, log: boolean, smoothing: 0..0.99,
     kind: ema|mean|gauss}, each only when set; null when none is (or `o` is not an object) */
  function check(o) {
    if (!o || typeof o !== "object" || Array.isArray(o)) return null;
    var out = {}, any = false;
    ["ymin", "ymax"].forEach(function (k) {
      if (typeof o[k] === "number" && isFinite(o[k])) { out[k] = o[k]; any = true; }
    });
    if (typeof o.log === "boolean") { out.log = o.log; any = true; }
    if (typeof o.smoothing === "number" && o.smoothing >= 0 && o.smoothing <= 0.99) { out.smoothing = o.smoothing; any = true; }
    if (KINDS[o.kind]) { out.kind = o.kind; any = true; }
    return any ? out : null;
  }

  /* what the form says, as check() keeps it */
  function read(form) {
    var n = function (name) {
      var text = form.elements[name].value.trim();
      return text === "" ? undefined : Number(text);
    };
    var log = form.elements.log.value;
    return check({ ymin: n("ymin"), ymax: n("ymax"), log: log === "" ? undefined : log === "1",
                   smoothing: n("smoothing"), kind: form.elements.kind.value || undefined });
  }

  function fill(form, o) {
    o = o || {};
    form.elements.ymin.value = o.ymin === undefined ? "" : String(o.ymin);
    form.elements.ymax.value = o.ymax === undefined ? "" : String(o.ymax);
    form.elements.log.value = o.log === undefined ? "" : (o.log ? "1" : "0");
    form.elements.smoothing.value = o.smoothing === undefined ? "" : String(o.smoothing);
    form.elements.kind.value = o.kind || "";
  }

  /* the form of one chart's settings: change(settings or null) after each edit and on Reset */
  function form(current, change) {
    var f = make("form", { "class": "chart-own" });
    f.hidden = true;
    f.appendChild(labelled("y min", make("input", { name: "ymin", type: "number", step: "any", placeholder: "auto" })));
    f.appendChild(labelled("y max", make("input", { name: "ymax", type: "number", step: "any", placeholder: "auto" })));
    f.appendChild(labelled("log scale", select("log", [["", "as the page"], ["1", "on"], ["0", "off"]])));
    f.appendChild(labelled("smoothing", make("input", { name: "smoothing", type: "number", min: "0", max: "0.99",
                                                         step: "0.01", placeholder: "as the page" })));
    f.appendChild(labelled("kind", select("kind", [["", "as the page"]].concat(Object.keys(KINDS).map(function (k) {
      return [k, KINDS[k]]; })))));
    var reset = make("button", { type: "button", "class": "chart-own-reset" }, "Reset");
    f.appendChild(reset);
    fill(f, current);
    f.addEventListener("submit", function (ev) { ev.preventDefault(); });
    f.addEventListener("change", function () { change(read(f)); });
    reset.addEventListener("click", function () { fill(f, null); change(null); });
    return f;
  }

  window.NuBoardChartOwn = { form: form, check: check, fill: fill };
})();
