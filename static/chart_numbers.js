/* NuBoard's numbers as text, for the charts (static/charts.js) and any page's script: the one
   text rule for a value (the same as the server's, docs/viewer.md), SI tick labels for steps,
   durations for the relative axes, and the width a label takes on an axis. Loaded before
   charts.js; it defines window.NuBoardNumbers and nothing else. */
(function () {
  "use strict";

  /* an integer's digits, all of them, exactly as the double holds it (no "1e+21") */
  function integerText(v) {
    if (Number.isSafeInteger(v)) return String(v);
    return typeof BigInt === "function" ? BigInt(v).toString() : v.toFixed(0);
  }

  /* the plain decimal for 1e-4 <= |v| < 1e6: `digits` significant digits, never rounding the
     integer part, trailing zeros and a trailing "." removed (as nuboard/web/number_text.py) */
  function plain(v, digits) {
    var power = parseInt(Math.abs(v).toExponential().split("e")[1], 10);
    var text = String(Number(v.toFixed(Math.min(100, Math.max(0, digits - 1 - power)))));
    return text === "-0" ? "0" : text;
  }

  function exponent(v, digits) { return Number(v.toPrecision(digits)).toExponential(); }

  /* THE text of a value, wherever it is shown: "" for none, true/false, an integer's every
     digit (isInt: the value is an integer, not a float that happens to be whole), NaN, inf,
     -inf, 0; a float as a plain decimal of 5 significant digits from 1e-4 to 1e6, else with an
     exponent of at most 4 (3.125e-4, 1.2e+7) */
  function text(v, isInt) {
    if (v === null || v === undefined) return "";
    if (typeof v === "boolean") return v ? "true" : "false";
    if (typeof v !== "number") return String(v);
    if (isInt && isFinite(v)) return integerText(v);
    if (isNaN(v)) return "NaN";
    if (v === Infinity) return "inf";
    if (v === -Infinity) return "-inf";
    if (v === 0) return "0";
    var a = Math.abs(v);
    return a >= 1e-4 && a < 1e6 ? plain(v, 5) : exponent(v, 4);
  }

  /* a tick of a value axis: the text rule with `digits` significant digits (more where two
     ticks would read the same) */
  function tick(v, digits) {
    if (v === null || v === undefined) return "";
    if (v === 0) return "0";
    var a = Math.abs(v);
    return a >= 1e-4 && a < 1e6 ? plain(v, digits) : exponent(v, digits);
  }

  var SI = [[1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "k"]];

  /* a step in SI units: 500, 200k, 1.2M, 2M */
  function si(v, digits) {
    if (v === null || v === undefined) return "";
    var a = Math.abs(v);
    for (var i = 0; i < SI.length; i++) {
      if (a >= SI[i][0]) return plain(v / SI[i][0], digits - 1) + SI[i][1];
    }
    return a >= 1 || v === 0 ? plain(v, Math.max(digits, 1)) : tick(v, digits);
  }

  /* labels with as many digits as it takes for no two of them to read the same */
  function distinct(vals, format) {
    var labels = [];
    for (var digits = 4; digits <= 12; digits++) {
      labels = vals.map(function (v) { return format(v, digits); });
      var seen = {}, same = false;
      labels.forEach(function (l, i) { if (vals[i] !== null && l !== "") { if (seen[l]) same = true; seen[l] = 1; } });
      if (!same) return labels;
    }
    return labels;
  }

  /* seconds as 1d2h, 3h5m, 4m30s, 12s (or 0.25s below a second's increment) */
  function seconds(s, incr) {
    var sign = s < 0 ? "-" : "";
    s = Math.abs(s);
    if (incr !== undefined && incr < 1) return sign + s.toFixed(Math.min(3, Math.ceil(-Math.log10(incr)))) + "s";
    s = Math.round(s);
    var d = Math.floor(s / 86400), h = Math.floor((s % 86400) / 3600), m = Math.floor((s % 3600) / 60), sec = s % 60;
    if (d) return sign + d + "d" + (h ? h + "h" : "") + (m ? m + "m" : "");
    if (h) return sign + h + "h" + (m ? m + "m" : "") + (sec ? sec + "s" : "");
    if (m) return sign + m + "m" + (sec ? sec + "s" : "");
    return sign + sec + "s";
  }

  function powers(bases, from, to) {
    var out = [];
    for (var e = from; e <= to; e++) bases.forEach(function (b) { out.push(b * Math.pow(10, e)); });
    return out;
  }

  /* the font of the charts' axes, and the width (CSS px) of the widest of some labels in it */
  var AXIS_FONT = '12px system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, "Noto Sans", ' +
    'sans-serif, "Apple Color Emoji", "Segoe UI Emoji", "Segoe UI Symbol", "Noto Color Emoji"';   // uPlot's own
  var measurer = null;
  function widest(labels, font) {
    if (!measurer) measurer = document.createElement("canvas").getContext("2d");
    measurer.font = font || AXIS_FONT;
    var w = 0;
    (labels || []).forEach(function (l) { if (l) w = Math.max(w, measurer.measureText(String(l)).width); });
    return w;
  }

  window.NuBoardNumbers = {
    text: text, tick: tick, si: si, distinct: distinct, seconds: seconds, widest: widest,
    AXIS_FONT: AXIS_FONT,
    STEP_INCRS: powers([1, 2, 5], 0, 12),
    SECOND_INCRS: [0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200,
                   10800, 21600, 43200, 86400, 172800, 604800, 2592000, 31536000]
  };
})();
