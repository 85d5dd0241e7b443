// Small helpers to build the pages' elements, tables and messages.

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "onclick") node.addEventListener("click", value);
    else if (name === "onchange") node.addEventListener("change", value);
    else node.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children) {
    if (child === undefined || child === null) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

export const $ = (id) => document.getElementById(id);

/** Replace a table's rows; each row is an array of cells (text or nodes). */
export function fillTable(id, rows, empty = "Nothing yet.") {
  const body = document.querySelector(`#${id} tbody`);
  const columns = document.querySelectorAll(`#${id} thead th`).length || 1;
  if (!rows.length) {
    body.replaceChildren(el("tr", { class: "empty" }, el("td", { colspan: columns }, empty)));
    return;
  }
  body.replaceChildren(...rows.map((cells) => el("tr", {}, ...cells.map((c) => el("td", {}, c)))));
}

export function when(iso) { return iso ? new Date(iso).toLocaleString() : "never"; }
export function num(value, digits = 0) {
  return Number(value).toLocaleString(undefined, { maximumFractionDigits: digits });
}
export function card(label, value) { return el("div", { class: "card" }, el("b", {}, value), label); }
export function status(text) { return el("span", { class: "status-" + text }, text); }
export function button(label, onclick, attrs = {}) {
  return el("button", { type: "button", class: "secondary", onclick, ...attrs }, label);
}

/** A comma-separated field as a list (empty: none). */
export function list(text) { return text.split(",").map((s) => s.trim()).filter(Boolean); }

/** A number field: its integer, or null when empty. */
export function integer(input) { return input.value === "" ? null : Number.parseInt(input.value, 10); }

/** A JSON field: its object, or undefined when empty; a bad one names the field. */
export function json(input, label) {
  if (!input.value.trim()) return undefined;
  try { return JSON.parse(input.value); } catch {
    throw new Error(`${label} is not valid JSON.`);
  }
}

/** Show a secret once, in the page's secret panel. */
export function reveal(panelId, text, note) {
  const panel = $(panelId);
  panel.querySelector("code").textContent = text;
  if (note !== undefined) panel.querySelector(".note").textContent = note;
  panel.hidden = false;
  panel.querySelector("code").focus();
}

/** Save a Blob as a file the browser downloads. */
export function save(blob, name) {
  const url = URL.createObjectURL(blob);
  const link = el("a", { href: url, download: name, hidden: true });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

/** A form that creates a record, or edits one: the elements `<prefix>-form`, `-id` (hidden),
 * `-legend`, `-submit` and `-cancel` say which. */
export class EditableForm {
  constructor(prefix, noun) {
    this.prefix = prefix;
    this.noun = noun;
    $(`${prefix}-cancel`).addEventListener("click", () => this.stop());
  }

  get id() { return $(`${this.prefix}-id`).value; }

  /** Switch to editing the record `id` (its fields filled by the caller). */
  edit(id, name) {
    $(`${this.prefix}-id`).value = id;
    $(`${this.prefix}-legend`).textContent = `Edit ${this.noun} "${name}"`;
    $(`${this.prefix}-submit`).textContent = `Save ${this.noun}`;
    $(`${this.prefix}-cancel`).hidden = false;
  }

  /** Back to creating: the form emptied. */
  stop() {
    $(`${this.prefix}-form`).reset();
    $(`${this.prefix}-id`).value = "";
    $(`${this.prefix}-legend`).textContent = `New ${this.noun}`;
    $(`${this.prefix}-submit`).textContent = `Create ${this.noun}`;
    $(`${this.prefix}-cancel`).hidden = true;
  }
}
