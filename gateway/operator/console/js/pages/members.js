// Members (invite with a role and workspaces, change a role, remove) and service accounts
// (create with a role, its key shown once; delete).

import { api } from "../api.js";
import { can } from "../access.js";
import { $, button, el, fillTable, reveal, status, when } from "../dom.js";

const ROLES = ["owner", "admin", "developer", "viewer"];
let ui = null;
const act = (work) => () => ui.guarded(work);

export async function showMembers() {
  const [found] = await Promise.all([api("/v1/management/members"), fillWorkspaceChoices("invite-workspaces")]);
  fillTable("members-table", found.data.map((m) => [
    m.email, roleCell(m), status(m.status), m.workspaces.join(", ") || "all", when(m.joined_at),
    can("remove_members")
      ? button("Remove", act(() => removeMember(m)), { "data-remove": m.id, class: "secondary danger" })
      : "",
  ]), "No members yet: invite someone above.");
}

function roleCell(member) {
  if (!can("invite_members")) return member.role;
  const select = el("select", { "aria-label": `Role of ${member.email}`, "data-role": member.id },
    ...ROLES.map((role) => el("option", { value: role, selected: role === member.role }, role)));
  select.addEventListener("change", () => ui.guarded(() => changeRole(member, select)));
  return select;
}

/** The workspace options of a multiple select, from the workspaces the caller reaches. */
async function fillWorkspaceChoices(id) {
  const found = (await api("/v1/management/workspaces")).data;
  $(id).replaceChildren(...found.map((w) => el("option", { value: w.id }, w.name)));
}

function chosen(id) { return [...$(id).selectedOptions].map((o) => o.value); }

async function invite() {
  const body = { email: $("invite-email").value, role: $("invite-role").value };
  const workspaces = chosen("invite-workspaces");
  if (workspaces.length) body.workspaces = workspaces;
  const invited = await api("/v1/management/members", { method: "POST", body });
  $("invite-form").reset();
  await showMembers();
  reveal("invite-secret", invited.invitation_token,
    `Invitation for ${invited.email} (${invited.role}), valid until ${when(invited.invitation_expires_at)}: ` +
    "send this token to them; they accept it with a password (POST /v1/auth/invitations/accept).");
}

async function changeRole(member, select) {
  try {
    await api(`/v1/management/members/${member.id}`, { method: "PATCH", body: { role: select.value } });
  } finally {
    await showMembers();
  }
}

async function removeMember(member) {
  if (!window.confirm(`Remove ${member.email} from the organisation?`)) return;
  await api(`/v1/management/members/${member.id}`, { method: "DELETE" });
  await showMembers();
}

export async function showAccounts() {
  const [found] = await Promise.all([
    api("/v1/management/service-accounts"), fillWorkspaceChoices("account-workspaces"),
  ]);
  fillTable("accounts-table", found.data.map((a) => [
    a.name, a.role, a.workspaces.join(", "), when(a.created_at),
    can("revoke_api_keys")
      ? button("Delete", act(() => removeAccount(a)), { "data-delete": a.id, class: "secondary danger" })
      : "",
  ]), "No service accounts yet.");
}

async function createAccount() {
  const body = { name: $("account-name").value, role: $("account-role").value };
  const workspaces = chosen("account-workspaces");
  if (workspaces.length) body.workspaces = workspaces;
  const made = await api("/v1/management/service-accounts", { method: "POST", body });
  $("account-form").reset();
  await showAccounts();
  reveal("account-secret", made.api_key,
    `The key of "${made.name}" (${made.role}), shown this once: copy it now.`);
}

async function removeAccount(account) {
  if (!window.confirm(`Delete the service account "${account.name}" and its key?`)) return;
  await api(`/v1/management/service-accounts/${account.id}`, { method: "DELETE" });
  await showAccounts();
}

export function init(shared) {
  ui = shared;
  ui.submit("invite-form", invite);
  ui.submit("account-form", createAccount);
}
