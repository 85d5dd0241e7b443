// The gateway's web console: plain JavaScript, no build step. Every figure comes from the
// gateway's own API, called with the key held in this tab's sessionStorage.
"use strict";

const KEY_STORE = "gateway.console.key";
const PAGES = ["usage", "carbon", "traffic", "providers", "keys", "rules", "playground"];
const COLORS = ["#2d5bd3", "#e0803a", "#1b9e77", "#b3261e", "#7b4fc9", "#8c6d31", "#d6489c", "#5a7a8c"];
const charts = {};

// -- the API ------------------------------------------------------------------------------

function apiKey() { return sessionStorage.getItem(KEY_STORE); }

async function api(path, options = {}) {
  const headers = { Authorization: "Bearer " + apiKey(), ...(options.headers || {}) };
  if (options.body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(path, {
    method: options.method || "GET",
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  const data = await response.json().catch(() => null);
  if (!response.ok) {
    const message = data && data.error ? data.error.message : response.statusText;
    const error = new Error(message);
    error.status = response.status;
    throw error;
  }
  return data;
}

// -- helpers ------------------------------------------------------------------------------

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (name === "onclick") node.addEventListener("click", value);
    else node.setAttribute(name, value);
  }
  for (const child of children) node.append(child instanceof Node ? child : String(child ?? ""));
  return node;
}

function fillTable(id, rows) {
  const body = document.querySelector(`#${id} tbody`);
  body.replaceChildren(...rows.map((cells) => el("tr", {}, ...cells.map((c) => el("td", {}, c)))));
}

function when(iso) { return iso ? new Date(iso).toLocaleString() : "never"; }
function num(value, digits = 0) { return Number(value).toLocaleString(undefined, { maximumFractionDigits: digits }); }
function showError(error) { document.getElementById("page-error").textContent = error ? error.message : ""; }

function card(label, value) { return el("div", { class: "card" }, el("b", {}, value), label); }

function drawChart(id, type, labels, datasets, stacked = false) {
  if (charts[id]) charts[id].destroy();
  const options = { animation: false, responsive: true, maintainAspectRatio: false };
  if (type === "bar" || type === "line") {
    options.scales = { x: { stacked }, y: { stacked, beginAtZero: true } };
  }
  charts[id] = new Chart(document.getElementById(id), {
    type,
    data: {
      labels,
      datasets: datasets.map((d, i) => ({
        backgroundColor: type === "doughnut" ? COLORS : COLORS[i % COLORS.length],
        borderColor: type === "doughnut" ? "#fff" : COLORS[i % COLORS.length],
        ...d,
      })),
    },
    options,
  });
}

// -- usage series -------------------------------------------------------------------------

async function series() {
  const [hours, bucket] = document.getElementById("period").value.split(":");
  return api(`/v1/management/console/usage?hours=${hours}&bucket=${bucket}`);
}

function byBucket(points, pick) {
  const sums = new Map();
  for (const p of points) sums.set(p.start, (sums.get(p.start) || 0) + pick(p));
  return sums;
}

function byKey(points, key, pick) {
  const sums = new Map();
  for (const p of points) sums.set(key(p), (sums.get(key(p)) || 0) + pick(p));
  return sums;
}

function bucketLabels(points, bucket) {
  const starts = [...new Set(points.map((p) => p.start))].sort();
  const format = bucket === "day"
    ? { month: "short", day: "numeric" }
    : { hour: "2-digit", minute: "2-digit" };
  return { starts, labels: starts.map((s) => new Date(s).toLocaleString(undefined, format)) };
}

function total(points, pick) { return points.reduce((sum, p) => sum + pick(p), 0); }

async function showUsage() {
  const data = await series();
  const points = data.points;
  const { starts, labels } = bucketLabels(points, data.bucket);
  const at = (pick) => { const sums = byBucket(points, pick); return starts.map((s) => sums.get(s) || 0); };
  document.getElementById("usage-cards").replaceChildren(
    card("requests", num(total(points, (p) => p.requests))),
    card("errors", num(total(points, (p) => p.errors))),
    card("tokens", num(total(points, (p) => p.prompt_tokens + p.completion_tokens))),
    card("cost (USD)", "$" + num(total(points, (p) => p.cost_usd), 6)),
    card("cache hits", num(total(points, (p) => p.cache_hits))),
  );
  drawChart("chart-requests", "bar", labels, [
    { label: "requests", data: at((p) => p.requests - p.errors) },
    { label: "errors", data: at((p) => p.errors) },
  ], true);
  drawChart("chart-tokens", "bar", labels, [
    { label: "prompt tokens", data: at((p) => p.prompt_tokens) },
    { label: "completion tokens", data: at((p) => p.completion_tokens) },
  ], true);
  drawChart("chart-cost", "bar", labels, [{ label: "cost (USD)", data: at((p) => p.cost_usd) }]);
}

async function showCarbon() {
  const data = await series();
  const points = data.points;
  const { starts, labels } = bucketLabels(points, data.bucket);
  const energy = byBucket(points, (p) => p.energy_kwh * 1000);
  document.getElementById("carbon-cards").replaceChildren(
    card("energy (Wh)", num(total(points, (p) => p.energy_kwh) * 1000, 4)),
    card("emissions (gCO2e)", num(total(points, (p) => p.carbon_gco2e), 4)),
  );
  drawChart("chart-energy", "line", labels, [
    { label: "energy (Wh)", data: starts.map((s) => energy.get(s) || 0), fill: true },
  ]);
  const providers = [...new Set(points.map((p) => p.provider))].sort();
  drawChart("chart-carbon", "bar", labels, providers.map((provider) => {
    const sums = byBucket(points.filter((p) => p.provider === provider), (p) => p.carbon_gco2e);
    return { label: provider, data: starts.map((s) => sums.get(s) || 0) };
  }), true);
}

async function showTraffic() {
  const points = (await series()).points;
  const models = byKey(points, (p) => p.model, (p) => p.requests);
  const providers = byKey(points, (p) => p.provider, (p) => p.requests);
  drawChart("chart-models", "bar", [...models.keys()], [{ label: "requests", data: [...models.values()] }]);
  drawChart("chart-providers", "doughnut", [...providers.keys()], [{ label: "requests", data: [...providers.values()] }]);
  const rows = new Map();
  for (const p of points) {
    const key = p.provider + " " + p.model;
    const row = rows.get(key) || { provider: p.provider, model: p.model, requests: 0, errors: 0, tokens: 0, cost: 0 };
    row.requests += p.requests; row.errors += p.errors;
    row.tokens += p.prompt_tokens + p.completion_tokens; row.cost += p.cost_usd;
    rows.set(key, row);
  }
  fillTable("traffic-table", [...rows.values()].map((r) =>
    [r.provider, r.model, num(r.requests), num(r.errors), num(r.tokens), num(r.cost, 6)]));
}

// -- management pages ---------------------------------------------------------------------

async function showProviders() {
  const [list, health] = await Promise.all([api("/v1/management/providers"), api("/v1/health/detailed")]);
  const live = health.components.providers;
  document.getElementById("gateway-health").textContent =
    `Gateway: ${health.status}; database ${health.components.database.latency_ms} ms`;
  fillTable("providers-table", list.providers.map((p) => {
    const h = live[p.id];
    return [
      p.name || p.id,
      el("span", { class: "status-" + p.status }, p.status),
      p.configured ? "yes" : "no",
      h ? el("span", { class: "status-" + h.status }, h.status) : "-",
      h && h.latency_ms != null ? num(h.latency_ms, 1) : "-",
    ];
  }));
}

async function showKeys() {
  const keys = (await api("/v1/management/api-keys")).data;
  fillTable("keys-table", keys.map((k) => [
    k.name, k.key_hint, k.type, el("span", { class: "status-" + k.status }, k.status),
    when(k.created_at), when(k.last_used_at),
    k.status === "active"
      ? el("button", { class: "secondary", "data-revoke": k.id, onclick: () => revokeKey(k) }, "Revoke")
      : "",
  ]));
}

async function revokeKey(key) {
  if (!window.confirm(`Revoke the key "${key.name}"? Requests with it fail at once.`)) return;
  await guarded(async () => { await api(`/v1/management/api-keys/${key.id}/revoke`, { method: "POST" }); await showKeys(); });
}

async function createKey(event) {
  event.preventDefault();
  await guarded(async () => {
    const created = await api("/v1/management/api-keys", {
      method: "POST",
      body: { name: document.getElementById("key-name").value, type: document.getElementById("key-type").value },
    });
    document.getElementById("key-secret-value").textContent = created.key;
    document.getElementById("key-secret").hidden = false;
    document.getElementById("key-form").reset();
    await showKeys();
  });
}

async function showRules() {
  const rules = (await api("/v1/management/routing-rules")).rules;
  document.getElementById("rules-empty").hidden = rules.length > 0;
  fillTable("rules-table", rules.map((r) => [
    r.priority, r.name, (r.conditions.models || []).join(", ") || "any",
    r.actions.route_to || "-", r.enabled ? "yes" : "no",
    el("button", { class: "secondary", "data-toggle": r.id, onclick: () => toggleRule(r) }, r.enabled ? "Disable" : "Enable"),
  ]));
}

async function toggleRule(rule) {
  await guarded(async () => {
    await api(`/v1/management/routing-rules/${rule.id}/${rule.enabled ? "disable" : "enable"}`, { method: "POST" });
    await showRules();
  });
}

// -- playground: a streamed chat request, tokens shown as they arrive ----------------------

async function play(event) {
  event.preventDefault();
  const output = document.getElementById("play-output");
  const meta = document.getElementById("play-meta");
  const button = document.getElementById("play-send");
  output.textContent = ""; meta.textContent = "waiting for the first token..."; button.disabled = true;
  try {
    const response = await fetch("/v1/chat/completions", {
      method: "POST",
      headers: { Authorization: "Bearer " + apiKey(), "Content-Type": "application/json" },
      body: JSON.stringify({
        model: document.getElementById("play-model").value,
        messages: [{ role: "user", content: document.getElementById("play-prompt").value }],
        stream: true,
      }),
    });
    if (!response.ok) {
      const data = await response.json().catch(() => null);
      throw new Error(data && data.error ? data.error.message : response.statusText);
    }
    meta.textContent = "served by " + (response.headers.get("X-Service-Model-Used") || "?");
    await readEvents(response.body.getReader(), (chunk) => {
      if (chunk.error) throw new Error(chunk.error.message);
      for (const choice of chunk.choices || []) output.textContent += (choice.delta && choice.delta.content) || "";
    });
    meta.textContent += " - done";
    output.dataset.done = "true";
  } catch (error) {
    meta.textContent = "failed: " + error.message;
  } finally {
    button.disabled = false;
  }
}

async function readEvents(reader, onChunk) {
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const event = buffer.slice(0, end); buffer = buffer.slice(end + 2);
      for (const line of event.split("\n")) {
        if (!line.startsWith("data: ")) continue;
        const data = line.slice(6);
        if (data === "[DONE]") return;
        onChunk(JSON.parse(data));
      }
    }
  }
}

// -- navigation and sign-in ---------------------------------------------------------------

const SHOW = { usage: showUsage, carbon: showCarbon, traffic: showTraffic, providers: showProviders,
  keys: showKeys, rules: showRules, playground: async () => {} };

async function guarded(work) {
  showError(null);
  try { await work(); } catch (error) {
    if (error.status === 401) { signOut("Your key was refused: " + error.message); return; }
    showError(error);
  }
}

async function route() {
  if (!apiKey()) return;
  const page = PAGES.includes(location.hash.slice(1)) ? location.hash.slice(1) : "usage";
  for (const name of PAGES) document.getElementById("page-" + name).hidden = name !== page;
  for (const link of document.querySelectorAll("nav a")) link.classList.toggle("active", link.dataset.page === page);
  document.body.dataset.page = page;
  document.body.dataset.loaded = "";
  await guarded(SHOW[page]);
  document.body.dataset.loaded = page;
}

function signOut(message) {
  sessionStorage.removeItem(KEY_STORE);
  document.getElementById("app").hidden = true;
  document.getElementById("signin").hidden = false;
  document.getElementById("signin-error").textContent = message || "";
}

async function signIn(event) {
  event.preventDefault();
  const key = document.getElementById("signin-key").value.trim();
  sessionStorage.setItem(KEY_STORE, key);
  try {
    await api("/v1/health/detailed");
  } catch (error) {
    signOut("Sign-in failed: " + error.message);
    return;
  }
  document.getElementById("signin-key").value = "";
  start();
}

function start() {
  document.getElementById("signin").hidden = true;
  document.getElementById("app").hidden = false;
  route();
}

document.getElementById("signin-form").addEventListener("submit", signIn);
document.getElementById("signout").addEventListener("click", () => signOut());
document.getElementById("key-form").addEventListener("submit", createKey);
document.getElementById("play-form").addEventListener("submit", play);
document.getElementById("period").addEventListener("change", route);
window.addEventListener("hashchange", route);
if (apiKey()) start(); else signOut();
