// Conversations: the recorded contexts the caller may read, and one context's messages in
// order (the agent's GET …/contexts/{id}/messages), direct replies that made no task included.
import { api } from "./net.js";
import { clear, errorBox, h, hashFor, label, part, when } from "./ui.js";

export async function conversationsPage(root, { query, ctx }) {
  root.append(h("h1", {}, "Conversations"));
  if (!ctx.session.tasks) {
    root.append(h("p", { class: "notice" }, "Conversations are shown to callers with an API key: enter one above."));
    return;
  }
  const { agents } = await api("ui/api/agents");
  const agent = query.agent || "";
  const open = h("form", { class: "inline", id: "open-context", onsubmit: (e) => {
    e.preventDefault();
    const d = Object.fromEntries(new FormData(e.target));
    if (d.context) location.hash = `#/conversation/${encodeURIComponent(d.agent)}/${encodeURIComponent(d.context.trim())}`;
  } },
  h("label", {}, "Agent", h("select", { name: "agent", id: "conversation-agent", onchange: (e) => { location.hash = hashFor("conversations", { agent: e.target.value }); } },
    h("option", { value: "" }, "every agent"), agents.map((a) => h("option", { value: a.id, selected: a.id === agent }, a.id)))),
  h("label", {}, "Context id", h("input", { name: "context", size: 36, placeholder: "open a context by id" })),
  h("button", { type: "submit" }, "Open"));
  root.append(open);
  const found = await api("ui/api/conversations", { query: { agent } });
  if (!found.recorded) {
    root.append(h("p", { class: "notice" }, "This hub records no conversations (they are kept in the registry: configure keys)."));
    return;
  }
  if (!found.conversations.length) { root.append(h("p", { class: "muted" }, "No conversation yet.")); return; }
  root.append(h("table", { id: "conversations" },
    h("thead", {}, h("tr", {}, ["Context", "Agent", "Owner", "Messages", "Updated"].map((t) => h("th", {}, t)))),
    h("tbody", {}, found.conversations.map((c) => h("tr", { dataset: { context: c.contextId } },
      h("td", { class: "mono" }, h("a", { href: `#/conversation/${encodeURIComponent(c.agentId)}/${encodeURIComponent(c.contextId)}` }, c.contextId)),
      h("td", {}, c.agentId), h("td", {}, c.owner || "anonymous"), h("td", {}, String(c.messages)), h("td", { class: "nowrap" }, when(c.updatedAt)))))));
}

export async function conversationPage(root, { args: [agent, context] }) {
  root.append(h("h1", {}, "Conversation ", h("span", { class: "mono" }, context)),
    h("p", {}, "Agent ", h("a", { href: hashFor("conversations", { agent }) }, agent), " · ",
      h("a", { href: hashFor("tasks", { agent, context }) }, "its tasks")));
  const list = h("ol", { class: "messages", id: "messages" });
  root.append(list);
  let token = "";
  try {
    do {
      const page = await api(`a2a/${encodeURIComponent(agent)}/contexts/${encodeURIComponent(context)}/messages`, { query: { pageSize: 200, pageToken: token } });
      page.messages.forEach((m, n) => {
        const role = label(m.role).replace("role-", "");
        const after = page.messages[n + 1];
        // an agent message without a task answered its request directly (no task was made)
        const direct = role === "agent" ? !m.taskId : !!(after && label(after.role) === "role-agent" && !after.taskId);
        list.append(h("li", { class: role, dataset: { message: m.messageId } },
          h("div", { class: "meta" }, role, " · ",
            !direct && m.taskId ? h("a", { href: `#/task/${encodeURIComponent(agent)}/${encodeURIComponent(m.taskId)}` }, `task ${m.taskId}`)
              : h("span", { class: "direct" }, "no task: answered directly")),
          (m.parts || []).map(part)));
      });
      token = page.nextPageToken;
    } while (token);
    if (!list.children.length) list.append(h("li", { class: "muted" }, "No message."));
  } catch (err) {
    clear(list);
    root.append(errorBox(err));
  }
}
