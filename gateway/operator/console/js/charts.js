// The usage pages: usage and cost, carbon and energy, models and providers. Every chart is
// drawn over every bucket of the chosen range (the API lists them), an empty one as zero.

import { api, query } from "./api.js";
import { $, card, fillTable, num } from "./dom.js";

const COLORS = ["#2d5bd3", "#e0803a", "#1b9e77", "#b3261e", "#7b4fc9", "#8c6d31", "#d6489c", "#5a7a8c"];
const charts = {};

/** The range the period control names: the last hours, or whole UTC days. */
export function chosenRange() {
  const choice = $("period").value;
  if (choice !== "custom") {
    const [hours, bucket] = choice.split(":");
    return { hours, bucket };
  }
  const start = $("range-start").value;
  const end = $("range-end").value || start;
  const days = (Date.parse(end) - Date.parse(start)) / 86400000 + 1;
  return { start_date: start, end_date: end, bucket: days <= 3 ? "hour" : "day" };
}

export async function series() {
  return api("/v1/management/console/usage" + query(chosenRange()));
}

/** Who served a point: its provider, or "none reached" with the error that stopped it. */
export function providerLabel(point) {
  return point.provider || `none reached (${point.reason || "unknown"})`;
}

function modelLabel(point) { return point.model || "(no model)"; }

function bucketLabels(data) {
  const format = data.bucket === "day"
    ? { month: "short", day: "numeric", timeZone: "UTC" }
    : data.bucket === "hour" && data.buckets.length > 24
      ? { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" }
      : { hour: "2-digit", minute: "2-digit" };
  return data.buckets.map((start) => new Date(start).toLocaleString(undefined, format));
}

/** One value per bucket of the range: the sum of `pick` over its points, else zero. */
function perBucket(data, pick, points = data.points) {
  const sums = new Map(data.buckets.map((start) => [Date.parse(start), 0]));
  for (const p of points) {
    const at = Date.parse(p.start);
    if (sums.has(at)) sums.set(at, sums.get(at) + pick(p));
  }
  return [...sums.values()];
}

function byKey(points, key, pick) {
  const sums = new Map();
  for (const p of points) sums.set(key(p), (sums.get(key(p)) || 0) + pick(p));
  return sums;
}

function total(points, pick) { return points.reduce((sum, p) => sum + pick(p), 0); }

function drawChart(id, type, labels, datasets, stacked = false) {
  if (charts[id]) charts[id].destroy();
  const options = { animation: false, responsive: true, maintainAspectRatio: false };
  if (type === "bar" || type === "line") {
    options.scales = { x: { stacked }, y: { stacked, beginAtZero: true } };
  }
  charts[id] = new Chart($(id), {
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

export async function showUsage() {
  const data = await series();
  const points = data.points;
  const labels = bucketLabels(data);
  const at = (pick) => perBucket(data, pick);
  $("usage-cards").replaceChildren(
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

export async function showCarbon() {
  const data = await series();
  const points = data.points;
  const labels = bucketLabels(data);
  $("carbon-cards").replaceChildren(
    card("energy (Wh)", num(total(points, (p) => p.energy_kwh) * 1000, 4)),
    card("emissions (gCO2e)", num(total(points, (p) => p.carbon_gco2e), 4)),
  );
  drawChart("chart-energy", "line", labels, [
    { label: "energy (Wh)", data: perBucket(data, (p) => p.energy_kwh * 1000), fill: true },
  ]);
  const providers = [...new Set(points.map(providerLabel))].sort();
  drawChart("chart-carbon", "bar", labels, providers.map((provider) => ({
    label: provider,
    data: perBucket(data, (p) => p.carbon_gco2e, points.filter((p) => providerLabel(p) === provider)),
  })), true);
}

export async function showTraffic() {
  const points = (await series()).points;
  const models = byKey(points, modelLabel, (p) => p.requests);
  const providers = byKey(points, providerLabel, (p) => p.requests);
  drawChart("chart-models", "bar", [...models.keys()], [{ label: "requests", data: [...models.values()] }]);
  drawChart("chart-providers", "doughnut", [...providers.keys()], [{ label: "requests", data: [...providers.values()] }]);
  const rows = new Map();
  for (const p of points) {
    const provider = providerLabel(p);
    const key = provider + " " + modelLabel(p);
    const row = rows.get(key) || { provider, model: modelLabel(p), requests: 0, errors: 0, tokens: 0, cost: 0 };
    row.requests += p.requests; row.errors += p.errors;
    row.tokens += p.prompt_tokens + p.completion_tokens; row.cost += p.cost_usd;
    rows.set(key, row);
  }
  fillTable("traffic-table", [...rows.values()].map((r) =>
    [r.provider, r.model, num(r.requests), num(r.errors), num(r.tokens), num(r.cost, 6)]),
  "No requests in this period.");
}
