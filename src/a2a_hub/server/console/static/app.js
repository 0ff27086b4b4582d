// The console's shell: the key form, who the caller is, and the pages by URL fragment.
import { api, getKey, setKey } from "./net.js";
import { clear, errorBox, h, params } from "./ui.js";
import { agentsPage } from "./agents.js";
import { tasksPage, taskPage } from "./tasks.js";
import { conversationsPage, conversationPage } from "./conversations.js";
import { operationsPage } from "./operations.js";
import { inspectorPage } from "./inspector.js";

const PAGES = {
  agents: agentsPage,
  tasks: tasksPage,
  task: taskPage,
  conversations: conversationsPage,
  conversation: conversationPage,
  operations: operationsPage,
  inspector: inspectorPage,
};
const view = document.getElementById("view");
const ctx = { session: null };
let cleanup = null;
let generation = 0;

async function loadSession() {
  try {
    ctx.session = await api("ui/api/session");
  } catch (err) {
    ctx.session = null;
    if (err.status === 401 && getKey()) {
      // the key is unknown, revoked or expired: say so and go on without it
      setKey("");
      ctx.keyError = err.message;
      ctx.session = await api("ui/api/session");
    } else {
      throw err;
    }
  }
  const s = ctx.session;
  const who = document.getElementById("who");
  who.textContent = s.principal
    ? `${s.principal} (${s.scopes.join(", ") || "no scopes"})`
    : s.keys ? "no key: public agents only" : "open hub (no keys)";
  who.dataset.principal = s.principal || "";
  document.getElementById("nav-operations").hidden = !s.admin;
  document.getElementById("forgetkey").hidden = !getKey();
}

async function route() {
  const mine = ++generation;
  if (cleanup) { try { cleanup(); } catch (e) { /* already gone */ } cleanup = null; }
  const hash = location.hash.replace(/^#\/?/, "") || "agents";
  const [path, query] = hash.split("?");
  const [page, ...rest] = path.split("/").map(decodeURIComponent);
  for (const a of document.querySelectorAll("nav a")) {
    const current = a.dataset.page === page || (a.dataset.page + "s") === page || a.dataset.page === page + "s";
    if (current) a.setAttribute("aria-current", "page"); else a.removeAttribute("aria-current");
  }
  const render = PAGES[page];
  clear(view);
  view.dataset.page = page;
  if (ctx.keyError) { view.append(errorBox(`That key was refused: ${ctx.keyError}`)); ctx.keyError = null; }
  if (!render) { view.append(errorBox(`No page ${page}`)); return; }
  const root = h("section", { id: `page-${page}` });
  view.append(root);
  try {
    const done = await render(root, { args: rest, query: params(query), ctx });
    if (mine === generation) cleanup = typeof done === "function" ? done : null;
    else if (typeof done === "function") done();
  } catch (err) {
    root.append(errorBox(err));
  }
}

document.getElementById("keyform").addEventListener("submit", async (event) => {
  event.preventDefault();
  const input = document.getElementById("apikey");
  setKey(input.value.trim());
  input.value = "";
  await loadSession().catch((err) => view.prepend(errorBox(err)));
  await route();
});
document.getElementById("forgetkey").addEventListener("click", async () => {
  setKey("");
  await loadSession().catch((err) => view.prepend(errorBox(err)));
  await route();
});
window.addEventListener("hashchange", route);

loadSession().then(route, (err) => clear(view, errorBox(err)));
