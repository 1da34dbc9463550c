// The product admin's rows (partner/catalog/admin/rows.py): "Add" copies the row template of its
// own table (the nearest [data-rows-prefix]) with the next row number, and counts it in TOTAL_FORMS.
// The server reads every row back; a new row left blank is ignored.
"use strict";

document.addEventListener("click", (event) => {
  const button = event.target.closest("[data-rows-add]");
  if (!button) {
    return;
  }
  const group = button.closest("[data-rows-prefix]");
  const prefix = group.dataset.rowsPrefix;
  const total = group.querySelector(`input[name="${prefix}-TOTAL_FORMS"]`);
  const template = group.querySelector(`template[data-rows-template="${prefix}"]`);
  const body = group.querySelector(`[data-rows-body="${prefix}"]`);
  const index = Number(total.value);
  // Only this table's placeholder: a nested table's template keeps its own until it is used.
  body.insertAdjacentHTML("beforeend", template.innerHTML.replaceAll(`${prefix}-__prefix__`, `${prefix}-${index}`));
  total.value = String(index + 1);
  const none = group.querySelector(":scope > .rows-none");
  if (none) {
    none.remove();
  }
  const added = body.lastElementChild;
  const first = added && added.querySelector("input:not([type=checkbox]):not([type=hidden]), select, textarea");
  if (first) {
    first.focus();
  }
});
