// The sandbox's filter builder: clause rows (group, key, operator, value) over the same JSON the
// server parses (ragd/retrieve/filters.py, docs/knowledge-bases.md#filters).
//
// The JSON textarea stays the one source of what is searched (and of the link's "f" key): every
// change to a row rewrites it, and text typed into it is read back into rows when the rows can
// say it (one level of must / should / must_not with the conditions below). A filter they cannot
// say (a nested clause, a bound the rows do not offer) is kept as typed and edited as JSON.

import { field, h, replace } from "./dom.js";

const GROUPS = [
  ["must", "must"],
  ["should", "should"],
  ["must_not", "must not"],
];
const FIELD = "fields.";
// the keys every chunk carries (matched by value), then a dataset's own metadata
const KEYS = [
  ["tags", "tags"],
  [FIELD, "field…"],
  ["name", "file name"],
  ["source", "source"],
  ["language", "language"],
  ["file_id", "file id"],
  ["dataset", "dataset id"],
  ["collection", "collection"],
];
const TYPES = [
  ["string", "text"],
  ["number", "number"],
  ["date", "date"],
  ["boolean", "true / false"],
];
const TYPE_LABEL = Object.fromEntries(TYPES);
const OPS = {
  string: ["is", "any", "exists", "empty"],
  number: ["is", "any", "between", "gte", "lt", "exists", "empty"],
  date: ["gte", "lt", "between", "exists", "empty"],
  boolean: ["is", "exists", "empty"],
};
const OP_LABEL = { is: "is", any: "is any of", between: "between", gte: "on or after", lt: "before", exists: "exists", empty: "is empty" };
const NUMBER_LABEL = { gte: "at least", lt: "less than" };
const FIELD_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
const DAY = /^\d{4}-\d{2}-\d{2}$/;

/** A clause's key type: a built-in key and tags hold text; a field the type the user chose. */
const typeOf = (c) => (c.key === FIELD ? c.type : "string");

/** The filter object the rows say ("" when they say nothing); incomplete rows are left out. */
export function toFilter(clauses) {
  const out = {};
  for (const c of clauses) {
    const cond = condition(c);
    if (!cond) continue;
    (out[c.group] = out[c.group] || []).push(cond);
  }
  return Object.keys(out).length ? out : null;
}

function condition(c) {
  const key = c.key === FIELD ? FIELD + c.name.trim() : c.key;
  if (c.key === FIELD && !FIELD_NAME.test(c.name.trim())) return null;
  const type = typeOf(c);
  const one = (v) => (type === "number" ? (v.trim() === "" || !Number.isFinite(Number(v)) ? null : Number(v)) : v.trim() === "" ? null : type === "boolean" ? v === "true" : v.trim());
  if (c.op === "exists") return { exists: { key } };
  if (c.op === "empty") return { is_empty: { key } };
  if (c.op === "is") {
    const v = one(c.value);
    return v === null ? null : { key, match: { value: v } };
  }
  if (c.op === "any") {
    const values = c.value.split(",").map((v) => one(v));
    return values.length && values.every((v) => v !== null) ? { key, match: { any: values } } : null;
  }
  const lo = one(c.value);
  if (c.op === "gte") return lo === null ? null : { key, range: { gte: lo } };
  if (c.op === "lt") return lo === null ? null : { key, range: { lt: lo } };
  const hi = one(c.value2);
  if (lo === null || hi === null) return null;
  // a date range is [from, before); a number range includes both ends
  return { key, range: type === "date" ? { gte: lo, lt: hi } : { gte: lo, lte: hi } };
}

/** The rows a filter's JSON text says, [] for blank text, or null when the rows cannot say it. */
export function fromText(text) {
  if (!text.trim()) return [];
  let raw;
  try {
    raw = JSON.parse(text);
  } catch {
    return null;
  }
  if (!raw || typeof raw !== "object" || Array.isArray(raw)) return null;
  const rows = [];
  for (const [group, items] of Object.entries(raw)) {
    if (!GROUPS.some(([g]) => g === group) || !Array.isArray(items)) return null;
    for (const item of items) {
      const row = fromCondition(group, item);
      if (!row) return null;
      rows.push(row);
    }
  }
  return rows;
}

const isObj = (v) => v && typeof v === "object" && !Array.isArray(v);
const sameKeys = (obj, keys) => Object.keys(obj).length === keys.length && keys.every((k) => k in obj);

function keyRow(group, key) {
  if (typeof key !== "string") return null;
  if (key.startsWith(FIELD)) {
    const name = key.slice(FIELD.length);
    return FIELD_NAME.test(name) ? { group, key: FIELD, name, type: "string", op: "is", value: "", value2: "" } : null;
  }
  return KEYS.some(([k]) => k === key && k !== FIELD) ? { group, key, name: "", type: "string", op: "is", value: "", value2: "" } : null;
}

function fromCondition(group, c) {
  if (!isObj(c)) return null;
  for (const [kind, op] of [["exists", "exists"], ["is_empty", "empty"]]) {
    if (kind in c) {
      if (!sameKeys(c, [kind]) || !isObj(c[kind]) || !sameKeys(c[kind], ["key"])) return null;
      const row = keyRow(group, c[kind].key);
      return row && { ...row, op };
    }
  }
  if (!("key" in c)) return null;
  const row = keyRow(group, c.key);
  if (!row) return null;
  const isField = row.key === FIELD;
  if (sameKeys(c, ["key", "match"]) && isObj(c.match)) {
    if (sameKeys(c.match, ["value"])) {
      const v = c.match.value;
      const type = typeof v === "boolean" ? "boolean" : typeof v === "number" ? "number" : typeof v === "string" ? "string" : null;
      if (!type || (!isField && type !== "string")) return null;
      return { ...row, type, op: "is", value: String(v) };
    }
    if (sameKeys(c.match, ["any"]) && Array.isArray(c.match.any) && c.match.any.length) {
      const vs = c.match.any;
      const type = vs.every((v) => typeof v === "number") ? "number" : vs.every((v) => typeof v === "string" && !v.includes(",")) ? "string" : null;
      if (!type || (!isField && type !== "string")) return null;
      return { ...row, type, op: "any", value: vs.join(", ") };
    }
    return null;
  }
  if (sameKeys(c, ["key", "range"]) && isObj(c.range) && isField) {
    const r = c.range;
    const vals = Object.values(r);
    const type = vals.length && vals.every((v) => typeof v === "number") ? "number" : vals.length && vals.every((v) => typeof v === "string" && DAY.test(v)) ? "date" : null;
    if (!type) return null;
    if (sameKeys(r, ["gte"])) return { ...row, type, op: "gte", value: String(r.gte) };
    if (sameKeys(r, ["lt"])) return { ...row, type, op: "lt", value: String(r.lt) };
    if (type === "date" && sameKeys(r, ["gte", "lt"])) return { ...row, type, op: "between", value: r.gte, value2: r.lt };
    if (type === "number" && sameKeys(r, ["gte", "lte"])) return { ...row, type, op: "between", value: String(r.gte), value2: String(r.lte) };
  }
  return null;
}

/**
 * The builder around `textarea` (the knob set's "Filter (JSON)"): rows, add, and the JSON behind
 * "Edit as JSON". `prefix` names its controls (a, b) so two knob sets' labels stay apart.
 */
export function filterBuilder(prefix, textarea, hint) {
  let rows = [];
  // the searched datasets' own fields (name → type), once the screen has learned them (setFields)
  const known = new Map();
  const list = h("ol", { class: "filter-clauses" });
  const note = h("p", { class: "filter-json-note hint", role: "status" });
  const add = h("button", { type: "button", class: "small filter-add" }, "Add a condition");
  const jsonField = field("Filter (JSON)", textarea, hint);
  const details = h("details", { class: "filter-json-box" }, h("summary", {}, "Edit as JSON"), jsonField);
  const el = h("fieldset", { class: "filter-builder" }, h("legend", {}, "Filter"), list, h("div", { class: "actions" }, add), note, details);

  const write = () => {
    const filter = toFilter(rows);
    textarea.value = filter ? JSON.stringify(filter) : "";
  };
  const render = () => {
    // a re-drawn row keeps the keyboard where it was (the control of the same name)
    const focused = list.contains(document.activeElement) ? document.activeElement.name : null;
    replace(list, rows.map((row, i) => clauseRow(prefix, row, i, { known, changed: () => (write(), render()), typed: write, remove: () => remove(i) })));
    const again = focused && list.querySelector(`[name="${focused}"]`);
    if (again) again.focus();
  };
  const remove = (i) => {
    rows.splice(i, 1);
    write();
    render();
    (list.querySelectorAll(".filter-remove")[Math.min(i, rows.length - 1)] || add).focus();
  };
  const read = () => {
    const parsed = fromText(textarea.value);
    const asJson = parsed === null;
    list.hidden = asJson;
    add.hidden = asJson;
    el.classList.toggle("as-json", asJson);
    let json = true;
    try {
      JSON.parse(textarea.value || "null");
    } catch {
      json = false;
    }
    note.textContent = !asJson
      ? ""
      : json
        ? "This filter is edited as JSON: the conditions cannot say it (a nested clause, or a bound they do not offer)."
        : "This filter is edited as JSON: it is not JSON yet (a search says where).";
    if (asJson) details.open = true;
    else rows = parsed.map((row) => adopt(row, known));
    render();
  };
  add.addEventListener("click", () => {
    rows.push({ group: "must", key: "tags", name: "", type: "string", op: "is", value: "", value2: "" });
    render();
    const last = list.lastElementChild;
    if (last) last.querySelector("select").focus();
  });
  textarea.addEventListener("input", read);
  read();
  /** The datasets' fields ([{name, type}] from GET …/fields): offered as keys with their types. */
  const setFields = (fields) => {
    known.clear();
    for (const f of fields) if (f && FIELD_NAME.test(f.name) && OPS[f.type]) known.set(f.name, f.type);
    rows.forEach((row) => adopt(row, known));
    render();
  };
  return { el, setFields };
}

/** A field row whose JSON says no type (exists, is empty) takes the one its dataset records. */
function adopt(row, known) {
  if (row.key === FIELD && (row.op === "exists" || row.op === "empty") && known.has(row.name)) row.type = known.get(row.name);
  return row;
}

function clauseRow(prefix, row, i, on) {
  const n = i + 1;
  const name = (part) => `${prefix}-fc${n}-${part}`;
  const select = (part, options, value, cb) => {
    const s = h("select", { name: name(part) }, options.map(([v, label]) => h("option", { value: v, selected: v === value }, label)));
    s.addEventListener("change", () => cb(s.value));
    return s;
  };
  const group = select("group", GROUPS, row.group, (v) => ((row.group = v), on.changed()));
  // a field the datasets record is a key of its own ("issued (date)"): it fills the name and type
  const knownKey = row.key === FIELD && on.known.get(row.name.trim()) === row.type ? FIELD + row.name.trim() : null;
  const key = select("key", KEYS, knownKey || row.key, (v) => {
    const own = v !== FIELD && v.startsWith(FIELD) && on.known.get(v.slice(FIELD.length));
    if (own) {
      if (row.key !== FIELD || row.type !== own) row.value = row.value2 = "";
      Object.assign(row, { key: FIELD, name: v.slice(FIELD.length), type: own });
    } else row.key = v;
    if (!OPS[typeOf(row)].includes(row.op)) row.op = OPS[typeOf(row)][0];
    on.changed();
  });
  if (on.known.size) {
    const own = [...on.known].map(([f, t]) => h("option", { value: FIELD + f }, `${f} (${TYPE_LABEL[t]})`));
    key.append(h("optgroup", { label: "the datasets' fields" }, own));
    key.value = knownKey || row.key;
  }
  const parts = [field("Group", group), field("Key", key)];
  const type = typeOf(row);
  if (row.key === FIELD) {
    const fname = h("input", { type: "text", name: name("field"), value: row.name, placeholder: "customer", autocomplete: "off", spellcheck: "false", pattern: FIELD_NAME.source.slice(1, -1) });
    fname.addEventListener("input", () => ((row.name = fname.value), on.typed()));
    const ftype = select("type", TYPES, row.type, (v) => {
      row.type = v;
      if (!OPS[v].includes(row.op)) row.op = OPS[v][0];
      row.value = row.value2 = "";
      on.changed();
    });
    parts.push(field("Field name", fname), field("Type", ftype));
  }
  const opLabel = (op) => (type === "number" && NUMBER_LABEL[op]) || OP_LABEL[op];
  const op = select("op", OPS[type].map((o) => [o, opLabel(o)]), row.op, (v) => ((row.op = v), on.changed()));
  parts.push(field("Operator", op));
  if (row.op !== "exists" && row.op !== "empty") {
    const value = field(row.op === "between" ? "From" : row.op === "any" ? "Values" : "Value", valueInput(name("v"), type, row.op, row.value, (v) => ((row.value = v), on.typed())), row.op === "any" ? "comma-separated" : null);
    // a list of values gets the room of two fields (a line of its own on a phone)
    if (row.op === "any") value.classList.add("filter-list");
    parts.push(value);
    if (row.op === "between") {
      parts.push(field(type === "date" ? "Before" : "To", valueInput(name("v2"), type, row.op, row.value2, (v) => ((row.value2 = v), on.typed()))));
    }
  }
  const remove = h("button", { type: "button", class: "small filter-remove", "aria-label": `Remove condition ${n}`, onclick: on.remove }, "Remove");
  return h("li", { class: "filter-clause", role: "group", "aria-label": `Condition ${n}` }, parts, remove);
}

function valueInput(name, type, op, value, cb) {
  let el;
  if (type === "boolean") {
    el = h("select", { name }, h("option", { value: "" }, "choose"), h("option", { value: "true", selected: value === "true" }, "true"), h("option", { value: "false", selected: value === "false" }, "false"));
    el.addEventListener("change", () => cb(el.value));
    return el;
  }
  if (type === "date") el = h("input", { type: "date", name, value });
  else if (type === "number" && op !== "any") el = h("input", { type: "number", name, value, step: "any", inputmode: "decimal" });
  else el = h("input", { type: "text", name, value, autocomplete: "off", spellcheck: "false", placeholder: op === "any" ? "invoice, receipt" : "" });
  el.addEventListener("input", () => cb(el.value));
  el.addEventListener("change", () => cb(el.value));
  return el;
}
