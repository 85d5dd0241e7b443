// Analytics exports: create one, follow it while it is built (the list is read again every
// second while any export is processing, for at most two minutes), download the file.

import { api, download } from "../api.js";
import { $, button, el, fillTable, num, save, status, when } from "../dom.js";

const E = "/v1/management/analytics/export";
const FOLLOW_MS = 1000;
const FOLLOW_FOR_MS = 120000;
let ui = null;
let following = null;  // when following began
let timer = null;

export async function show() {
  const found = (await api(E)).data;
  fillTable("exports-table", found.map((x) => [
    when(x.created_at), `${x.period.start} to ${x.period.end}`, x.format, x.include.join(", "),
    status(x.status), x.rows == null ? "-" : num(x.rows), x.expires_at ? when(x.expires_at) : "-",
    x.status === "complete"
      ? button("Download", () => ui.guarded(() => fetchFile(x)), { "data-download": x.export_id })
      : x.error || "",
  ]), "No exports yet.");
  follow(found.some((x) => x.status === "processing"));
}

/** Read the list again shortly while an export is being built; stop once none is, when
 * the page is left, or after FOLLOW_FOR_MS. */
function follow(processing) {
  if (!processing) { following = null; return; }
  following = following || Date.now();
  if (Date.now() - following > FOLLOW_FOR_MS) return;
  clearTimeout(timer);
  timer = setTimeout(() => {
    if (document.body.dataset.page === "exports") ui.guarded(show);
  }, FOLLOW_MS);
}

async function create() {
  const include = [...document.querySelectorAll("#export-form input[name=include]:checked")].map((i) => i.value);
  const body = { format: $("export-format").value, include };
  if ($("export-start").value) body.start_date = $("export-start").value;
  if ($("export-end").value) body.end_date = $("export-end").value;
  const made = await api(E, { method: "POST", body });
  following = null;
  await show();
  $("export-result").textContent = `Export ${made.export_id} requested: ${made.status}.`;
}

async function fetchFile(record) {
  const file = await download(`${E}/${record.export_id}/download`);
  save(file.blob, file.name);
  $("export-result").textContent = `Downloaded ${file.name} (${num(file.blob.size)} bytes).`;
  $("export-result").dataset.downloaded = file.name;
}

export function init(shared) {
  ui = shared;
  ui.submit("export-form", create);
}
