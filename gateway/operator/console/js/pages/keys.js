// API keys: create with limits and budgets, edit them, rotate with a grace period (the new
// key shown once, the old one kept until the grace ends), revoke, delete.

import { api } from "../api.js";
import { can } from "../access.js";
import { $, button, el, fillTable, integer, list, reveal, status, when } from "../dom.js";

const K = "/v1/management/api-keys";
const LIMITS = ["rpm", "tpm", "concurrent", "daily_requests", "monthly_requests"];
let ui = null;
const act = (work) => () => ui.guarded(work);

export async function show() {
  const keys = (await api(K)).data;
  fillTable("keys-table", keys.map(row), "No API keys in this workspace.");
}

function limitsText(limits) {
  const named = { rpm: "rpm", tpm: "tpm", concurrent: "concurrent", daily_requests: "per day",
    monthly_requests: "per month" };
  const set = LIMITS.filter((name) => limits[name] != null).map((name) => `${limits[name]} ${named[name]}`);
  return set.join(", ") || "plan defaults";
}

function row(key) {
  const active = key.status === "active";
  const buttons = [];
  if (active && can("create_api_keys")) {
    buttons.push(button("Edit limits", () => edit(key), { "data-edit": key.id }));
    buttons.push(button("Rotate", () => askRotate(key), { "data-rotate": key.id }));
  }
  if (active && can("revoke_api_keys")) {
    buttons.push(button("Revoke", act(() => revoke(key)), { "data-revoke": key.id }));
  }
  if (can("revoke_api_keys")) {
    buttons.push(button("Delete", act(() => remove(key)), { "data-delete": key.id, class: "secondary danger" }));
  }
  return [
    key.name, el("code", {}, key.key_hint), key.type, status(key.status),
    limitsText(key.rate_limits), when(key.created_at), when(key.last_used_at),
    key.expires_at ? when(key.expires_at) : "-",
    el("div", { class: "actions" }, ...buttons),
  ];
}

/** The limits of a form whose inputs are named `<prefix>-<limit>`; empty is no limit. */
function limits(prefix) {
  return Object.fromEntries(LIMITS.map((name) => [name, integer($(`${prefix}-${name}`))]));
}

async function create() {
  const body = { name: $("key-name").value, type: $("key-type").value, rate_limits: limits("key") };
  const models = list($("key-models").value);
  if (models.length) body.allowed_models = models;
  if ($("key-expires").value) body.expires_at = new Date($("key-expires").value).toISOString();
  const created = await api(K, { method: "POST", body });
  $("key-form").reset();
  await show();
  reveal("key-secret", created.key, `The new key "${created.name}", shown this once: copy it now.`);
}

function edit(key) {
  $("edit-key-id").value = key.id;
  $("edit-key-name").value = key.name;
  for (const name of LIMITS) $(`edit-${name}`).value = key.rate_limits[name] ?? "";
  $("edit-key-title").textContent = `Limits of "${key.name}"`;
  $("edit-key-dialog").showModal();
}

async function saveLimits() {
  const id = $("edit-key-id").value;
  await api(`${K}/${id}`, {
    method: "PATCH", body: { name: $("edit-key-name").value, rate_limits: limits("edit") },
  });
  $("edit-key-dialog").close();
  await show();
}

function askRotate(key) {
  $("rotate-key-id").value = key.id;
  $("rotate-title").textContent = `Rotate "${key.name}"`;
  $("rotate-dialog").showModal();
}

async function rotate() {
  const id = $("rotate-key-id").value;
  const rotated = await api(`${K}/${id}/rotate`, {
    method: "POST", body: { grace_period_hours: integer($("rotate-grace")) ?? 24 },
  });
  $("rotate-dialog").close();
  await show();
  reveal("key-secret", rotated.new_key,
    `The new key, shown this once: copy it now. The old key works until ${when(rotated.old_key_expires_at)}.`);
}

async function revoke(key) {
  if (!window.confirm(`Revoke the key "${key.name}"? Requests with it fail at once.`)) return;
  await api(`${K}/${key.id}/revoke`, { method: "POST" });
  await show();
}

async function remove(key) {
  if (!window.confirm(`Delete the key "${key.name}"? It stops working and leaves the list.`)) return;
  await api(`${K}/${key.id}`, { method: "DELETE" });
  await show();
}

export function init(shared) {
  ui = shared;
  ui.submit("key-form", create);
  ui.submit("edit-key-form", saveLimits, "edit-key-error");
  ui.submit("rotate-form", rotate, "rotate-error");
  $("edit-key-cancel").addEventListener("click", () => $("edit-key-dialog").close());
  $("rotate-cancel").addEventListener("click", () => $("rotate-dialog").close());
}
