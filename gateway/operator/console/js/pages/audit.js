// The audit log: filtered by type and time, newest first, paged by the API's cursor.

import { api, query } from "../api.js";
import { $, el, fillTable, when } from "../dom.js";
import { CursorPager } from "../pager.js";

const pager = new CursorPager("audit", show);

export async function show() {
  const filter = {
    type: $("audit-type").value.trim(),
    since: $("audit-since").value,
    limit: $("audit-limit").value,
    cursor: pager.cursor,
  };
  const page = await api("/v1/management/audit-log" + query(filter));
  fillTable("audit-table", page.events.map((e) => [
    when(e.timestamp), el("code", {}, e.type), e.actor.email || e.actor.id || "-",
    [e.target.type, e.target.email || e.target.id].filter(Boolean).join(" ") || "-",
    e.workspace_id || "organisation", e.ip_address || "-", details(e.details),
  ]), "No events match.");
  pager.update(page);
}

function details(values) {
  const shown = Object.entries(values || {}).map(([k, v]) => `${k}: ${typeof v === "object" ? JSON.stringify(v) : v}`);
  return shown.join("; ") || "-";
}

export function init(ui) {
  pager.bind(ui);
}
