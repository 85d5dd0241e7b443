// What the signed-in caller may do, from GET /v1/management/me: forms its role may not use
// are shown read-only with the reason, so nothing is offered that the API would refuse.
// The API still decides: a 403 it answers anyway is shown as the page's message.

import { api } from "./api.js";
import { el } from "./dom.js";

let caller = null;

export async function loadCaller() {
  caller = await api("/v1/management/me");
  return caller;
}

export function currentCaller() { return caller; }
export function forgetCaller() { caller = null; }

export function can(action) { return !!caller && caller.actions.includes(action); }

export function hasPermission(permission) {
  return !!caller && (caller.permissions.includes(permission) || caller.permissions.includes("admin"));
}

/** Why the caller may not perform `action` (the API's own wording). */
export function whyNot(action) {
  const who = caller && caller.role ? `your role (${caller.role})` : "this key";
  return `Read-only: ${who} may not ${action.replaceAll("_", " ")}.`;
}

/** Why the caller's key may not call what needs `permission`. */
function lacks(permission) { return `Read-only: this key lacks the '${permission}' permission.`; }

/** Enable or disable every `[data-action]` fieldset by the caller's role (and every
 * `[data-permission]` one by the key's permissions), with the reason. */
export function applyRole(root = document) {
  for (const fieldset of root.querySelectorAll("fieldset[data-action], fieldset[data-permission]")) {
    const { action, permission } = fieldset.dataset;
    const allowed = action ? can(action) : hasPermission(permission);
    fieldset.disabled = !allowed;
    let note = fieldset.querySelector(":scope > .readonly");
    if (!allowed && !note) {
      note = el("p", { class: "readonly", role: "note" });
      const legend = fieldset.querySelector(":scope > legend");
      if (legend) legend.after(note); else fieldset.prepend(note);
    }
    if (note) {
      note.hidden = allowed;
      note.textContent = allowed ? "" : action ? whyNot(action) : lacks(permission);
    }
  }
}
