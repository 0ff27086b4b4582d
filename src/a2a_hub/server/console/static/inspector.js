// Inspector: any A2A agent's card, fetched through the hub (its address policy applies),
// checked against the A2A 1.0 schema and its signatures; then a chat with it, relayed by
// the hub, showing every raw frame.
import { api, readFrames, getKey } from "./net.js";
import { clear, errorBox, h, textOf, tree } from "./ui.js";

function interfacesOf(card) {
  const found = (card.supportedInterfaces || []).map((i) => ({ url: i.url, binding: i.protocolBinding, version: i.protocolVersion }));
  if (card.url) found.push({ url: card.url, binding: card.preferredTransport || "JSONRPC", version: card.protocolVersion || "0.3.0" });
  return found.filter((i) => i.url);
}

// A random UUID (crypto.randomUUID exists only on https pages and localhost).
function uuid() {
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40; b[8] = (b[8] & 0x3f) | 0x80;
  const x = [...b].map((v) => v.toString(16).padStart(2, "0")).join("");
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
}

function request(iface, text, streaming, contextId) {
  const id = uuid();
  const v1 = !String(iface.version).startsWith("0.");
  const message = v1
    ? { messageId: id, role: "ROLE_USER", parts: [{ text }], ...(contextId ? { contextId } : {}) }
    : { kind: "message", messageId: id, role: "user", parts: [{ kind: "text", text }], ...(contextId ? { contextId } : {}) };
  if (iface.binding === "HTTP+JSON") {
    return { url: iface.url.replace(/\/$/, "") + (streaming ? "/message:stream" : "/message:send"), version: "1.0", body: { message } };
  }
  const method = v1 ? (streaming ? "SendStreamingMessage" : "SendMessage") : (streaming ? "message/stream" : "message/send");
  return { url: iface.url, version: v1 ? "1.0" : "0.3", body: { jsonrpc: "2.0", id, method, params: { message } } };
}

// What a frame says, whatever the version: {context, artifact: [id, text, append], message}.
function meaning(value) {
  const r = value.result || value;
  const out = { context: null, artifact: null, message: null, error: value.error ? (value.error.message || JSON.stringify(value.error)) : null };
  const art = r.artifactUpdate || (r.kind === "artifact-update" ? r : null);
  const status = r.statusUpdate || (r.kind === "status-update" ? r : null);
  const msg = r.message || (r.kind === "message" ? r : null);
  const task = r.task || (r.kind === "task" ? r : null);
  const any = art || status || msg || task;
  if (any) out.context = any.contextId || null;
  if (art) out.artifact = [art.artifact.artifactId, textOf(art.artifact.parts), !!art.append];
  else if (status && status.status && status.status.message) out.message = textOf(status.status.message.parts);
  else if (msg) out.message = textOf(msg.parts);
  else if (task) out.message = (task.artifacts || []).map((a) => textOf(a.parts)).join("\n") || (task.status && task.status.message ? textOf(task.status.message.parts) : null);
  return out;
}

function chatPanel(card) {
  const ifaces = interfacesOf(card);
  const usable = ifaces.filter((i) => i.binding === "JSONRPC" || i.binding === "HTTP+JSON");
  const streams = !!(card.capabilities && card.capabilities.streaming);
  const frames = h("div", { class: "frames", id: "frames", "aria-label": "Raw frames" });
  const reply = h("pre", { id: "chat-reply", "aria-label": "Reply" });
  const state = h("span", { class: "live", id: "chat-state" });
  const choice = h("select", { id: "chat-interface", "aria-label": "Interface" },
    usable.map((i, n) => h("option", { value: String(n) }, `${i.binding} ${i.version} ${i.url}`)));
  const agentKey = h("input", { id: "chat-key", type: "password", size: 14, autocomplete: "off", placeholder: "if it needs one", "aria-label": "The agent's API key" });
  const text = h("input", { id: "chat-text", size: 40, placeholder: "Say something to the agent", "aria-label": "Message to the agent" });
  let contextId = null;
  const send = h("button", { type: "submit", class: "primary", id: "chat-send", disabled: !usable.length }, "Send");
  const form = h("form", { class: "inline", id: "chat", onsubmit: async (e) => {
    e.preventDefault();
    const iface = usable[Number(choice.value)];
    const call = request(iface, text.value, streams, contextId);
    if (agentKey.value) call.apiKey = agentKey.value;
    clear(reply); clear(frames); state.textContent = "sending…"; state.dataset.state = "sending"; send.disabled = true;
    const artifacts = new Map();
    const messages = [];
    const show = (raw, data) => {
      frames.append(h("pre", { class: "frame" }, raw));
      try {
        const m = meaning(JSON.parse(data));
        if (m.context) contextId = m.context;
        if (m.artifact) { const [id, t, append] = m.artifact; artifacts.set(id, (append ? artifacts.get(id) || "" : "") + t); }
        if (m.message) messages.push(m.message);
        if (m.error) messages.push(`error: ${m.error}`);
        reply.textContent = [...artifacts.values(), ...messages].join("\n");
      } catch (err) { /* not JSON: the raw frame is shown */ }
    };
    try {
      const headers = { "Content-Type": "application/json" };
      if (getKey()) headers["X-API-Key"] = getKey();
      const response = await fetch("ui/api/inspect/call", { method: "POST", headers, body: JSON.stringify(call) });
      if (!response.ok) {
        const body = await response.json().catch(() => ({}));
        throw new Error((body.error && (body.error.message || body.error)) || `HTTP ${response.status}`);
      }
      const upstream = response.headers.get("X-Upstream-Status");
      if ((response.headers.get("content-type") || "").includes("text/event-stream")) {
        state.textContent = `streaming (HTTP ${upstream})`;
        await readFrames(response, (frame) => show(frame.raw, frame.data));
      } else {
        const body = await response.text();
        show(body, body);
      }
      state.textContent = `done (HTTP ${upstream}, ${frames.children.length} frame${frames.children.length === 1 ? "" : "s"})`;
      state.dataset.state = "done";
    } catch (err) {
      state.textContent = ""; state.dataset.state = "failed";
      frames.prepend(errorBox(err));
    } finally {
      send.disabled = false;
    }
  } }, h("label", {}, "Interface", choice), h("label", {}, "Its API key", agentKey), h("label", {}, "Message", text), send, state);
  return h("section", { id: "inspector-chat" },
    h("h2", {}, "Chat with it ", h("span", { class: "muted" }, streams ? "(streamed: the card says it streams)" : "(one answer: the card says it does not stream)")),
    usable.length ? form : h("p", { class: "notice" }, "The card names no JSON-RPC or HTTP+JSON interface to chat over."),
    h("div", { class: "cols" }, h("div", {}, h("h3", {}, "Reply"), reply), h("div", {}, h("h3", {}, "Raw frames"), frames)));
}

export async function inspectorPage(root, { ctx, query }) {
  root.append(h("h1", {}, "Inspector"),
    h("p", { class: "muted" }, "Enter an A2A agent's URL (or its card's URL). The hub fetches the card, so the page needs no CORS; private and local addresses are refused unless allowed (outbound_allow_hosts)."));
  if (!ctx.session.inspector) {
    root.append(h("p", { class: "notice" }, "The inspector is for callers with an API key: enter one above."));
    return;
  }
  const result = h("div", { id: "inspect-result" });
  const url = h("input", { id: "inspect-url", type: "url", size: 60, required: true, value: query.url || "", placeholder: "https://agent.example.com/a2a", "aria-label": "Agent URL" });
  const button = h("button", { type: "submit", class: "primary", id: "inspect-go" }, "Inspect");
  const form = h("form", { class: "inline", id: "inspect", onsubmit: async (e) => {
    e.preventDefault();
    button.disabled = true;
    clear(result, h("p", { class: "muted" }, "Fetching the card…"));
    try {
      const found = await api("ui/api/inspect", { method: "POST", body: { url: url.value } });
      if (found.error) { clear(result, h("div", { class: "error", id: "inspect-error", role: "alert" }, found.error)); return; }
      const card = found.card;
      const bad = found.findings.filter((f) => f.level === "error").length;
      clear(result,
        h("h2", {}, card.name || "(no name)", " ", h("span", { class: `badge ${bad ? "state-failed" : "state-completed"}`, id: "verdict" }, bad ? `${bad} problem${bad > 1 ? "s" : ""}` : "looks good")),
        h("p", {}, card.description || "", " ", h("span", { class: "muted mono" }, found.cardUrl)),
        h("h3", {}, "Findings"),
        h("ul", { class: "findings", id: "findings" }, found.findings.map((f) => h("li", { class: f.level, dataset: { level: f.level } }, h("strong", {}, f.level), " ", f.message))),
        h("details", {}, h("summary", {}, "The card as fetched"), tree(card)),
        chatPanel(card));
    } catch (err) {
      clear(result, h("div", { class: "error", id: "inspect-error", role: "alert" }, err.message));
    } finally {
      button.disabled = false;
    }
  } }, h("label", {}, "Agent URL", url), button);
  root.append(form, result);
}
