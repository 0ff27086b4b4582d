// The console's calls to the hub: every URL relative to the page (works under a proxy's
// path prefix), the caller's key from sessionStorage (never localStorage) on each call.
const KEY = "a2a-hub-console-key";

export function getKey() { return sessionStorage.getItem(KEY) || ""; }
export function setKey(key) {
  if (key) sessionStorage.setItem(KEY, key); else sessionStorage.removeItem(KEY);
}

export class ApiError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

function headers(extra) {
  const h = { Accept: "application/json", ...(extra || {}) };
  const key = getKey();
  if (key) h["X-API-Key"] = key;
  return h;
}

async function problem(response) {
  let text = `HTTP ${response.status}`;
  try {
    const body = await response.json();
    text = (body.error && (body.error.message || body.error)) || body.message || text;
  } catch (e) { /* not JSON: the status says it */ }
  return new ApiError(response.status, String(text));
}

// A JSON call: GET by default; `body` (an object) is sent as JSON.
export async function api(path, { method = "GET", body, query, signal } = {}) {
  let url = path;
  if (query) {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null && v !== "") q.set(k, v);
    const s = q.toString();
    if (s) url += (url.includes("?") ? "&" : "?") + s;
  }
  const init = { method, headers: headers(body !== undefined ? { "Content-Type": "application/json" } : {}), signal };
  if (body !== undefined) init.body = JSON.stringify(body);
  const response = await fetch(url, init);
  if (!response.ok) throw await problem(response);
  const type = response.headers.get("content-type") || "";
  return type.includes("json") ? response.json() : response.text();
}

// Server-Sent Events over fetch (EventSource cannot send the key header): calls
// onFrame({event, id, data}) for each frame until the stream ends or `signal` aborts.
// Resolves when the stream ends; rejects with ApiError for a refused request.
export async function sse(path, onFrame, { signal, method = "GET", body, extraHeaders } = {}) {
  const init = { method, signal, headers: headers({ Accept: "text/event-stream", ...(extraHeaders || {}) }) };
  if (body !== undefined) { init.body = JSON.stringify(body); init.headers["Content-Type"] = "application/json"; }
  const response = await fetch(path, init);
  if (!response.ok) throw await problem(response);
  await readFrames(response, onFrame);
}

// Reads an SSE body frame by frame (also used for relayed answers of other agents).
export async function readFrames(response, onFrame) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, "\n");
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      const frame = { event: "message", id: null, data: "", raw: block };
      const data = [];
      for (const line of block.split("\n")) {
        if (!line || line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (field === "data") data.push(value);
        else if (field === "event") frame.event = value;
        else if (field === "id") frame.id = value;
      }
      if (!data.length) continue;
      frame.data = data.join("\n");
      onFrame(frame);
    }
  }
}
