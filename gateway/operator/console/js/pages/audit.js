// The audit log: filtered by type and time, newest first, paged by the API's cursor (the
// cursors of the pages before are kept, so "Newer" goes back).

import { api, query } from "../api.js";
import { $, el, fillTable, when } from "../dom.js";

let cursors = [null];  // the cursor of each page seen; the last is the current page's

export async function show() {
  const filter = {
    type: $("audit-type").value.trim(),
    since: $("audit-since").value,
    limit: $("audit-limit").value,
    cursor: cursors[cursors.length - 1],
  };
  const page = await api("/v1/management/audit-log" + query(filter));
  fillTable("audit-table", page.events.map((e) => [
    when(e.timestamp), el("code", {}, e.type), e.actor.email || e.actor.id || "-",
    [e.target.type, e.target.email || e.target.id].filter(Boolean).join(" ") || "-",
    e.workspace_id || "organisation", e.ip_address || "-", details(e.details),
  ]), "No events match.");
  $("audit-older").disabled = !page.has_more;
  $("audit-older").dataset.cursor = page.next_cursor || "";
  $("audit-newer").disabled = cursors.length <= 1;
  $("audit-page").textContent = `Page ${cursors.length}`;
}

function details(values) {
  const shown = Object.entries(values || {}).map(([k, v]) => `${k}: ${typeof v === "object" ? JSON.stringify(v) : v}`);
  return shown.join("; ") || "-";
}

export function init(ui) {
  ui.submit("audit-form", async () => { cursors = [null]; await show(); });
  $("audit-older").addEventListener("click", () => ui.guarded(async () => {
    cursors.push($("audit-older").dataset.cursor);
    await show();
  }));
  $("audit-newer").addEventListener("click", () => ui.guarded(async () => {
    cursors.pop();
    await show();
  }));
}
