// Operations (an admin key): API keys, dead push deliveries, MCP servers and agents, all
// through the admin API (/admin/v1).
import { api } from "./net.js";
import { clear, errorBox, h, when } from "./ui.js";

function section(root, title, id) {
  const body = h("div", { id });
  root.append(h("h2", {}, title), body);
  return body;
}

async function guarded(where, work) {
  try { await work(); } catch (err) { where.prepend(errorBox(err)); }
}

async function keysPart(el) {
  const { keys } = await api("admin/v1/keys");
  const shown = h("div", { id: "new-key" });
  const form = h("form", { class: "inline", id: "create-key", onsubmit: (e) => {
    e.preventDefault();
    const d = new FormData(form);
    const scopes = ["invoke", "read-all", "admin"].filter((s) => d.get(`scope-${s}`));
    const agents = String(d.get("agents") || "").split(",").map((s) => s.trim()).filter(Boolean);
    guarded(el, async () => {
      const made = await api("admin/v1/keys", { method: "POST", body: {
        name: d.get("name") || null, principal: d.get("principal") || null, scopes,
        agents: agents.length ? agents : null, expires: d.get("expires") || null } });
      await keysPart(el);
      el.querySelector("#new-key").replaceWith(h("div", { id: "new-key", class: "secret", role: "alert" },
        h("strong", {}, "The new key, shown this once: "), h("code", { id: "new-key-value" }, made.key),
        h("p", {}, "Copy it now: the hub keeps only its hash.")));
    });
  } },
  h("label", {}, "Name", h("input", { name: "name", id: "key-name", size: 12 })),
  h("label", {}, "Principal", h("input", { name: "principal", id: "key-principal", size: 12, placeholder: "(the name)" })),
  h("label", {}, "Agents", h("input", { name: "agents", id: "key-agents", size: 14, placeholder: "all (or a,b)" })),
  h("label", {}, "Expires", h("input", { name: "expires", size: 6, placeholder: "30d" })),
  ["invoke", "read-all", "admin"].map((s) => h("label", {}, s, h("input", { type: "checkbox", name: `scope-${s}`, id: `scope-${s}`, checked: s === "invoke" }))),
  h("button", { type: "submit", class: "primary" }, "Create key"));
  clear(el, form, shown, h("table", { id: "keys" },
    h("thead", {}, h("tr", {}, ["Id", "Name", "Principal", "Scopes", "Agents", "Created", "Expires", "Revoked", ""].map((t) => h("th", {}, t)))),
    h("tbody", {}, keys.map((k) => h("tr", { dataset: { key: k.id, name: k.name || "" } },
      h("td", { class: "mono" }, k.prefix || k.id.slice(0, 8)), h("td", {}, k.name || ""), h("td", {}, k.principal),
      h("td", {}, k.scopes.join(", ")), h("td", {}, k.agents ? k.agents.join(", ") : "all"),
      h("td", { class: "nowrap" }, when(k.createdAt)), h("td", { class: "nowrap" }, when(k.expiresAt)),
      h("td", { class: "nowrap revoked" }, when(k.revokedAt)),
      h("td", {}, k.revokedAt ? "" : h("button", { type: "button", class: "danger", onclick: () => guarded(el, async () => {
        await api(`admin/v1/keys/${encodeURIComponent(k.id)}`, { method: "DELETE" });
        await keysPart(el);
      }) }, "Revoke")))))));
}

async function deadPart(el) {
  const { deliveries } = await api("admin/v1/push/dead");
  const requeue = (ids) => guarded(el, async () => {
    const done = await api("admin/v1/push/dead:requeue", { method: "POST", body: ids ? { ids } : {} });
    await deadPart(el);
    el.prepend(h("p", { class: "notice", id: "requeued" }, `${done.requeued} queued again.`));
  });
  clear(el, deliveries.length ? [
    h("p", {}, h("button", { type: "button", id: "requeue-all", onclick: () => requeue(null) }, `Requeue all ${deliveries.length}`)),
    h("table", { id: "dead" }, h("thead", {}, h("tr", {}, ["Delivery", "Agent", "Task", "Config", "Event", "Attempts", "Last error", ""].map((t) => h("th", {}, t)))),
      h("tbody", {}, deliveries.map((d) => h("tr", { dataset: { delivery: d.id } },
        h("td", { class: "mono" }, d.id.slice(0, 8)), h("td", {}, d.agent_id),
        h("td", { class: "mono" }, h("a", { href: `#/task/${encodeURIComponent(d.agent_id)}/${encodeURIComponent(d.task_id)}` }, d.task_id.slice(0, 12))),
        h("td", { class: "mono" }, d.config_id), h("td", {}, d.snapshot ? "snapshot" : `seq ${d.seq}`), h("td", {}, String(d.attempts)),
        h("td", { class: "last-error" }, d.last_error),
        h("td", {}, h("button", { type: "button", onclick: () => requeue([d.id]) }, "Requeue"))))))]
    : h("p", { class: "muted", id: "no-dead" }, "No dead delivery."));
}

async function mcpPart(el) {
  const { mcpServers } = await api("admin/v1/mcp-servers");
  const form = h("form", { class: "inline", id: "add-mcp", onsubmit: (e) => {
    e.preventDefault();
    const d = Object.fromEntries(new FormData(form));
    const body = { name: d.name, transport: d.transport };
    if (d.transport === "stdio") body.command = d.target.split(" ").filter(Boolean); else body.url = d.target;
    guarded(el, async () => { await api("admin/v1/mcp-servers", { method: "POST", body }); await mcpPart(el); });
  } },
  h("label", {}, "Name", h("input", { name: "name", size: 10, required: true })),
  h("label", {}, "Transport", h("select", { name: "transport" }, ["streamable-http", "stdio"].map((t) => h("option", { value: t }, t)))),
  h("label", {}, "URL or command", h("input", { name: "target", size: 30, required: true })),
  h("button", { type: "submit" }, "Add MCP server"));
  clear(el, form, mcpServers.length ? h("table", { id: "mcp" }, h("thead", {}, h("tr", {}, ["Name", "Transport", "Where", ""].map((t) => h("th", {}, t)))),
    h("tbody", {}, mcpServers.map((s) => h("tr", {}, h("td", {}, s.name), h("td", {}, s.transport),
      h("td", { class: "mono" }, s.url || (s.command || []).join(" ")),
      h("td", {}, h("button", { type: "button", class: "danger", onclick: () => guarded(el, async () => {
        await api(`admin/v1/mcp-servers/${encodeURIComponent(s.name)}`, { method: "DELETE" }); await mcpPart(el);
      }) }, "Remove"))))))
    : h("p", { class: "muted" }, "No MCP server registered."));
}

async function agentsPart(el) {
  const { agents } = await api("admin/v1/agents");
  const editor = h("textarea", { class: "json", id: "agent-json", "aria-label": "Agent (JSON)" },
    JSON.stringify({ id: "helper", kind: "echo", options: {} }, null, 2));
  const save = () => guarded(el, async () => {
    let spec;
    try { spec = JSON.parse(editor.value); } catch (err) { throw new Error(`The agent is not JSON: ${err.message}`); }
    if (!spec.id) throw new Error("The agent needs an id");
    await api(`admin/v1/agents/${encodeURIComponent(spec.id)}`, { method: "PUT", body: spec });
    await agentsPart(el);
  });
  clear(el, h("table", { id: "registered-agents" }, h("thead", {}, h("tr", {}, ["Id", "Kind", "Auth", "Hosted", ""].map((t) => h("th", {}, t)))),
    h("tbody", {}, agents.map((a) => h("tr", { dataset: { agent: a.id } }, h("td", {}, a.id), h("td", {}, a.kind), h("td", {}, a.auth || "open"),
      h("td", {}, a.hosted ? "yes" : "no"),
      h("td", { class: "row" },
        h("button", { type: "button", onclick: () => { const { hosted, ...spec } = a; editor.value = JSON.stringify(spec, null, 2); editor.focus(); } }, "Edit"),
        h("button", { type: "button", class: "danger", onclick: () => guarded(el, async () => {
          await api(`admin/v1/agents/${encodeURIComponent(a.id)}`, { method: "DELETE" }); await agentsPart(el);
        }) }, "Remove")))))),
  h("h3", {}, "Add or replace an agent (its spec, as in hub.toml)"), editor,
  h("p", {}, h("button", { type: "button", class: "primary", id: "save-agent", onclick: save }, "Save agent")));
}

export async function operationsPage(root, { ctx }) {
  root.append(h("h1", {}, "Operations"));
  if (!ctx.session.admin) {
    root.append(h("p", { class: "notice", id: "needs-admin" }, ctx.session.keys
      ? "Operations need a key with the admin scope."
      : "This hub has no keys, so no admin API: configure auth (a registry) to manage it here."));
    return;
  }
  const parts = [[keysPart, "API keys", "ops-keys"], [deadPart, "Dead push deliveries", "ops-dead"], [mcpPart, "MCP servers", "ops-mcp"], [agentsPart, "Agents", "ops-agents"]];
  for (const [load, title, id] of parts) {
    const el = section(root, title, id);
    await guarded(el, () => load(el));
  }
}
