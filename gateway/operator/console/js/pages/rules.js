// Routing rules: create, edit, enable or disable, delete, and a dry run of a chat request
// through the workspace's rules (POST /v1/management/routing-rules/test), which calls no
// provider.

import { api } from "../api.js";
import { can } from "../access.js";
import { $, EditableForm, button, el, fillTable, integer, json, list, num } from "../dom.js";

const R = "/v1/management/routing-rules";
let ui = null;
let form = null;
const act = (work) => () => ui.guarded(work);

export async function show() {
  const rules = (await api(R)).rules;
  fillTable("rules-table", rules.map(row), "No routing rules yet: create one above.");
}

function row(rule) {
  const conditions = rule.conditions;
  const actions = rule.actions;
  return [
    rule.priority,
    rule.name,
    (conditions.models || []).join(", ") || "any",
    actions.route_to || "-",
    (actions.fallbacks || []).join(", ") || "-",
    rule.enabled ? "yes" : "no",
    can("edit_routing_rules")
      ? el("div", { class: "actions" },
        button("Edit", () => edit(rule), { "data-edit": rule.id }),
        button(rule.enabled ? "Disable" : "Enable", act(() => toggle(rule)), { "data-toggle": rule.id }),
        button("Delete", act(() => remove(rule)), { "data-delete": rule.id, class: "secondary danger" }))
      : "",
  ];
}

/** The conditions the form describes. */
function conditions() {
  const found = {};
  const models = list($("rule-models").value);
  if (models.length) found.models = models;
  const keys = list($("rule-keys").value);
  if (keys.length) found.api_keys = keys;
  if ($("rule-time-start").value || $("rule-time-end").value) {
    found.time_range = {
      start: $("rule-time-start").value, end: $("rule-time-end").value,
      timezone: $("rule-timezone").value.trim() || "UTC",
    };
  }
  if ($("rule-token-min").value !== "") found.token_estimate = { min: integer($("rule-token-min")) };
  const headers = json($("rule-headers"), "Headers");
  if (headers !== undefined) found.headers = headers;
  const metadata = json($("rule-metadata"), "Metadata");
  if (metadata !== undefined) found.metadata = metadata;
  return found;
}

/** The actions the form describes. */
function actions() {
  const found = {};
  if ($("rule-route-to").value.trim()) found.route_to = $("rule-route-to").value.trim();
  const fallbacks = list($("rule-fallbacks").value);
  if (fallbacks.length) found.fallbacks = fallbacks;
  if ($("rule-retry-attempts").value !== "" || $("rule-retry-delay").value !== "") {
    found.retry = {};
    if ($("rule-retry-attempts").value !== "") found.retry.max_attempts = integer($("rule-retry-attempts"));
    if ($("rule-retry-delay").value !== "") found.retry.initial_delay_ms = integer($("rule-retry-delay"));
  }
  if ($("rule-cache").checked) {
    found.cache = { enabled: true };
    if ($("rule-cache-ttl").value !== "") found.cache.ttl_seconds = integer($("rule-cache-ttl"));
  }
  const transform = json($("rule-transform"), "Transform");
  if (transform !== undefined) found.transform = transform;
  return found;
}

async function save() {
  const body = {
    name: $("rule-name").value,
    enabled: $("rule-enabled").checked,
    conditions: conditions(),
    actions: actions(),
  };
  if ($("rule-priority").value !== "") body.priority = integer($("rule-priority"));
  const id = form.id;
  const saved = id
    ? await api(`${R}/${id}`, { method: "PATCH", body })
    : await api(R, { method: "POST", body });
  form.stop();
  await show();
  $("rule-result").textContent = `Rule "${saved.name}" ${id ? "saved" : "created"} at priority ${saved.priority}.`;
}

const JSON_FIELDS = { "rule-headers": "headers", "rule-metadata": "metadata" };

function edit(rule) {
  const c = rule.conditions;
  const a = rule.actions;
  form.edit(rule.id, rule.name);
  $("rule-name").value = rule.name;
  $("rule-priority").value = rule.priority;
  $("rule-enabled").checked = rule.enabled;
  $("rule-models").value = (c.models || []).join(", ");
  $("rule-keys").value = (c.api_keys || []).join(", ");
  $("rule-time-start").value = c.time_range ? c.time_range.start : "";
  $("rule-time-end").value = c.time_range ? c.time_range.end : "";
  $("rule-timezone").value = c.time_range ? c.time_range.timezone : "";
  $("rule-token-min").value = c.token_estimate && c.token_estimate.min != null ? c.token_estimate.min : "";
  for (const [input, name] of Object.entries(JSON_FIELDS)) {
    $(input).value = c[name] ? JSON.stringify(c[name]) : "";
  }
  $("rule-route-to").value = a.route_to || "";
  $("rule-fallbacks").value = (a.fallbacks || []).join(", ");
  $("rule-retry-attempts").value = a.retry ? a.retry.max_attempts : "";
  $("rule-retry-delay").value = a.retry ? a.retry.initial_delay_ms : "";
  $("rule-cache").checked = !!(a.cache && a.cache.enabled);
  $("rule-cache-ttl").value = a.cache && a.cache.ttl_seconds != null ? a.cache.ttl_seconds : "";
  $("rule-transform").value = a.transform ? JSON.stringify(a.transform) : "";
  $("rule-name").focus();
}

async function toggle(rule) {
  await api(`${R}/${rule.id}/${rule.enabled ? "disable" : "enable"}`, { method: "POST" });
  await show();
}

async function remove(rule) {
  if (!window.confirm(`Delete the routing rule "${rule.name}"?`)) return;
  await api(`${R}/${rule.id}`, { method: "DELETE" });
  await show();
  $("rule-result").textContent = `Rule "${rule.name}" deleted.`;
}

async function dryRun() {
  const body = {
    model: $("test-model").value,
    messages: [{ role: "user", content: $("test-message").value }],
  };
  const metadata = json($("test-metadata"), "Metadata");
  if (metadata !== undefined) body.metadata = metadata;
  const headers = json($("test-headers"), "Headers");
  if (headers !== undefined) body.headers = headers;
  const run = await api(`${R}/test`, { method: "POST", body });
  const matched = run.matched_rule;
  const facts = [
    ["Matched rule", matched ? `${matched.name} (priority ${matched.priority})` : "none: the routing mode decides"],
    ["Resolved model", run.resolved_model],
    ["Provider", run.provider],
    ["Fallback chain", (run.fallback_chain || []).join(" → ") || "-"],
    ["Estimated cost (USD)", run.estimated_cost == null ? "-" : num(run.estimated_cost, 8)],
    ["Reasoning", run.reasoning || "-"],
  ];
  $("test-result").replaceChildren(...facts.flatMap(([term, value]) => [el("dt", {}, term), el("dd", {}, value)]));
  $("test-evaluated").replaceChildren(...(run.conditions_evaluated || []).map((e) =>
    el("li", {}, `${e.name} (priority ${e.priority}): ${e.matched ? "matched" : "not matched"}`)));
  $("test-output").hidden = false;
  $("test-output").dataset.matched = matched ? matched.id : "";
}

export function init(shared) {
  ui = shared;
  ui.submit("rule-form", save);
  ui.submit("test-form", dryRun);
  form = new EditableForm("rule", "rule");
}
