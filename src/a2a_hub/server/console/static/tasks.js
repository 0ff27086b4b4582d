// Tasks: the live list (ListTasks, or the admin search when filtering by owner) and one
// task's page (GetTask, SubscribeToTask replayed from the start, push configs and
// deliveries, CancelTask).
import { api, sse } from "./net.js";
import { STATES, TERMINAL, badge, clear, errorBox, h, hashFor, joined, label, part, textOf, when } from "./ui.js";

const AGES = [["", "any age"], ["300", "last 5 min"], ["3600", "last hour"], ["86400", "last day"], ["604800", "last week"]];
const PAGE = 20;

// Follows an SSE route until cleanup, reconnecting after a drop; `status(open)` tells the page.
function follow(path, onFrame, status) {
  const abort = new AbortController();
  let wait = 500;
  (async () => {
    while (!abort.signal.aborted) {
      try {
        await sse(path, (frame) => { wait = 500; status(true); onFrame(frame); }, { signal: abort.signal });
      } catch (err) {
        if (abort.signal.aborted) return;
        if (err.status === 401 || err.status === 403 || err.status === 404) { status(false, err); return; }
      }
      status(false);
      await new Promise((r) => setTimeout(r, wait));
      wait = Math.min(wait * 2, 5000);
    }
  })();
  return () => abort.abort();
}

function filtersForm(f, agents, session) {
  const go = () => {
    const data = Object.fromEntries(new FormData(form));
    location.hash = hashFor("tasks", data);
  };
  const select = (name, options, value) => h("select", { name, id: `filter-${name}`, onchange: go },
    options.map(([v, t]) => h("option", { value: v, selected: v === value }, t)));
  const form = h("form", { class: "filters", id: "task-filters", onsubmit: (e) => { e.preventDefault(); go(); } },
    h("label", {}, "Agent", select("agent", agents.map((a) => [a.id, a.id]), f.agent)),
    h("label", {}, "State", select("state", [["", "any state"], ...STATES.map((s) => [s, s])], f.state)),
    h("label", {}, "Context", h("input", { name: "context", id: "filter-context", value: f.context, placeholder: "context id", size: 22 })),
    session.admin ? h("label", {}, "Owner", h("input", { name: "owner", id: "filter-owner", value: f.owner, placeholder: "principal", size: 14 })) : "",
    h("label", {}, "Age", select("age", AGES, f.age)),
    h("button", { type: "submit" }, "Filter"));
  return form;
}

async function listPage(f, token, session) {
  const status = f.state ? "TASK_STATE_" + f.state.toUpperCase().replace(/-/g, "_") : "";
  if (f.owner && session.admin) {
    const page = await api("admin/v1/tasks", { query: {
      agent: f.agent, owner: f.owner, state: f.state, contextId: f.context, maxAgeSeconds: f.age, pageSize: PAGE, pageToken: token } });
    return { tasks: page.tasks, next: page.next_page_token, total: page.total_size };
  }
  const after = f.age ? new Date(Date.now() - Number(f.age) * 1000).toISOString() : "";
  const page = await api(`a2a/${encodeURIComponent(f.agent)}/tasks`, { query: {
    pageSize: PAGE, status, contextId: f.context, statusTimestampAfter: after, pageToken: token, historyLength: 0 } });
  return { tasks: page.tasks || [], next: page.nextPageToken, total: page.totalSize };
}

function taskRow(agent, t) {
  return h("tr", { dataset: { task: t.id } },
    h("td", { class: "mono" }, h("a", { href: `#/task/${encodeURIComponent(agent)}/${encodeURIComponent(t.id)}` }, t.id)),
    h("td", { class: "state" }, badge(t.status && t.status.state)),
    h("td", { class: "mono" }, h("a", { href: hashFor("tasks", { agent, context: t.contextId }) }, t.contextId || "")),
    h("td", { class: "nowrap updated" }, when(t.status && t.status.timestamp)));
}

export async function tasksPage(root, { query, ctx }) {
  const session = ctx.session;
  root.append(h("h1", {}, "Tasks ", h("span", { class: "live", id: "live", dataset: { state: "connecting" } }, "connecting…")));
  if (!session.tasks) {
    root.append(h("p", { class: "notice" }, "Tasks are shown to callers with an API key: enter one above."));
    return;
  }
  const { agents } = await api("ui/api/agents");
  if (!agents.length) { root.append(h("p", { class: "notice" }, "No agent to list tasks of.")); return; }
  const f = {
    agent: agents.some((a) => a.id === query.agent) ? query.agent : (agents.find((a) => a.id === session.defaultAgent) || agents[0]).id,
    state: query.state || "", context: query.context || "", owner: query.owner || "", age: query.age || "",
  };
  root.dataset.agent = f.agent;
  const tbody = h("tbody", { id: "task-rows" });
  const total = h("span", { id: "total", class: "muted" });
  const tokens = [""];
  const prev = h("button", { type: "button", id: "prev-page", onclick: () => { tokens.pop(); load(); } }, "Previous page");
  const next = h("button", { type: "button", id: "next-page" }, "Next page");
  const message = h("div");
  root.append(filtersForm(f, agents, session), message,
    h("table", { id: "tasks" }, h("thead", {}, h("tr", {}, h("th", {}, "Task"), h("th", {}, "State"), h("th", {}, "Context"), h("th", {}, "Updated"))), tbody),
    h("p", { class: "row" }, prev, next, total));
  let nextToken = "";
  let loading = null;
  async function load() {
    const token = tokens[tokens.length - 1];
    try {
      const page = await listPage(f, token, session);
      clear(message);
      clear(tbody, page.tasks.map((t) => taskRow(f.agent, t)));
      if (!page.tasks.length) tbody.append(h("tr", {}, h("td", { colspan: 4, class: "muted" }, "No task matches.")));
      nextToken = page.next || "";
      next.disabled = !nextToken;
      prev.disabled = tokens.length < 2;
      total.textContent = `${page.total ?? "?"} in all`;
      root.dataset.loaded = String(Date.now());
    } catch (err) {
      clear(message, errorBox(err));
    }
  }
  next.addEventListener("click", () => { if (nextToken) { tokens.push(nextToken); load(); } });
  function reload() {
    if (tokens.length > 1 || loading) return;  // only the first page follows the feed
    loading = setTimeout(() => { loading = null; load(); }, 150);
  }
  await load();
  const live = root.querySelector("#live");
  const stop = follow(`ui/api/feed?agent=${encodeURIComponent(f.agent)}`, (frame) => {
    if (frame.event === "lost") { reload(); return; }
    if (frame.event !== "task") return;
    const ev = JSON.parse(frame.data);
    const row = tbody.querySelector(`tr[data-task="${CSS.escape(ev.taskId)}"]`);
    if (!row) { if (!f.context || f.context === ev.contextId) reload(); return; }
    if (ev.state) {
      if (f.state && ev.state !== f.state) { reload(); return; }
      clear(row.querySelector(".state"), badge(ev.state));
      row.querySelector(".updated").textContent = when(ev.time);
      row.classList.remove("flash"); void row.offsetWidth; row.classList.add("flash");
    }
  }, (open, err) => {
    live.dataset.state = open ? "open" : "closed";
    live.textContent = open ? "live" : err ? `not live: ${err.message}` : "reconnecting…";
  });
  const timer = setInterval(reload, 15000);  // tasks run by other instances of the hub
  return () => { stop(); clearInterval(timer); if (loading) clearTimeout(loading); };
}

// --- one task ------------------------------------------------------------------------------

// A timestamp to the millisecond (the timeline's events are often within one second).
function precise(stamp) {
  const d = new Date(stamp);
  return isNaN(d) ? String(stamp) : d.toISOString().replace("T", " ").replace("Z", "");
}

function eventRow(frame, clock) {
  let ev;
  try { ev = JSON.parse(frame.data); } catch (e) { ev = { raw: frame.data }; }
  const r = ev.result || ev;  // a JSON-RPC frame carries the event in result
  let kind = "other", summary = "", stamp = null;
  if (r.task) {
    kind = "task"; stamp = r.task.status && r.task.status.timestamp;
    summary = `snapshot: ${label(r.task.status && r.task.status.state)}`;
    const first = (r.task.history || [])[0];
    if (first) summary += ` — “${textOf(first.parts).slice(0, 120)}”`;
  } else if (r.statusUpdate) {
    kind = "status"; const s = r.statusUpdate.status || {}; stamp = s.timestamp;
    summary = label(s.state) + (s.message ? ` — ${textOf(s.message.parts).slice(0, 160)}` : "");
  } else if (r.artifactUpdate) {
    kind = "artifact"; const a = r.artifactUpdate.artifact || {};
    summary = `${a.name || a.artifactId}${r.artifactUpdate.append ? " (appended)" : ""}${r.artifactUpdate.lastChunk ? " (last chunk)" : ""}: ${textOf(a.parts).slice(0, 120)}`;
  } else if (r.message) {
    kind = "message"; summary = `${label(r.message.role)}: ${textOf(r.message.parts).slice(0, 160)}`;
  } else if (ev.error) {
    kind = "error"; summary = ev.error.message || JSON.stringify(ev.error);
  }
  if (stamp) clock.last = stamp;
  const time = stamp ? precise(stamp) : clock.last ? `~${precise(clock.last)}` : "";
  return h("li", { dataset: { seq: frame.id || "", kind } },
    h("span", { class: "mono seq" }, frame.id || "–"), h("span", { class: "mono time" }, time),
    h("span", { class: "kind" }, kind), h("span", { class: "summary" }, summary));
}

function deliveryTable(rows, { dead, admin, onRequeue, sent }) {
  if (!rows.length) return h("p", { class: "muted" }, "none");
  return h("table", {}, h("thead", {}, h("tr", {},
    ["Delivery", "Config", "Event", "Attempts", sent ? "Sent" : "Last error", dead && admin ? "" : null].filter((x) => x !== null).map((t) => h("th", {}, t)))),
  h("tbody", {}, rows.map((d) => h("tr", { dataset: { delivery: d.id } },
    h("td", { class: "mono" }, d.id.slice(0, 8)), h("td", { class: "mono" }, d.config_id),
    h("td", {}, d.snapshot ? "snapshot" : `seq ${d.seq}`), h("td", {}, String(d.attempts)),
    h("td", {}, sent ? when(d.at) : d.last_error || ""),
    dead && admin ? h("td", {}, h("button", { type: "button", onclick: () => onRequeue(d) }, "Requeue")) : null))));
}

export async function taskPage(root, { args: [agent, id], ctx }) {
  const base = `a2a/${encodeURIComponent(agent)}/tasks/${encodeURIComponent(id)}`;
  const head = h("div");
  const timeline = h("ol", { class: "timeline", id: "timeline", "aria-label": "Timeline" });
  const streamState = h("span", { class: "live", id: "timeline-state" }, "replaying…");
  const artifacts = h("div", { id: "artifacts" });
  const history = h("ol", { class: "messages", id: "history" });
  const push = h("div", { id: "push" });
  root.append(h("h1", {}, "Task ", h("span", { class: "mono" }, id)), head,
    h("div", { class: "cols" },
      h("div", {}, h("h2", {}, "Timeline ", streamState),
        h("div", { class: "row muted" }, "seq · time (UTC) · kind · what; ~: the time of the last stamped event (artifact events carry none)"),
        timeline),
      h("div", {}, h("h2", {}, "Artifacts"), artifacts, h("h2", {}, "History"), history)),
    h("h2", {}, "Push notifications"), push);

  async function refreshTask() {
    let task;
    try { task = await api(base, { query: { historyLength: 100 } }); } catch (err) { clear(head, errorBox(err)); return null; }
    const state = label(task.status && task.status.state);
    const cancel = h("button", { type: "button", id: "cancel", class: "danger", disabled: TERMINAL.has(state), onclick: async () => {
      cancel.disabled = true;
      try { await api(`${base}:cancel`, { method: "POST", body: {} }); } catch (err) { head.append(errorBox(err)); }
      refreshTask();
    } }, "Cancel task");
    clear(head, h("dl", { class: "kv" },
      h("dt", {}, "agent"), h("dd", {}, h("a", { href: hashFor("tasks", { agent }) }, agent)),
      h("dt", {}, "state"), h("dd", { id: "task-state", dataset: { state } }, badge(state)),
      h("dt", {}, "context"), h("dd", { class: "mono" }, h("a", { href: `#/conversation/${encodeURIComponent(agent)}/${encodeURIComponent(task.contextId)}` }, task.contextId)),
      h("dt", {}, "updated"), h("dd", {}, when(task.status && task.status.timestamp)),
      task.status && task.status.message ? [h("dt", {}, "status message"), h("dd", {}, textOf(task.status.message.parts))] : ""),
    h("p", {}, cancel));
    clear(artifacts, (task.artifacts || []).length ? task.artifacts.map((a) => h("section", { class: "artifact", dataset: { artifact: a.artifactId } },
      h("h3", {}, a.name || a.artifactId), a.description ? h("p", { class: "muted" }, a.description) : "", joined(a.parts).map(part))) : h("p", { class: "muted" }, "none"));
    clear(history, (task.history || []).map((m) => h("li", { class: label(m.role).replace("role-", "") },
      h("div", { class: "meta" }, label(m.role).replace("role-", ""), " · ", h("span", { class: "mono" }, m.messageId)), (m.parts || []).map(part))));
    return task;
  }

  let pendingPoll = null;
  async function refreshPush() {
    let configs = [], found = { pending: [], dead: [], delivered: [] };
    try {
      configs = (await api(`${base}/pushNotificationConfigs`)).configs || [];
      found = await api(`ui/api/tasks/${encodeURIComponent(agent)}/${encodeURIComponent(id)}/deliveries`);
    } catch (err) { clear(push, errorBox(err)); return; }
    const requeue = async (d) => {
      try { await api("admin/v1/push/dead:requeue", { method: "POST", body: { ids: [d.id] } }); } catch (err) { push.append(errorBox(err)); }
      refreshPush();
    };
    clear(push,
      configs.length ? h("table", { id: "push-configs" }, h("thead", {}, h("tr", {}, h("th", {}, "Config"), h("th", {}, "URL"))),
        h("tbody", {}, configs.map((c) => h("tr", {}, h("td", { class: "mono" }, c.id || ""), h("td", { class: "mono" }, c.url))))) : h("p", { class: "muted" }, "No push config."),
      h("h3", {}, `Pending (${found.pending.length})`), h("div", { id: "deliveries-pending" }, deliveryTable(found.pending, {})),
      h("h3", {}, `Dead (${found.dead.length})`), h("div", { id: "deliveries-dead" }, deliveryTable(found.dead, { dead: true, admin: ctx.session.admin, onRequeue: requeue })),
      h("h3", {}, `Delivered lately (${found.delivered.length})`), h("div", { id: "deliveries-delivered" }, deliveryTable(found.delivered, { sent: true })));
    clearTimeout(pendingPoll);
    if (found.pending.length) pendingPoll = setTimeout(refreshPush, 2000);
  }

  await refreshTask();
  await refreshPush();
  const abort = new AbortController();
  const clock = { last: null };
  let again = null;
  const soon = () => { clearTimeout(again); again = setTimeout(() => { refreshTask(); refreshPush(); }, 200); };
  sse(`${base}:subscribe?lastEventId=0`, (frame) => {
    timeline.append(eventRow(frame, clock));
    soon();
  }, { signal: abort.signal }).then(() => {
    streamState.textContent = "ended"; streamState.dataset.state = "ended"; timeline.dataset.done = "true";
  }, (err) => {
    if (abort.signal.aborted) return;
    streamState.textContent = `not streamed: ${err.message}`; streamState.dataset.state = "closed"; timeline.dataset.done = "true";
  });
  return () => { abort.abort(); clearTimeout(again); clearTimeout(pendingPoll); };
}
