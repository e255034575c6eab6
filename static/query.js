/* NuBoard query box: completes the term under the caret from the project's keys and values
   (GET data-query-keys: fields, config keys, scalars, tag/status/group values, summaries);
   inside min(, max(, last(, count( or last_step( it offers the scalar names only and closes
   the parenthesis. Arrows move, Enter or Tab accepts, Esc closes. Names reach the DOM as
   textContent only. */
(function () {
  "use strict";

  var LIMIT = 12;
  var VALUE_FIELDS = { tag: "tag", status: "status", group: "group" };

  function stops(ch) { return ch === "" || /\s/.test(ch) || ch === "(" || ch === ")"; }

  /* The term the caret is in: [start, end) of the input's value, without a leading '-'. */
  function termAt(value, caret) {
    var start = caret, end = caret;
    while (start > 0 && !stops(value.charAt(start - 1))) start -= 1;
    while (end < value.length && !stops(value.charAt(end))) end += 1;
    while (value.charAt(start) === "-" && start < caret) start += 1;
    return { start: start, end: end, text: value.slice(start, caret) };
  }

  function quoted(value) {
    return /[\s()"]/.test(value) || value === "" ? '"' + value.replace(/(["\\])/g, "\\$1") + '"' : value;
  }

  /* Names whose start, or the start of a part after '.' or '/', is `typed`; starts first. */
  function matching(names, typed) {
    var low = typed.toLowerCase(), first = [], later = [];
    names.forEach(function (n) {
      var name = n.toLowerCase();
      if (name.indexOf(low) === 0) first.push(n);
      else if (name.indexOf("." + low) >= 0 || name.indexOf("/" + low) >= 0) later.push(n);
    });
    return first.concat(later);
  }

  /* The summary function (min, max, last, count, last_step: keys.summaries) whose '(' the
     text before the term ends with, as in `min(` or `-max( "`; null outside one. */
  function summaryBefore(keys, before) {
    var m = /(?:^|[\s()-])([A-Za-z_]+)\(\s*$/.exec(before);
    if (!m) return null;
    var name = m[1].toLowerCase();
    return (keys.summaries || []).indexOf(name) >= 0 ? name : null;
  }

  /* Inside a summary's parentheses only the scalar names are offered; taking one closes the
     parenthesis (`min(tr` -> `min(train/loss)`). */
  function scalarsInside(keys, text) {
    return matching(keys.scalar, text.replace(/^"/, "")).map(function (n) {
      return { label: n, kind: "scalar", insert: quoted(n) + ")", done: false, closes: true };
    });
  }

  function suggestions(keys, text, before) {
    var out = [], m = /^([a-z_]+)(!=|==|[:=])(.*)$/.exec(text);
    if (summaryBefore(keys, before)) return scalarsInside(keys, text);
    if (m && VALUE_FIELDS[m[1]]) {
      matching(keys.values[m[1]] || [], m[3].replace(/^"/, "")).forEach(function (v) {
        out.push({ label: v, kind: m[1], insert: m[1] + m[2] + quoted(v) + " ", done: true });
      });
      return out;
    }
    if (!text || /[:=<>!"]/.test(text)) return out;
    matching(keys.fields, text).forEach(function (f) {
      out.push({ label: f, kind: "field", insert: f + ":", done: false, more: true });
    });
    matching(keys.config, text).forEach(function (k) {
      out.push({ label: k, kind: "config", insert: k, done: false });
    });
    matching(keys.scalar, text).forEach(function (k) {
      out.push({ label: k, kind: "scalar", insert: k, done: false });
    });
    matching(keys.summaries, text).forEach(function (s) {
      out.push({ label: s + "(…)", kind: "summary", insert: s + "(", done: false, more: true });
    });
    return out;
  }

  function attach(input) {
    var keys = null, loading = false, items = [], active = -1;
    var list = document.createElement("ul");
    list.className = "query-complete";
    list.id = input.id + "-complete";
    list.setAttribute("role", "listbox");
    list.hidden = true;
    input.parentNode.appendChild(list);
    input.setAttribute("role", "combobox");
    input.setAttribute("aria-autocomplete", "list");
    input.setAttribute("aria-controls", list.id);
    input.setAttribute("aria-expanded", "false");

    function load() {
      if (keys || loading) return;
      loading = true;
      fetch(input.dataset.queryKeys, { headers: { Accept: "application/json" } })
        .then(function (r) { return r.ok ? r.json() : null; })
        .then(function (data) {
          loading = false;
          if (data) { keys = data; if (document.activeElement === input) update(); }
        })
        .catch(function () { loading = false; });
    }

    function close() {
      list.hidden = true;
      items = [];
      active = -1;
      input.setAttribute("aria-expanded", "false");
      input.removeAttribute("aria-activedescendant");
    }

    function mark() {
      Array.prototype.forEach.call(list.children, function (li, i) {
        li.classList.toggle("active", i === active);
        li.setAttribute("aria-selected", i === active ? "true" : "false");
      });
      if (active >= 0) input.setAttribute("aria-activedescendant", list.id + "-" + active);
      else input.removeAttribute("aria-activedescendant");
    }

    function update() {
      if (!keys) { load(); return; }
      var term = termAt(input.value, input.selectionStart || 0);
      items = suggestions(keys, term.text, input.value.slice(0, term.start)).slice(0, LIMIT);
      if (!items.length || (items.length === 1 && items[0].insert.trim() === term.text)) {
        close();
        return;
      }
      while (list.firstChild) list.removeChild(list.firstChild);
      items.forEach(function (item, i) {
        var li = document.createElement("li");
        li.id = list.id + "-" + i;
        li.setAttribute("role", "option");
        var name = document.createElement("span");
        name.className = "qc-name";
        name.textContent = item.label;
        var kind = document.createElement("span");
        kind.className = "qc-kind";
        kind.textContent = item.kind;
        li.appendChild(name);
        li.appendChild(kind);
        li.addEventListener("mousedown", function (ev) { ev.preventDefault(); accept(i); });
        list.appendChild(li);
      });
      active = -1;
      list.style.left = input.offsetLeft + "px";
      list.style.top = (input.offsetTop + input.offsetHeight) + "px";
      list.style.minWidth = Math.min(input.offsetWidth, 420) + "px";
      list.hidden = false;
      input.setAttribute("aria-expanded", "true");
      mark();
    }

    function accept(i) {
      var item = items[i];
      if (!item) return;
      var caret = input.selectionStart || 0;
      var term = termAt(input.value, caret);
      var value = input.value;
      var after = value.slice(term.end);
      var insert = item.done && /^\s/.test(after) ? item.insert.replace(/\s+$/, "") : item.insert;
      if (item.closes && after.charAt(0) === ")") after = after.slice(1);   // one ')', not two
      input.value = value.slice(0, term.start) + insert + after;
      var at = term.start + insert.length;
      if (item.done && /^\s/.test(after)) at += 1;
      input.setSelectionRange(at, at);
      close();
      if (item.more) update();
      if (item.done) input.dispatchEvent(new Event("input", { bubbles: true }));
    }

    input.addEventListener("focus", load);
    input.addEventListener("input", update);
    input.addEventListener("blur", close);
    input.addEventListener("keydown", function (ev) {
      var open = !list.hidden && items.length;
      if (ev.key === "ArrowDown" || ev.key === "ArrowUp") {
        if (!open) { update(); return; }
        ev.preventDefault();
        var step = ev.key === "ArrowDown" ? 1 : -1;
        active = (active + step + items.length + 1) % (items.length + 1);
        if (active === items.length) active = -1;
        mark();
      } else if (ev.key === "Enter" && open && active >= 0) {
        ev.preventDefault();
        accept(active);
      } else if (ev.key === "Tab" && open && !ev.shiftKey) {
        ev.preventDefault();
        accept(active >= 0 ? active : 0);
      } else if (ev.key === "Escape" && open) {
        ev.preventDefault();
        close();
      }
    });
  }

  function init() {
    Array.prototype.forEach.call(document.querySelectorAll("input[data-query-keys]"), attach);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
