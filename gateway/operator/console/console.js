// The gateway's web console: plain JavaScript modules, no build step. Every figure and every
// change goes through the gateway's public API with the credential signed in here (kept in
// this tab's sessionStorage only), so the caller's role applies to all of it.

import { apiKey, forget, setApiKey, setWorkspace, api } from "./js/api.js";
import { applyRole, currentCaller, forgetCaller, loadCaller } from "./js/access.js";
import { $, el } from "./js/dom.js";
import { showCarbon, showTraffic, showUsage } from "./js/charts.js";
import * as providers from "./js/pages/providers.js";
import * as requests from "./js/pages/requests.js";
import * as rules from "./js/pages/rules.js";
import * as keys from "./js/pages/keys.js";
import * as workspaces from "./js/pages/workspaces.js";
import * as members from "./js/pages/members.js";
import * as audit from "./js/pages/audit.js";
import * as exports from "./js/pages/exports.js";
import * as playground from "./js/pages/playground.js";

const CHART_PAGES = new Set(["usage", "carbon", "traffic"]);
const PAGES = {
  usage: showUsage,
  carbon: showCarbon,
  traffic: showTraffic,
  requests: requests.show,
  providers: providers.show,
  rules: rules.show,
  keys: keys.show,
  workspaces: workspaces.show,
  members: members.showMembers,
  accounts: members.showAccounts,
  audit: audit.show,
  exports: exports.show,
  playground: async () => {},
};

/** Run `work`; an error is shown (in `errorId`, the page's message by default), never
 * thrown: a 401 signs out, a 403 says what the role may not do. */
async function guarded(work, errorId = "page-error") {
  const target = $(errorId);
  target.textContent = "";
  target.classList.remove("forbidden");
  try {
    await work();
  } catch (error) {
    if (error.status === 401) { signOut("Your key was refused: " + error.message); return; }
    target.classList.toggle("forbidden", error.status === 403);
    target.textContent = (error.status === 403 ? "Not allowed: " : "") + error.message;
  }
}

/** Handle a form's submission with `work`, its errors shown in `errorId`. */
function submit(formId, work, errorId) {
  $(formId).addEventListener("submit", (event) => {
    event.preventDefault();
    guarded(work, errorId);
  });
}

async function refreshWorkspaces() {
  const caller = currentCaller();
  const found = (await api("/v1/management/workspaces")).data;
  $("workspace").replaceChildren(...found.map((w) => el("option", { value: w.id }, w.name)));
  $("workspace").value = caller.workspace_id;
}

async function switchWorkspace(id) {
  setWorkspace(id);
  await loadCaller();
  applyRole();
  await refreshWorkspaces();
  await route();
}

const ui = { guarded, submit, refreshWorkspaces, switchWorkspace };

function currentPage() {
  const asked = location.hash.slice(1);
  return Object.hasOwn(PAGES, asked) ? asked : "usage";
}

async function route() {
  if (!apiKey() || !currentCaller()) return;
  const page = currentPage();
  for (const name of Object.keys(PAGES)) $("page-" + name).hidden = name !== page;
  for (const link of document.querySelectorAll("nav.pages a")) {
    const here = link.dataset.page === page;
    link.classList.toggle("active", here);
    if (here) link.setAttribute("aria-current", "page"); else link.removeAttribute("aria-current");
  }
  $("period-controls").hidden = !CHART_PAGES.has(page);
  document.body.dataset.page = page;
  document.body.dataset.loaded = "";
  await guarded(PAGES[page]);
  document.body.dataset.loaded = page;
}

function signOut(message) {
  forget();
  forgetCaller();
  $("app").hidden = true;
  $("signin").hidden = false;
  $("signin-error").textContent = message || "";
}

async function signIn() {
  setApiKey($("signin-key").value.trim());
  try {
    await loadCaller();
  } catch (error) {
    signOut("Sign-in failed: " + error.message);
    return;
  }
  $("signin-key").value = "";
  await start();
}

async function start() {
  $("signin").hidden = true;
  $("app").hidden = false;
  await guarded(async () => {
    if (!currentCaller()) await loadCaller();
    const caller = currentCaller();
    $("who").textContent = `${caller.name || caller.id} (${caller.role})`;
    applyRole();
    await refreshWorkspaces();
  });
  if (currentCaller()) await route();
}

function choosePeriod() {
  const custom = $("period").value === "custom";
  $("range-form").hidden = !custom;
  if (!custom) route();
}

function init() {
  $("signin-form").addEventListener("submit", (event) => { event.preventDefault(); signIn(); });
  $("signout").addEventListener("click", () => signOut());
  $("period").addEventListener("change", choosePeriod);
  submit("range-form", async () => {
    if (!$("range-start").value) throw new Error("Choose the first day of the range.");
    await route();
  });
  $("workspace").addEventListener("change", () => guarded(() => switchWorkspace($("workspace").value)));
  for (const page of [requests, providers, rules, keys, workspaces, members, audit, exports, playground]) page.init(ui);
  window.addEventListener("hashchange", route);
  if (apiKey()) start(); else signOut();
}

init();
