// Providers: configure one of the catalog's (its credentials go to the gateway and are never
// shown back), set new credentials, test it with one live call, enable or disable it, and
// delete its configuration; with its live health.

import { api } from "../api.js";
import { can } from "../access.js";
import { $, button, el, fillTable, num, status, when } from "../dom.js";

const P = "/v1/management/providers";
let catalog = [];
let ui = null;
const act = (work) => () => ui.guarded(work);

export async function show() {
  const [list, health] = await Promise.all([api(P), api("/v1/health/detailed")]);
  catalog = list.providers;
  const live = health.components.providers;
  $("gateway-health").textContent =
    `Gateway: ${health.status}; database ${health.components.database.latency_ms} ms`;
  const choices = $("provider-id");
  const chosen = choices.value;
  choices.replaceChildren(...catalog.map((p) =>
    el("option", { value: p.id }, `${p.name} (${p.id})${p.configured ? ", configured" : ""}`)));
  if (chosen) choices.value = chosen;
  fillTable("providers-table", catalog.map((p) => row(p, live[p.id])));
}

function row(provider, live) {
  const health = provider.health;
  return [
    el("span", {}, provider.name, el("br"), el("small", {}, provider.id)),
    status(provider.status),
    provider.configured ? "yes, " + when(provider.configured_at) : "no",
    live ? status(live.status) : "-",
    live && live.latency_ms != null ? num(live.latency_ms, 1) : "-",
    health ? num(health.uptime_30d * 100, 2) + " %" : "-",
    actions(provider),
  ];
}

function actions(provider) {
  if (!provider.configured || !can("configure_providers")) return "";
  const id = provider.id;
  const toggle = provider.status === "disabled" ? "enable" : "disable";
  return el("div", { class: "actions" },
    button("Test", act(() => test(provider)), { "data-test": id }),
    button("Credentials", () => askCredentials(provider), { "data-credentials": id }),
    button(toggle === "enable" ? "Enable" : "Disable", act(() => setStatus(provider, toggle)),
      { "data-toggle": id }),
    button("Delete", act(() => remove(provider)), { "data-delete": id, class: "secondary danger" }),
  );
}

async function configure() {
  const settings = {};
  for (const [name, input] of [["base_url", "provider-base-url"], ["default_model", "provider-default-model"],
    ["organization_id", "provider-organization"]]) {
    if ($(input).value.trim()) settings[name] = $(input).value.trim();
  }
  const id = $("provider-id").value;
  const made = await api(P, {
    method: "POST",
    body: { provider: id, credentials: { api_key: $("provider-key").value }, settings },
  });
  $("provider-form").reset();
  await show();
  $("provider-result").textContent = `${made.name} configured (${made.status}) with ${made.models.length} models.`;
}

async function test(provider) {
  $("provider-result").textContent = `Testing ${provider.name}...`;
  const result = await api(`${P}/${provider.id}/test`, { method: "POST" });
  await show();
  $("provider-result").textContent = result.test_result === "success"
    ? `${provider.name}: test passed in ${result.latency_ms} ms, ${result.models_available.length} models available.`
    : `${provider.name}: test failed: ${result.error.message} (${result.error.type}).`;
}

function askCredentials(provider) {
  $("credentials-provider").value = provider.id;
  $("credentials-title").textContent = `New credentials for ${provider.name}`;
  $("credentials-dialog").showModal();
}

async function setCredentials() {
  const id = $("credentials-provider").value;
  const updated = await api(`${P}/${id}/credentials`, {
    method: "POST", body: { api_key: $("credentials-key").value },
  });
  $("credentials-dialog").close();
  $("credentials-form").reset();
  await show();
  $("provider-result").textContent = `${id}: credentials updated ${when(updated.credentials_updated_at)}.`;
}

async function setStatus(provider, trigger) {
  await api(`${P}/${provider.id}/${trigger}`, { method: "POST" });
  await show();
  $("provider-result").textContent = `${provider.name} ${trigger}d.`;
}

async function remove(provider) {
  if (!window.confirm(`Delete the configuration of ${provider.name}? Its credentials are forgotten.`)) return;
  await api(`${P}/${provider.id}`, { method: "DELETE" });
  await show();
  $("provider-result").textContent = `${provider.name}'s configuration deleted.`;
}

export function init(shared) {
  ui = shared;
  ui.submit("provider-form", configure);
  ui.submit("credentials-form", setCredentials, "credentials-error");
  $("credentials-cancel").addEventListener("click", () => $("credentials-dialog").close());
}
