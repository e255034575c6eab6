/* The New version form: a field is flagged once the user has left it.
 *
 * The form sends the hidden field `touched` with each check ("name,path,meta-2"); the server
 * shows a field's problem only when it is listed there, so typing in the first field flags
 * none of the others. Leaving a field adds it and asks for a check (the event
 * nuboard:touched, one of the form's hx-trigger events); a metadata row counts as left when
 * the focus leaves the row, and the store choice when it leaves the radio buttons. The
 * lines come back beside each field as out-of-band swaps (templates/_version_check.html).
 */
(function () {
  "use strict";

  var FIELDS = ["name", "path", "store", "type", "description"];

  function slotOf(el) {
    if (!el || !el.name) return null;
    var meta = /^meta_(?:key|kind|value)_(\d+)$/.exec(el.name);
    if (meta) return "meta-" + meta[1];
    return FIELDS.indexOf(el.name) >= 0 ? el.name : null;
  }

  function touch(touched, slot) {
    var names = touched.value ? touched.value.split(",") : [];
    if (names.indexOf("*") >= 0 || names.indexOf(slot) >= 0) return false;
    names.push(slot);
    touched.value = names.join(",");
    return true;
  }

  /* The number each metadata row's line slot carries, after "Add a row" cloned the last. */
  function renumberRows() {
    var rows = document.querySelectorAll("#meta-table tbody tr.meta-row");
    Array.prototype.forEach.call(rows, function (row, i) {
      var slot = row.querySelector(".field-msg");
      var value = row.querySelector('input[name^="meta_value_"]');
      if (!slot || slot.id === "msg-meta-" + i) return;
      slot.id = "msg-meta-" + i;
      if (value) value.setAttribute("aria-describedby", slot.id);
      while (slot.firstChild) slot.removeChild(slot.firstChild);
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    var form = document.getElementById("version-form");
    var touched = document.getElementById("touched");
    if (!form || !touched) return;
    form.addEventListener("focusout", function (ev) {
      var slot = slotOf(ev.target);
      if (!slot || slotOf(ev.relatedTarget) === slot) return;   /* still in the same row */
      if (touch(touched, slot)) {
        var event = document.createEvent("Event");
        event.initEvent("nuboard:touched", true, true);
        form.dispatchEvent(event);
      }
    });
    form.addEventListener("submit", function () { touched.value = "*"; });
    /* on the document, so it runs after nuboard.js has added the row on the button */
    document.addEventListener("click", function (ev) {
      if (ev.target && ev.target.id === "add-meta-row") renumberRows();
    });
  });
})();
