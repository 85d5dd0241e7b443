// The gateway's public API, called with the signed-in credential: every request the console
// makes goes through here, so the caller's role applies to all of it. The credential and the
// chosen workspace live in this tab's sessionStorage only.

const KEY_STORE = "gateway.console.key";
const WORKSPACE_STORE = "gateway.console.workspace";

export function apiKey() { return sessionStorage.getItem(KEY_STORE); }
export function setApiKey(key) { sessionStorage.setItem(KEY_STORE, key); }
export function workspace() { return sessionStorage.getItem(WORKSPACE_STORE); }
export function setWorkspace(id) {
  if (id) sessionStorage.setItem(WORKSPACE_STORE, id); else sessionStorage.removeItem(WORKSPACE_STORE);
}
export function forget() { sessionStorage.removeItem(KEY_STORE); sessionStorage.removeItem(WORKSPACE_STORE); }

/** An error answer of the API: its status, code and message (the spec's envelope). */
export class ApiError extends Error {
  constructor(status, body, fallback) {
    const error = body && body.error ? body.error : {};
    super(error.message || fallback);
    this.status = status;
    this.code = error.code || null;
    this.param = error.param || null;
  }
}

function headers(extra = {}) {
  const sent = { Authorization: "Bearer " + apiKey(), ...extra };
  if (workspace()) sent["X-Workspace-ID"] = workspace();
  return sent;
}

async function send(path, options) {
  const sent = headers(options.body === undefined ? {} : { "Content-Type": "application/json" });
  return fetch(path, {
    method: options.method || "GET",
    headers: sent,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
}

/** A JSON call; an error answer is thrown as an ApiError. */
export async function api(path, options = {}) {
  const response = await send(path, options);
  const data = await response.json().catch(() => null);
  if (!response.ok) throw new ApiError(response.status, data, response.statusText);
  return data;
}

/** A file download: the body as a Blob and the name the gateway gave it. */
export async function download(path) {
  const response = await send(path, {});
  if (!response.ok) {
    throw new ApiError(response.status, await response.json().catch(() => null), response.statusText);
  }
  const disposition = response.headers.get("Content-Disposition") || "";
  const named = /filename="?([^";]+)"?/.exec(disposition);
  return { blob: await response.blob(), name: named ? named[1] : "download" };
}

/** A streamed call (the playground): the raw response, its error thrown like `api`'s. */
export async function stream(path, body) {
  const response = await send(path, { method: "POST", body });
  if (!response.ok) {
    throw new ApiError(response.status, await response.json().catch(() => null), response.statusText);
  }
  return response;
}

/** A query string of the non-empty values. */
export function query(values) {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(values)) {
    if (value !== undefined && value !== null && value !== "") params.set(name, value);
  }
  const text = params.toString();
  return text ? "?" + text : "";
}
