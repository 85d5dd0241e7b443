// The request log: every model call of the workspace, newest first, filtered and paged by
// the API's cursor; a request opens with its attempt timeline (each candidate of the race:
// when it started, how long it ran, how it ended).

import { api, query } from "../api.js";
import { $, button, el, fillTable, num, status, when } from "../dom.js";

const LOG = "/v1/management/request-log";
let ui = null;
let cursors = [null];  // the cursor of each page seen; the last is the current page's

function filters() {
  const since = $("log-since").value;
  return {
    status: $("log-status").value,
    provider: $("log-provider").value.trim(),
    model: $("log-model").value.trim(),
    key_id: $("log-key").value.trim(),
    error_code: $("log-error").value.trim(),
    min_latency_ms: $("log-latency").value,
    since: since ? new Date(since).toISOString() : "",
    limit: $("log-limit").value,
    cursor: cursors[cursors.length - 1],
  };
}

/** Who served an entry: its provider, or "none reached" with the error that stopped it. */
function servedBy(entry) {
  if (entry.provider) return entry.provider;
  return `none reached (${entry.error_code || "unknown"})`;
}

export async function show() {
  const page = await api(LOG + query(filters()));
  fillTable("log-table", page.data.map((e) => [
    when(e.created_at), e.endpoint,
    e.model_requested && e.model && e.model_requested !== e.model
      ? `${e.model_requested} → ${e.model}` : e.model || e.model_requested || "-",
    servedBy(e), status(String(e.status)), e.error_code || "-",
    num(e.latency_ms, 1), num(e.usage.total_tokens), num(e.cost_usd, 6),
    button("Open", () => ui.guarded(() => open(e.id)), { "data-open": e.id }),
  ]), "No request matches.");
  $("log-older").disabled = !page.has_more;
  $("log-older").dataset.cursor = page.next_cursor || "";
  $("log-newer").disabled = cursors.length <= 1;
  $("log-page").textContent = `Page ${cursors.length}`;
}

async function open(requestId) {
  const found = await api(`${LOG}/${encodeURIComponent(requestId)}`);
  $("log-detail-title").textContent = `Request ${found.id}`;
  $("log-detail-body").replaceChildren(...found.entries.map(entryDetail));
  $("log-detail").hidden = false;
  $("log-detail").dataset.request = found.id;
  $("log-detail-title").focus();
}

function entryDetail(entry) {
  const facts = [
    ["Arrived", when(entry.created_at)], ["Endpoint", entry.endpoint],
    ["Model asked", entry.model_requested || "-"], [entry.status >= 400 ? "Failed at" : "Served by", `${servedBy(entry)} ${entry.model || ""}`],
    ["Status", `${entry.status}${entry.error_code ? " " + entry.error_code : ""}`],
    ["Latency", `${num(entry.latency_ms, 1)} ms` + (entry.ttft_ms == null ? "" : `, first token at ${num(entry.ttft_ms, 1)} ms`)],
    ["Tokens", `${num(entry.usage.prompt_tokens)} in, ${num(entry.usage.completion_tokens)} out`],
    ["Cost (USD)", num(entry.cost_usd, 8)], ["Cache hit", entry.cache_hit ? "yes" : "no"],
    ["Key", entry.key_id], ["Trace", entry.trace_id || "-"],
  ];
  return el("div", { class: "log-entry" },
    el("dl", { class: "facts" }, ...facts.flatMap(([term, value]) => [el("dt", {}, term), el("dd", {}, value)])),
    el("h4", {}, "Attempts"),
    timeline(entry),
    ...bodies(entry));
}

/** The request and answer kept (PII redacted) for the roles that may read them; the
 * others learn they are kept and who may read them. */
function bodies(entry) {
  if (entry.body) {
    return [el("h4", {}, "Request and answer (PII redacted)"),
      el("pre", { class: "body", tabindex: "0" }, JSON.stringify(entry.body, null, 2))];
  }
  if (entry.body_kept) return [el("p", { class: "hint" }, "Bodies kept: shown to owners and admins.")];
  return [];
}

/** The race as bars on one time axis: each attempt from its start to its end, coloured by
 * how it ended, with the figures written out beside it. */
function timeline(entry) {
  const attempts = entry.attempts;
  if (!attempts.length) return el("p", { class: "hint" }, "No provider was tried.");
  const end = Math.max(entry.latency_ms, ...attempts.map((a) => a.start_ms + (a.duration_ms || 0)), 1);
  return el("ol", { class: "timeline", "aria-label": "Attempts of the race" }, ...attempts.map((a) => {
    const left = (a.start_ms / end) * 100;
    const width = Math.max(((a.duration_ms || 0) / end) * 100, 0.5);
    const ran = a.duration_ms == null ? "did not run" : `ran ${num(a.duration_ms, 1)} ms`;
    return el("li", { class: "attempt", "data-outcome": a.outcome },
      el("span", { class: "attempt-label" }, `${a.provider}/${a.model} (try ${a.try})`),
      el("span", { class: "track" },
        el("span", { class: "bar outcome-" + a.outcome, style: `left:${left}%;width:${width}%` })),
      el("span", { class: "attempt-facts" },
        `${a.outcome}${a.error ? " (" + a.error + ")" : ""}: started at ${num(a.start_ms, 1)} ms, ${ran}`));
  }));
}

export function init(shared) {
  ui = shared;
  ui.submit("log-form", async () => { cursors = [null]; await show(); });
  $("log-older").addEventListener("click", () => ui.guarded(async () => {
    cursors.push($("log-older").dataset.cursor);
    await show();
  }));
  $("log-newer").addEventListener("click", () => ui.guarded(async () => {
    cursors.pop();
    await show();
  }));
  $("log-close").addEventListener("click", () => { $("log-detail").hidden = true; });
}
