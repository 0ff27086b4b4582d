// a2a-hub chat page: the WebSocket channel of seed 003, no build step, no dependencies.
"use strict";
(function () {
  const $ = (id) => document.getElementById(id);
  const log = $("log");
  const conn = $("connection");
  const MAX_TRIES = 5;
  const store = window.sessionStorage;
  const state = {
    ws: null,
    tries: 0,
    closing: false,
    contextId: store.getItem("a2a-context") || crypto.randomUUID(),
    lastMessageId: store.getItem("a2a-last-message") || null,
    newest: JSON.parse(store.getItem("a2a-newest") || "{}"), // task id -> newest seq seen
    seen: new Set(), // "task|seq|event|tool_call_id" already shown
    bubbles: new Map(), // message id -> agent bubble
    current: null, // task id of the running turn
    waiting: null, // task id of a task waiting for input: the next message continues it
    needsKey: false, // the agent refused a socket without a (good) key: wait for one
    toolCallAt: null, // "task|seq" of the last tool call: its status is no question
    pinger: null,
  };
  store.setItem("a2a-context", state.contextId);
  $("apikey").value = store.getItem("a2a-key") || "";
  const parts = location.pathname.split("/");
  $("agent").textContent = parts.length > 3 && parts[1] === "a2a" ? "· " + decodeURIComponent(parts[2]) : "";

  function wsUrl() {
    const url = new URL("ws", location.href);
    url.protocol = location.protocol === "https:" ? "wss:" : "ws:";
    return url.toString();
  }

  function setConnection(kind, text) {
    conn.dataset.state = kind;
    conn.textContent = text;
    $("reconnect").hidden = kind !== "closed";
  }

  function add(cls, text) {
    const li = document.createElement("li");
    li.className = cls;
    li.textContent = text;
    log.appendChild(li);
    li.scrollIntoView({ block: "end" });
    return li;
  }

  function bubble(messageId) {
    let b = state.bubbles.get(messageId);
    if (!b) {
      b = add("agent", "");
      b.dataset.messageId = messageId || "";
      state.bubbles.set(messageId, b);
    }
    return b;
  }

  function setStatus(text, progress) {
    $("status-text").textContent = text;
    const bar = $("progress");
    if (typeof progress === "number") {
      bar.hidden = false;
      bar.value = progress;
    } else {
      bar.hidden = true;
    }
  }

  function save() {
    store.setItem("a2a-newest", JSON.stringify(state.newest));
    if (state.lastMessageId) store.setItem("a2a-last-message", state.lastMessageId);
  }

  function connect() {
    const key = $("apikey").value.trim();
    const protocols = ["a2a-hub"];
    if (key) protocols.push("a2a-key." + key);
    let opened = false;
    const ws = new WebSocket(wsUrl(), protocols);
    state.ws = ws;
    ws.onopen = () => {
      opened = true;
      const lastSeq = {};
      for (const [task, seq] of Object.entries(state.newest)) lastSeq[task] = Math.max(seq - 1, 0);
      ws.send(JSON.stringify({ action: "sync_state", last_message_id: state.lastMessageId,
        last_seq: lastSeq, context_id: state.contextId }));
      clearInterval(state.pinger);
      state.pinger = setInterval(() => send({ action: "ping", client_timestamp: new Date().toISOString() }), 25000);
    };
    ws.onmessage = (msg) => handle(JSON.parse(msg.data));
    ws.onclose = (ev) => {
      clearInterval(state.pinger);
      if (state.ws !== ws || state.closing) return;
      // 1008: the agent needs a key (or another one); retrying without one cannot help
      if (ev.code === 1008 || state.needsKey) {
        askForKey();
        return;
      }
      state.tries += 1;
      retry();
    };
  }

  // The socket works (the server answered sync_state): the retries and old errors go.
  function connected() {
    state.tries = 0;
    state.needsKey = false;
    for (const li of log.querySelectorAll("li.error")) li.remove();
    setConnection("open", "Connected");
  }

  function askForKey() {
    state.needsKey = true;
    const hadKey = Boolean($("apikey").value.trim());
    setConnection("needs-key", hadKey
      ? "This agent did not accept that API key: enter another one below."
      : "This agent needs an API key: enter it below and press “Use key and reconnect”.");
    $("settings").open = true;
    $("apikey").focus();
  }

  function retry() {
    if (state.tries > MAX_TRIES) {
      setConnection("closed", "Disconnected: could not reconnect after " + MAX_TRIES + " tries");
      return;
    }
    // exponential backoff from 1 s, ±20 % jitter (seed 003, section 4.1)
    const base = Math.min(1000 * Math.pow(2, state.tries - 1), 30000);
    const wait = base + base * 0.4 * (Math.random() - 0.5);
    setConnection("reconnecting", "Reconnecting (" + state.tries + "/" + MAX_TRIES + ")…");
    state.needsKey = false;
    setTimeout(connect, wait);
  }

  function send(frame) {
    if (state.ws && state.ws.readyState === WebSocket.OPEN) {
      state.ws.send(JSON.stringify(frame));
      return true;
    }
    return false;
  }

  function fresh(e) {
    if (!e.task_id || e.seq === null || e.seq === undefined) return true;
    const key = [e.task_id, e.seq, e.event, e.tool_call_id || ""].join("|");
    if (state.seen.has(key)) return false;
    if (e.seq < (state.newest[e.task_id] || 0) - 1) return false;
    state.seen.add(key);
    state.newest[e.task_id] = Math.max(state.newest[e.task_id] || 0, e.seq);
    save();
    return true;
  }

  const CLIENT_TOOLS = {
    time_zone: () => ({ zone: Intl.DateTimeFormat().resolvedOptions().timeZone }),
    confirm: (params) => ({ confirmed: window.confirm(params.question || "Confirm?") }),
  };

  function handle(e) {
    if (!fresh(e)) return;
    switch (e.event) {
      case "content_stream":
        bubble(e.message_id).textContent += e.chunk;
        break;
      case "message_completed": {
        const b = bubble(e.message_id);
        if (!b.textContent) b.textContent = e.response.content;
        b.dataset.done = "true";
        for (const s of e.response.sources || []) {
          const a = document.createElement("a");
          a.href = s.url || "#";
          a.textContent = " [" + (s.title || s.url) + "]";
          b.appendChild(a);
        }
        break;
      }
      case "message_status_update":
        break;
      case "sync_completed":
      case "authenticated":
        connected();
        break;
      case "task_status_update": {
        const open = e.status === "queued" || e.status === "processing";
        state.current = open ? e.global_task_id : null;
        // a question of the agent (input-required) is part of the conversation, and the
        // next message answers it: it continues that task (as `a2a-hub chat --ws` does)
        const toolCall = state.toolCallAt === e.task_id + "|" + e.seq;
        if (e.status === "input-required" && !toolCall) { // a tool call is answered by the page
          state.waiting = e.global_task_id;
          if (e.message) {
            const b = add("agent", e.message);
            b.dataset.done = "true";
            b.dataset.question = "true";
          }
        } else if (state.waiting === e.global_task_id && e.status !== "processing" && e.status !== "queued") {
          state.waiting = null;
        }
        $("cancel").disabled = !open;
        setStatus(e.message ? e.status + ": " + e.message : e.status, e.progress);
        break;
      }
      case "tool_call": {
        const li = add("tool", "Tool call: " + e.tool_id + " " + JSON.stringify(e.params));
        li.dataset.toolCallId = e.tool_call_id;
        state.toolCallAt = e.task_id + "|" + e.seq;
        const tool = CLIENT_TOOLS[e.tool_id];
        if (tool && e.seq === state.newest[e.task_id]) {
          let result;
          try {
            result = { status: "success", data: tool(e.params || {}) };
          } catch (err) {
            result = { status: "error", error_message: String(err) };
          }
          send({ action: "tool_response", tool_call_id: e.tool_call_id, result: result });
        }
        break;
      }
      case "tool_response":
        add("tool", "Tool result: " + JSON.stringify(e.result));
        break;
      case "error":
        if (e.code === "unauthenticated" || e.code === "permission_denied") {
          state.needsKey = true; // the close (1008) that follows asks for a key
          break;
        }
        add("error", "Error (" + e.code + "): " + e.message);
        break;
      default:
        break;
    }
  }

  $("composer").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const text = $("text").value.trim();
    if (!text) return;
    const id = crypto.randomUUID();
    const frame = { action: "send_message", message_id: id, text: text, context_id: state.contextId };
    if (state.waiting) frame.task_id = state.waiting;
    if (!send(frame)) {
      add("error", "Not connected: the message was not sent");
      return;
    }
    state.lastMessageId = id;
    state.waiting = null;
    save();
    add("user", text);
    $("text").value = "";
    setStatus("sent");
  });
  $("text").addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && !ev.shiftKey) {
      ev.preventDefault();
      $("composer").requestSubmit();
    }
  });
  $("cancel").addEventListener("click", () => {
    if (state.current) send({ action: "cancel_task", global_task_id: state.current });
  });
  $("reconnect").addEventListener("click", () => { state.tries = 0; connect(); });
  $("savekey").addEventListener("click", () => {
    store.setItem("a2a-key", $("apikey").value.trim());
    state.tries = 0;
    state.needsKey = false;
    if (state.ws) { const old = state.ws; state.ws = null; old.close(); }
    connect();
  });
  connect();
})();
