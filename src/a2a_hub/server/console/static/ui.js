// Small DOM helpers shared by the pages (no framework: plain elements).

// h("a", {href: "#"}, "text", child…): an element; attributes starting with "on" are listeners.
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = v;
    else if (k === "dataset") Object.assign(el.dataset, v);
    else if (v === true) el.setAttribute(k, "");
    else el.setAttribute(k, String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

export function clear(el, ...children) { el.replaceChildren(); append(el, children); return el; }

export function label(state) {
  return String(state || "").replace(/^TASK_STATE_/, "").toLowerCase().replace(/_/g, "-");
}

export function badge(state) {
  const s = label(state);
  return h("span", { class: `badge state-${s}`, dataset: { state: s } }, s || "?");
}

export const STATES = ["submitted", "working", "input-required", "auth-required", "completed", "failed", "canceled", "rejected"];
export const TERMINAL = new Set(["completed", "failed", "canceled", "rejected"]);

export function when(value) {
  if (value === undefined || value === null || value === "") return "";
  const d = typeof value === "number" ? new Date(value * 1000) : new Date(value);
  if (isNaN(d)) return String(value);
  return d.toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z");
}

export function errorBox(err) {
  return h("div", { class: "error", role: "alert" }, err && err.message ? err.message : String(err));
}

// A JSON value as a collapsible tree (objects and arrays nest; scalars coloured by type).
export function tree(value) {
  return h("div", { class: "tree" }, node(value));
}

function node(value) {
  if (Array.isArray(value)) {
    if (!value.length) return h("span", { class: "lit" }, "[]");
    return h("ul", {}, value.map((v, i) => h("li", {}, h("span", { class: "key" }, `${i}: `), node(v))));
  }
  if (value && typeof value === "object") {
    const keys = Object.keys(value);
    if (!keys.length) return h("span", { class: "lit" }, "{}");
    return h("ul", {}, keys.map((k) => h("li", {}, h("span", { class: "key" }, `${k}: `), node(value[k]))));
  }
  if (typeof value === "string") return h("span", { class: "str" }, JSON.stringify(value));
  if (typeof value === "number") return h("span", { class: "num" }, String(value));
  return h("span", { class: "lit" }, String(value));
}

// One message or artifact part: text, data (a tree), or a file (a link).
export function part(p) {
  if (p.text !== undefined) return h("pre", { class: "text" }, p.text);
  if (p.data !== undefined) return tree(p.data);
  if (p.url) return h("a", { href: p.url, rel: "noopener noreferrer", target: "_blank", class: "file" }, p.filename || p.url);
  if (p.raw !== undefined) {
    const type = p.mediaType || "application/octet-stream";
    return h("a", { href: `data:${type};base64,${p.raw}`, download: p.filename || "file", class: "file" }, `${p.filename || "file"} (${type})`);
  }
  // 0.3 shapes
  if (p.kind === "text") return h("pre", { class: "text" }, p.text);
  if (p.kind === "data") return tree(p.data);
  if (p.kind === "file" && p.file) return part({ url: p.file.uri, raw: p.file.bytes, filename: p.file.name, mediaType: p.file.mimeType });
  return tree(p);
}

export function textOf(parts) {
  return (parts || []).map((p) => (p.text !== undefined ? p.text : "")).join("");
}

export function params(query) { return Object.fromEntries(new URLSearchParams(query || "")); }

export function hashFor(page, query) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query || {})) if (v) q.set(k, v);
  const s = q.toString();
  return `#/${page}${s ? "?" + s : ""}`;
}

// Parts as shown: adjacent text parts (a streamed artifact's chunks) joined into one.
export function joined(parts) {
  const out = [];
  for (const p of parts || []) {
    const last = out[out.length - 1];
    if (p.text !== undefined && last && last.text !== undefined && !p.metadata && !last.metadata) {
      out[out.length - 1] = { text: last.text + p.text };
    } else {
      out.push(p);
    }
  }
  return out;
}
