/* NuBoard run colours: every <input type="color" class="run-colour" data-colour-of="RUN"> on any
   page (the Charts run list, the run page) sets that run's colour. On change it POSTs the colour
   to the project's endpoint (<meta name="nuboard-colours">, nuboard/web/colour_edit.py) with the
   page's CSRF token; once kept, every element [data-run="RUN"] of the page takes it (its
   --run-colour and data-colour, a swatch painted inline), every input of that run shows it, and
   document gets the event "nuboard:colour" ({detail: {run, colour}}), on which charts redraw.
   A refused colour puts the input back and says why beside it (textContent only).
   No inline scripts: loaded from base.html with defer. */
(function () {
  "use strict";

  var READ_ONLY = "This viewer was started with --read-only: run colours cannot be set.";

  function meta() { return document.querySelector('meta[name="nuboard-colours"]'); }

  function token() {
    try {
      return JSON.parse(document.body.getAttribute("hx-headers") || "{}")["X-CSRF-Token"] || "";
    } catch (e) {
      return "";
    }
  }

  function byRun(selector, run) {
    var quoted = window.CSS && CSS.escape ? CSS.escape(run) : run.replace(/["\\]/g, "\\$&");
    return document.querySelectorAll(selector.replace("RUN", quoted));
  }

  function paint(run, colour) {
    byRun('[data-run="RUN"]', run).forEach(function (el) {
      el.style.setProperty("--run-colour", colour);
      el.setAttribute("data-colour", colour);
      var swatches = el.classList.contains("swatch") ? [el] : el.querySelectorAll(".swatch");
      Array.prototype.forEach.call(swatches, function (sw) {
        if (sw.style.background || sw.style.backgroundColor) sw.style.background = colour;
      });
    });
    byRun('input.run-colour[data-colour-of="RUN"]', run).forEach(function (input) {
      input.value = colour;
      input.defaultValue = colour;
    });
    document.dispatchEvent(new CustomEvent("nuboard:colour", { detail: { run: run, colour: colour } }));
  }

  function say(input, message) {
    var note = input.nextElementSibling;
    if (!note || !note.classList.contains("run-colour-note")) {
      if (!message) return;
      note = document.createElement("span");
      note.className = "run-colour-note error small";
      note.setAttribute("role", "alert");
      input.insertAdjacentElement("afterend", note);
    }
    note.textContent = message || "";
    note.hidden = !message;
  }

  function save(input) {
    var run = input.getAttribute("data-colour-of"), colour = input.value, target = meta();
    if (!run) return;
    if (!target || target.hasAttribute("data-read-only")) {
      input.value = input.defaultValue;
      say(input, readOnly(target));
      return;
    }
    var body = new URLSearchParams();
    body.set("run", run);
    body.set("colour", colour);
    input.setAttribute("aria-busy", "true");
    fetch(target.getAttribute("content"), {
      method: "POST", credentials: "same-origin", body: body,
      headers: { "X-CSRF-Token": token(), Accept: "application/json" }
    }).then(function (resp) {
      return resp.json().catch(function () { return { error: "The viewer answered " + resp.status + "." }; })
        .then(function (doc) { return { ok: resp.ok, doc: doc }; });
    }).then(function (answer) {
      input.removeAttribute("aria-busy");
      if (!answer.ok || !answer.doc.colour) {
        input.value = input.defaultValue;
        say(input, answer.doc.error || "The colour was not kept.");
        return;
      }
      say(input, "");
      paint(run, answer.doc.colour);
    }).catch(function () {
      input.removeAttribute("aria-busy");
      input.value = input.defaultValue;
      say(input, "The viewer could not be reached; the colour was not kept.");
    });
  }

  /* why colours cannot be set: the header's words (--read-only, or a bucket's mirror) */
  function readOnly(target) {
    var why = target && target.getAttribute("data-read-only");
    return why && why !== "1" ? why : READ_ONLY;
  }

  /* under --read-only the inputs show the colours and cannot change them */
  function lock(scope) {
    var target = meta();
    if (target && !target.hasAttribute("data-read-only")) return;
    (scope || document).querySelectorAll("input.run-colour").forEach(function (input) {
      input.disabled = true;
      input.title = readOnly(target);
    });
  }

  document.addEventListener("change", function (ev) {
    var input = ev.target;
    if (input && input.matches && input.matches("input.run-colour")) save(input);
  });
  document.addEventListener("htmx:afterSettle", function (ev) { lock(ev.target); });
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", function () { lock(); });
  else lock();
})();
