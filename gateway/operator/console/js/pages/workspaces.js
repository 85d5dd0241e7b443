// Workspaces: list, create, rename or describe, delete, and switch the console to one
// (every later call names it in X-Workspace-ID).

import { api } from "../api.js";
import { can, currentCaller } from "../access.js";
import { $, EditableForm, button, el, fillTable, when } from "../dom.js";

const W = "/v1/management/workspaces";
let ui = null;
let form = null;
let keptBodies = false;  // the edited workspace's setting, as the API gave it
const act = (work) => () => ui.guarded(work);

export async function show() {
  const found = (await api(W)).data;
  const current = currentCaller().workspace_id;
  fillTable("workspaces-table", found.map((w) => [
    w.name + (w.id === current ? " (current)" : ""),
    el("code", {}, w.id),
    w.description || "-",
    w.request_log_bodies ? "kept" : "not kept",
    when(w.created_at),
    el("div", { class: "actions" },
      w.id === current ? "" : button("Switch to", act(() => ui.switchWorkspace(w.id)), { "data-switch": w.id }),
      can("manage_workspaces") ? button("Edit", () => edit(w), { "data-edit": w.id }) : "",
      can("manage_workspaces")
        ? button("Delete", act(() => remove(w)), { "data-delete": w.id, class: "secondary danger" })
        : ""),
  ]));
}

async function save() {
  const id = form.id;
  const body = { name: $("workspace-name").value };
  // An edit may clear the description; a new workspace without one sends none (the API
  // refuses an empty one there).
  if (id || $("workspace-description").value) body.description = $("workspace-description").value;
  // Sent only when it changes: turning bodies off erases the ones kept.
  const bodies = $("workspace-bodies").checked;
  if (id && bodies !== keptBodies) body.request_log_bodies = bodies;
  let saved = id
    ? await api(`${W}/${id}`, { method: "PATCH", body })
    : await api(W, { method: "POST", body });
  // A new workspace is made without bodies; the switch is its first change.
  if (!id && bodies) {
    saved = await api(`${W}/${saved.id}`, { method: "PATCH", body: { request_log_bodies: true } });
  }
  form.stop();
  await ui.refreshWorkspaces();
  await show();
  $("workspace-result").textContent = `Workspace "${saved.name}" ${id ? "saved" : "created"} (${saved.id}).`;
}

function edit(workspace) {
  form.edit(workspace.id, workspace.name);
  $("workspace-name").value = workspace.name;
  $("workspace-description").value = workspace.description;
  $("workspace-bodies").checked = keptBodies = workspace.request_log_bodies;
  $("workspace-name").focus();
}

async function remove(workspace) {
  if (!window.confirm(`Delete the workspace "${workspace.name}" with its files and documents?`)) return;
  await api(`${W}/${workspace.id}`, { method: "DELETE" });
  await ui.refreshWorkspaces();
  await show();
  $("workspace-result").textContent = `Workspace "${workspace.name}" deleted.`;
}

export function init(shared) {
  ui = shared;
  ui.submit("workspace-form", save);
  form = new EditableForm("workspace", "workspace");
}
