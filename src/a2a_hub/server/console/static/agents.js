// Agents: each hosted agent the caller may see, with its card, health and tasks by state.
import { api } from "./net.js";
import { STATES, badge, errorBox, h, hashFor } from "./ui.js";

function schemeText(name, scheme) {
  const [kind, body] = Object.entries(scheme || {})[0] || ["?", {}];
  const what = kind.replace(/SecurityScheme$/, "");
  const detail = body && (body.name ? `${body.location || ""} ${body.name}` : body.scheme || body.openIdConnectUrl || "");
  return `${name}: ${what}${detail ? " (" + detail.trim() + ")" : ""}`;
}

function agentCard(agent, card, session) {
  const ifaces = (card.supportedInterfaces || []).map((i) =>
    h("li", {}, h("span", { class: "pill" }, i.protocolBinding), h("span", { class: "pill" }, `A2A ${i.protocolVersion}`), h("code", {}, i.url)));
  const skills = (card.skills || []).map((s) =>
    h("li", {}, h("strong", {}, s.name || s.id), s.description ? ` — ${s.description}` : "", " ", (s.tags || []).map((t) => h("span", { class: "pill" }, t))));
  const schemes = Object.entries(card.securitySchemes || {}).map(([n, s]) => schemeText(n, s));
  const caps = card.capabilities || {};
  const counts = agent.counts
    ? h("div", { class: "counts", "aria-label": "tasks by state" },
        STATES.filter((s) => agent.counts[s]).map((s) =>
          h("a", { href: hashFor("tasks", { agent: agent.id, state: s }), dataset: { count: s } }, badge(s), ` ${agent.counts[s]}`)),
        Object.values(agent.counts).some((n) => n) ? "" : h("span", { class: "muted" }, "no tasks yet"))
    : h("p", { class: "muted" }, session.keys ? "Enter a key to see tasks." : "");
  return h("article", { class: "card", dataset: { agent: agent.id } },
    h("h2", {}, card.name || agent.id, " ", h("span", { class: "muted mono" }, agent.id)),
    h("p", {}, card.description || ""),
    h("dl", { class: "kv" },
      h("dt", {}, "version"), h("dd", {}, card.version || "?"),
      h("dt", {}, "health"), h("dd", { class: "health" }, agent.running === null ? "hosted" : `hosted, ${agent.running} running here`),
      h("dt", {}, "streaming"), h("dd", {}, caps.streaming ? "yes" : "no"),
      h("dt", {}, "push"), h("dd", {}, caps.pushNotifications ? "yes" : "no"),
      h("dt", {}, "security"), h("dd", {}, schemes.length ? schemes.join("; ") : "none (open)"),
    ),
    h("h3", {}, "Bindings served"), h("ul", { class: "ifaces" }, ifaces),
    skills.length ? [h("h3", {}, "Skills"), h("ul", {}, skills)] : "",
    h("h3", {}, "Tasks by state"), counts,
    h("p", { class: "row" },
      h("a", { href: `a2a/${encodeURIComponent(agent.id)}/chat`, class: "chat" }, "Chat with it"),
      agent.counts ? h("a", { href: hashFor("tasks", { agent: agent.id }) }, "Its tasks") : "",
      h("a", { href: `a2a/${encodeURIComponent(agent.id)}/.well-known/agent-card.json` }, "Card JSON")),
  );
}

export async function agentsPage(root, { ctx }) {
  const [list, ready] = await Promise.all([
    api("ui/api/agents"),
    fetch("readyz").then((r) => r.json().then((b) => ({ ok: r.ok, body: b }))).catch(() => ({ ok: false, body: {} })),
  ]);
  root.append(h("h1", {}, "Agents ", h("span", { class: `badge ${ready.ok ? "state-completed" : "state-failed"}`, id: "ready" }, ready.ok ? "hub ready" : "hub not ready")));
  if (!list.agents.length) {
    root.append(h("p", { class: "notice" }, ctx.session.keys && !ctx.session.principal
      ? "No public agent here. Enter an API key to see the agents it opens."
      : "No agent is hosted."));
    return;
  }
  const grid = h("div", { class: "grid" });
  root.append(grid);
  const cards = await Promise.all(list.agents.map((agent) =>
    api(`a2a/${encodeURIComponent(agent.id)}/.well-known/agent-card.json`).catch((err) => err)));
  list.agents.forEach((agent, n) => {
    const card = cards[n];
    grid.append(card instanceof Error
      ? h("article", { class: "card", dataset: { agent: agent.id } }, h("h2", {}, agent.id), errorBox(card))
      : agentCard(agent, card, ctx.session));
  });
}
