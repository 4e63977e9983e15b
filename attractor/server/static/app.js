// attractor's web page: the runs list and one run's live view. Plain scripts, no build step:
// this one (shared helpers, one run's view, the node panel, gates, the event stream,
// routing) and, loaded after it, runs.js, costs.js, timeline.js and output.js.
"use strict";

const STATES = ["pending", "running", "success", "partial", "fail", "skipped", "retry", "stopped"];
const FINAL = new Set(["pipeline_completed", "pipeline_failed", "pipeline_timed_out",
                       "pipeline_interrupted"]);
const $ = (id) => document.getElementById(id);
// Every event type the engine writes (attractor/events.py), so the log misses none.
const EVENT_TYPES = ["pipeline_started", "stage_started", "stage_completed", "stage_failed",
  "stage_retrying", "stage_output", "parallel_started", "parallel_branch_started",
  "parallel_branch_completed", "parallel_completed", "manager_cycle", "interview_started",
  "interview_completed", "interview_timeout", "interview_rejected", "checkpoint_saved",
  "turn_budget_resolved", "agent_turn_started", "agent_turn_completed", "tool_call_started",
  "tool_call_completed", "agent_reflection", "agent_warning", "turn_limit_reached", "debug",
  "child_event", "unreadable", ...FINAL];
// Events that change the timeline.
const TIMELINE = new Set(["stage_started", "stage_completed", "stage_failed", "stage_retrying",
                          "interview_started", "interview_completed", "interview_timeout",
                          "parallel_branch_started", "parallel_branch_completed"]);
// Events after which what the run spent (or its budgets' use) may have changed.
const SPENDING = new Set(["stage_completed", "stage_failed", "agent_turn_completed"]);
// Runs that stopped before their end: a plain resume goes on where they stopped.
const RESUMABLE = new Set(["interrupted", "timed_out", "terminated", "hangup", "stopped"]);

// The access token: opened as /?token=..., the page sends it with every request,
// keeps it in this tab for a reload (sessionStorage belongs to this port alone: no
// cookie, which the browser would send to every port of the host), and takes it
// out of the address bar so it is not shared by accident.
const TOKEN_KEY = "attractor-token";
const TOKEN = (() => {
  const given = new URLSearchParams(location.search).get("token");
  if (!given) {
    try { return sessionStorage.getItem(TOKEN_KEY); } catch { return null; }
  }
  try { sessionStorage.setItem(TOKEN_KEY, given); } catch { /* kept in memory only */ }
  history.replaceState(null, "", location.pathname + location.hash);
  return given;
})();
const authHeaders = TOKEN ? { Authorization: `Bearer ${TOKEN}` } : {};
const withToken = (url) => (TOKEN ? `${url}?token=${encodeURIComponent(TOKEN)}` : url);

// A link to a file served whole: a plain link would carry no token, so a click
// fetches the file with it and shows it as text in a new tab.
function fileLink(href, text) {
  const open = (event) => {
    event.preventDefault();
    const tab = window.open("", "_blank");
    if (!tab) return;
    fetch(href, { headers: authHeaders }).then(async (response) => {
      if (!response.ok) throw new Error(`${response.status} ${response.statusText}`);
      const blob = new Blob([await response.arrayBuffer()], { type: "text/plain; charset=utf-8" });
      tab.location.href = URL.createObjectURL(blob);
    }).catch((error) => { tab.document.body.textContent = `cannot open ${href}: ${error.message}`; });
  };
  return el("a", { href, target: "_blank", text, onclick: open });
}

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value);
  }
  for (const child of children) node.append(child);
  return node;
}

async function api(path, options = {}) {
  const response = await fetch(path, {
    headers: { "Content-Type": "application/json", ...authHeaders }, credentials: "same-origin",
    ...options,
  });
  const data = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(data.error || `${response.status} ${response.statusText}`);
  return data;
}

function seconds(value) {
  if (value == null) return "";
  if (value < 60) return `${value.toFixed(1)}s`;
  const whole = Math.round(value), m = Math.floor(whole / 60), s = whole % 60;
  return m < 60 ? `${m}m${String(s).padStart(2, "0")}s` : `${Math.floor(m / 60)}h${m % 60}m`;
}

// Token counts and cost as one short line: "1,200 in (400 cached) / 300 out · $0.0421".
function usageText(u) {
  if (!u || !(u.input_tokens || u.output_tokens || u.cost)) return "";
  const n = (v) => (v || 0).toLocaleString("en-US");
  const cached = u.cache_read_tokens ? ` (${n(u.cache_read_tokens)} cached)` : "";
  const parts = [`${n(u.input_tokens)} in${cached} / ${n(u.output_tokens)} out`];
  if (u.cost != null) parts.push(dollars(u.cost));
  return parts.join(" · ");
}

function dollars(value) {
  if (value == null) return "";
  return `$${value < 1 ? value.toFixed(4) : value.toFixed(2)}`;
}

function stateColour(state) {
  return getComputedStyle(document.documentElement).getPropertyValue(`--${state}`).trim();
}

$("start-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  $("start-error").textContent = "";
  try {
    const { id } = await api("/pipelines", {
      method: "POST", body: JSON.stringify({ path: $("start-path").value }),
    });
    location.hash = `#/run/${encodeURIComponent(id)}`;
  } catch (error) {
    $("start-error").textContent = error.message;
  }
});

// -- one run -------------------------------------------------------------------

const view = { output: {}, id: null, source: null, lastId: 0, nodes: {}, run: null, selected: null,
               timer: null, startedAt: null, finishedAt: null, order: [] };

async function showRun(id) {
  closeStream();
  Object.assign(view, { id, lastId: 0, nodes: {}, run: null, selected: null, attempt: null, order: [],
                        output: {}, timeline: null });
  $("runs-view").hidden = true;
  $("run-view").hidden = false;
  $("run-title").textContent = id;
  $("event-log").replaceChildren();
  $("node-panel").hidden = true;
  $("run-error").textContent = "";
  buildLegend();
  await refreshRun();
  await loadGraph();
  loadTimeline().catch(() => {});
  openStream();
  clearInterval(view.timer);
  view.timer = setInterval(showElapsed, 1000);
}

async function refreshRun() {
  const run = await api(`/pipelines/${encodeURIComponent(view.id)}`);
  view.run = run;
  // Tokens a running node's requests used so far are known from its events only.
  for (const [id, n] of Object.entries(run.nodes)) {
    if (n.state === "running" && view.nodes[id]) n.liveTokens = view.nodes[id].liveTokens || 0;
  }
  view.nodes = run.nodes;
  view.order = Object.keys(run.nodes);
  view.startedAt = run.started_at;
  view.finishedAt = run.status === "running" ? null : run.finished_at;
  showHeader();
  renderNodeList();
  showSpending();
  showQuestions(run.questions || []);
  showFailure();
  // The error a run died of here; why it failed when no banner says it.
  const why = run.error || (run.status === "fail" && $("failure").hidden ? run.failure_reason : "");
  if (why) $("run-error").textContent = why;
}

// A failed run opens with what failed, why, the node's last output, and the two
// ways on: retry the failed node, or run again from it.
function showFailure() {
  const run = view.run;
  const banner = $("failure");
  const failed = run.status === "fail" && !run.active;
  banner.hidden = !failed;
  if (!failed) return;
  const f = run.failure || { node: run.current_node, reason: run.failure_reason || run.error, output: "" };
  $("failure-title").textContent = f.node ? `Run failed at ${f.node}` : "Run failed";
  $("failure-reason").textContent = f.reason || run.error || "";
  $("failure-output").hidden = !f.output;
  $("failure-output").textContent = f.output || "";
  const from = $("failure-from");
  from.hidden = !f.node || !(run.route || []).includes(f.node);
  from.dataset.node = f.node || "";
}

function showHeader() {
  const run = view.run;
  const status = $("run-status");
  status.textContent = run.status;
  status.className = `badge s-${run.status}`;
  const p = run.progress;
  $("run-progress").textContent = p ? `node ${p.index} of ${p.total} on the main path` : "";
  // Offer only what the server can do with the run as it is now.
  const over = !run.active && run.status !== "running";
  $("cancel-btn").hidden = !run.active;
  $("resume-btn").hidden = !over || !RESUMABLE.has(run.status);
  $("retry-btn").hidden = !over || run.status !== "fail";
  const entered = [...new Set(run.route || [])];
  $("from-form").hidden = !over || !entered.length;
  const select = $("from-node");
  if (select.dataset.nodes !== entered.join("\n")) {
    select.dataset.nodes = entered.join("\n");
    select.replaceChildren(...entered.map((id) => el("option", { value: id, text: id })));
  }
  showElapsed();
}

function showElapsed() {
  showDeadline();
  tickTimeline();
  if (!view.startedAt) return;
  if (!view.finishedAt && (view.run.budgets || []).some((b) => b.name === "time" && b.limit != null)) {
    showBudgets(view.run.budgets);
  }
  const end = view.finishedAt || Date.now() / 1000;
  $("run-elapsed").textContent = `elapsed ${seconds(Math.max(0, end - view.startedAt))}`;
}

// While events arrive, the run's figures (costs, budgets) are read again now and then.
function refreshSoon() {
  if (view.refreshing) return;
  view.refreshing = setTimeout(() => { view.refreshing = null; refreshRun().catch(() => {}); }, 1000);
}

// The node panel is read again after its node's events, at most every half second.
function panelSoon() {
  if (view.panelTimer) return;
  view.panelTimer = setTimeout(() => {
    view.panelTimer = null;
    if (view.selected) selectNode(view.selected).catch(() => {});
  }, 300);
}

function timelineSoon() {
  if (view.timelineTimer || $("timeline").hidden) return;
  view.timelineTimer = setTimeout(() => { view.timelineTimer = null; loadTimeline().catch(() => {}); }, 500);
}

async function loadGraph() {
  const response = await fetch(`/pipelines/${encodeURIComponent(view.id)}/graph`,
                               { credentials: "same-origin", headers: authHeaders });
  if (!response.ok) return;
  $("graph").innerHTML = await response.text();
  for (const group of document.querySelectorAll("#graph g.node")) {
    const id = group.id.replace(/^node-/, "");
    group.setAttribute("tabindex", "0");
    group.setAttribute("role", "button");
    group.setAttribute("aria-label", `node ${id}`);
    group.addEventListener("click", () => selectNode(id));
    group.addEventListener("keydown", (e) => { if (e.key === "Enter" || e.key === " ") selectNode(id); });
  }
  for (const id of Object.keys(view.nodes)) paintNode(id);
}

function buildLegend() {
  const legend = $("legend");
  legend.replaceChildren(...STATES.map((s) =>
    el("li", {}, el("span", { style: `background: var(--${s})` }), s)));
}

// The graph and the node list follow every event, as the server's inventory does.
function applyEvent(event) {
  const node = (id) => (view.nodes[id] ||= { id, state: "pending", visits: 0, attempts: 0,
                                              duration: 0, turn: "", tool: "", notes: "" });
  switch (event.type) {
    case "stage_output":
      addOutput(event.node, Number.isInteger(event.visit) ? event.visit : outputOf(event.node).visit,
                event.stream === "stderr" ? "stderr" : "stdout", String(event.text || ""),
                Number.isInteger(event.attempt) ? event.attempt : outputOf(event.node).attempt);
      return; // the panel took the lines itself: nothing to read again
    case "stage_started": {
      const n = node(event.name);
      Object.assign(n, { state: "running", turn: "", tool: "", attempts: event.attempt || 1, liveTokens: 0 });
      // The visit the engine numbered (a resume or a go-back goes on counting
      // from the run's own numbers); counted from first attempts for older events.
      if (Number.isInteger(event.visit)) n.visits = Math.max(n.visits, event.visit);
      else if ((event.attempt || 1) === 1) n.visits += 1;
      startOutput(n.id, n.visits, event.attempt || 1);
      paintNode(n.id);
      markCurrent(n.id);
      break;
    }
    case "stage_completed": {
      const n = node(event.name);
      n.state = event.status === "partial_success" ? "partial" : event.status;
      n.duration += event.duration || 0;
      Object.assign(n, { notes: event.notes || "", turn: "", tool: "" });
      paintNode(n.id);
      break;
    }
    case "stage_failed":
      if (!event.will_retry) { Object.assign(node(event.name), { state: "fail", turn: "", tool: "" }); }
      node(event.name).error = event.error;
      paintNode(event.name);
      break;
    case "agent_turn_completed": {
      const n = node(event.node);
      n.liveTokens = (n.liveTokens || 0) + (event.input_tokens || 0) + (event.output_tokens || 0);
      renderNodeList();
      break;
    }
    case "agent_turn_started":
      node(event.node).turn = `turn ${event.turn}/${event.max_turns}`;
      paintNode(event.node);
      break;
    case "tool_call_started":
      node(event.node).tool = `${event.tool}: ${event.summary || ""}`;
      paintNode(event.node);
      addOutput(event.node, outputOf(event.node).visit || node(event.node).visits, "tool",
                `▸ ${event.tool}: ${event.summary || ""}`);
      break;
    case "tool_call_completed": {
      node(event.node).tool = "";
      paintNode(event.node);
      const lines = String(event.output || "").split("\n");
      const shown = lines.slice(0, 20).join("\n") + (lines.length > 20 ? `\n… ${lines.length - 20} more lines` : "");
      addOutput(event.node, outputOf(event.node).visit || node(event.node).visits,
                event.is_error ? "stderr" : "result", shown);
      break;
    }
    case "interview_started": case "interview_completed": case "interview_timeout":
      loadQuestions();
      break;
  }
  if (view.selected && [event.name, event.node, event.stage].includes(view.selected)) {
    panelSoon();
  }
}

function paintNode(id) {
  const n = view.nodes[id];
  if (!n) return;
  const group = document.getElementById(`node-${id}`);
  if (group) {
    for (const s of STATES) group.classList.remove(`state-${s}`);
    group.classList.add(`state-${n.state}`);
    group.dataset.state = n.state;
    const shape = group.querySelector("polygon, ellipse, path");
    if (shape) shape.setAttribute("fill", stateColour(n.state) || "#f4f4f5");
    liveNote(group, [n.turn, n.tool].filter(Boolean).join(" · "));
  }
  renderNodeList();
}

// The node the run is at (as the picture marks it): the one that started last.
function markCurrent(id) {
  for (const g of document.querySelectorAll("#graph g.node.current")) g.classList.remove("current");
  document.getElementById(`node-${id}`)?.classList.add("current");
}

function liveNote(group, text) {
  let note = group.querySelector("text.live-note");
  if (!text) { if (note) note.remove(); return; }
  if (!note) {
    const box = group.getBBox();
    note = document.createElementNS("http://www.w3.org/2000/svg", "text");
    note.setAttribute("class", "live-note");
    note.setAttribute("x", box.x + box.width / 2);
    note.setAttribute("y", box.y + box.height + 11);
    note.setAttribute("text-anchor", "middle");
    group.append(note);
  }
  note.textContent = text.length > 60 ? text.slice(0, 59) + "…" : text;
}

function renderNodeList() {
  const list = $("node-list");
  const ids = [...new Set([...view.order, ...Object.keys(view.nodes)])];
  // The list is drawn anew on each event: a node's button that had the focus keeps it
  // (a keyboard user, or a key pressed as an event arrives, is not left on nothing).
  const focused = document.activeElement?.closest?.("#node-list button")?.dataset.node;
  list.replaceChildren(...ids.map((id) => {
    const n = view.nodes[id];
    const spent = n.state === "running" && n.liveTokens ? `${n.liveTokens.toLocaleString("en-US")} tok so far`
      : n.usage ? (n.usage.cost != null ? dollars(n.usage.cost)
      : `${((n.usage.input_tokens || 0) + (n.usage.output_tokens || 0)).toLocaleString("en-US")} tok`) : "";
    const info = [n.turn, n.tool, n.visits > 1 ? `x${n.visits}` : "", n.duration ? seconds(n.duration) : "",
                  spent].filter(Boolean).join(" · ");
    // Where the step's commands run (sandbox, network, env), as a tooltip.
    const bounded = n.boundary ? { title: `boundary: ${n.boundary}` } : {};
    return el("li", {}, el("button", { type: "button", "data-node": id, "data-state": n.state,
                                        ...bounded, onclick: () => selectNode(id) },
      el("span", { class: "dot", style: `background: var(--${n.state})` }),
      el("span", { text: id }), el("span", { class: "muted", text: n.state }),
      el("span", { class: "info", text: info })));
  }));
  if (focused != null) list.querySelector(`button[data-node="${CSS.escape(focused)}"]`)?.focus();
}

// Show node ``id`` in the panel; ``attempt`` (a folder the timeline names, like
// "fix/v1-a2") shows that visit's and attempt's files instead of the latest.
async function selectNode(id, attempt = view.selected === id ? view.attempt : null) {
  view.selected = id;
  view.attempt = attempt;
  for (const g of document.querySelectorAll("#graph g.node")) {
    g.classList.toggle("selected", g.id === `node-${id}`);
  }
  const query = attempt ? `?attempt=${encodeURIComponent(attempt)}` : "";
  const data = await api(`/pipelines/${encodeURIComponent(view.id)}/nodes/${encodeURIComponent(id)}${query}`);
  if (view.selected !== id || view.attempt !== attempt) return;
  $("node-panel").hidden = false;
  $("node-title").textContent = data.label && data.label !== id ? `${id} - ${data.label}` : id;
  $("node-sections").replaceChildren(...PANEL_SECTIONS.flatMap((section) => section(data) || []));
}

// The node panel, section by section: each takes the node's data (GET
// /pipelines/{id}/nodes/{node}) and returns its elements, or nothing to leave
// itself out. A new section is one more function in this list.
const PANEL_SECTIONS = [panelFacts, panelRequests, panelAttempts, panelOutput, panelDiff, panelFiles];

function panelFacts(data) {
  const n = data.node;
  // A node still running has spent the time since its attempt started (its
  // duration counts finished attempts only).
  const latest = (data.attempts || []).at(-1);
  const time = n.state === "running" && latest && latest.started
    ? `${seconds(n.duration + Math.max(0, Date.now() / 1000 - latest.started))} so far` : seconds(n.duration);
  const facts = [["type", data.handler], ["state", n.state], ["visits", n.visits],
                 ["time", time], ["spent", usageText(data.usage)],
                 ["chose", n.preferred_label], ["notes", n.notes], ["error", n.error],
                 ["now", [n.turn, n.tool].filter(Boolean).join(" · ")],
                 ["boundary", data.boundary]];
  return el("dl", { id: "node-facts" }, ...facts.filter(([, v]) => v !== "" && v != null)
    .flatMap(([k, v]) => [el("dt", { text: k }), el("dd", { text: String(v) })]));
}

// Each model request of the node (an agent turn) with its tokens and cost.
function panelRequests(data) {
  const turns = data.requests || [];
  if (!turns.length) return null;
  const n = (v) => (v || 0).toLocaleString("en-US");
  return el("details", { id: "node-requests" },
    el("summary", { text: `requests (${turns.length})` }),
    el("table", { class: "costs" },
      el("thead", {}, el("tr", {}, ...["visit", "turn", "in", "out", "cached", "cost"]
        .map((h) => el("th", { text: h })))),
      el("tbody", {}, ...turns.map((t) => el("tr", {},
        el("td", { text: String(t.visit) }), el("td", { text: `${t.turn} ${t.kind}` }),
        el("td", { class: "num", text: n(t.input_tokens) }),
        el("td", { class: "num", text: n(t.output_tokens) }),
        el("td", { class: "num", text: n(t.cache_read_tokens) }),
        el("td", { class: "num", text: t.cost != null ? dollars(t.cost) : "" }))))));
}

// Every visit and attempt of the node: each opens its own files.
function panelAttempts(data) {
  const attempts = data.attempts || [];
  if (attempts.length < 2) return null;
  const id = data.node.id;
  return el("div", { id: "node-attempts" },
    el("h3", { text: "Visits and attempts" }),
    el("ul", { class: "attempts" }, ...attempts.map((a) => {
      const current = a.files === data.files_of;
      const button = el("button", { type: "button", "data-files": a.files,
                                    onclick: () => selectNode(id, a.files) },
        `visit ${a.visit} · attempt ${a.attempt}`,
        el("span", { class: `badge s-${stateOf(a.status)}`, text: a.status }));
      if (current) button.setAttribute("aria-current", "true");
      return el("li", {}, button);
    })));
}

const stateOf = (status) => (status === "partial_success" ? "partial" : status);

// The node's live output (output.js keeps the lines).
function panelOutput(data) {
  const out = view.output[data.node.id];
  if (!out || !out.lines.length || view.attempt) return null;
  const box = el("section", { id: "node-output", "aria-label": "Live output" },
    el("h3", { text: `Output (visit ${out.visit}${out.attempt > 1 ? `, attempt ${out.attempt}` : ""})` }),
    el("p", { class: "cut", id: "node-output-cut" }),
    el("pre", { class: "terminal", "aria-live": "off" }));
  fillOutput(box, data.node.id);
  return box;
}

function panelFiles(data) {
  const files = Object.entries(data.files);
  if (data.prompt && !data.files["prompt.md"]) files.unshift(["prompt (graph)", data.prompt]);
  return el("div", { id: "node-files", "data-folder": data.files_of || "" }, ...files.map(([name, text]) =>
    el("details", name === "answer.json" || name === "status.json" ? { open: "" } : {},
       el("summary", { text: name }),
       // A tail cut from a longer file starts with "…": the whole file is a link away.
       text.startsWith("…") ? el("p", { class: "cut" }, "Only the end is shown: ",
         fileLink(fileUrl(data.node.id, name, data.files_of), `whole ${name}`))
         : "",
       el("pre", { text }))));
}

// The stage's diff, read after the panel is drawn (a git command each time).
function panelDiff(data) {
  const box = el("div", { id: "node-diff", hidden: "" });
  showNodeDiff(data.node.id, box);
  return box;
}

// The files the stage changed (its workspace checkpoint); nothing when the run keeps none.
async function showNodeDiff(id, box) {
  let data;
  try {
    data = await api(`/pipelines/${encodeURIComponent(view.id)}/nodes/${encodeURIComponent(id)}/diff`);
  } catch (error) {
    return;
  }
  if (view.selected !== id || !data.diff) return;
  box.replaceChildren(diffBlock(data, `Changes of ${id}`));
  box.hidden = false;
}

// The address of a stage file served whole (of the attempt shown, if one was picked).
function fileUrl(node, name, folder) {
  const base = `/pipelines/${encodeURIComponent(view.id)}/nodes/${encodeURIComponent(node)}/files/${name}`;
  const query = new URLSearchParams();
  if (view.attempt && folder) query.set("attempt", folder);
  // No token in the address: fileLink sends it.
  return query.toString() ? `${base}?${query}` : base;
}

// -- human gates -----------------------------------------------------------------

async function loadQuestions() {
  const { questions } = await api(`/pipelines/${encodeURIComponent(view.id)}/questions`);
  showQuestions(questions);
}

function showQuestions(questions) {
  const box = $("question");
  const q = questions[0];
  box.hidden = !q;
  if (!q) { box.dataset.qid = ""; return; }
  if (box.dataset.qid === q.id) return;
  box.dataset.qid = q.id;
  $("question-text").textContent = `${q.stage}: ${q.text}`;
  showMaterial(q.review || "", q.diff);
  const options = q.options.length ? q.options
    : q.type === "freeform" ? [] : [{ key: "yes", label: "Yes" }, { key: "no", label: "No" }];
  view.question = q;
  showDeadline();
  const fieldset = $("question-options");
  fieldset.replaceChildren(el("legend", { class: "sr-only", text: "Choices" }));
  if (!options.length) {
    fieldset.append(el("input", { name: "choice", id: "answer-text", "aria-label": "Answer" }));
  }
  const preset = options.some((o) => o.key === q.default) ? q.default : options[0] && options[0].key;
  options.forEach((o, i) => {
    const input = el("input", { type: "radio", name: "choice", value: o.key, id: `choice-${i}` });
    if (o.key === preset) input.checked = true;
    const label = el("label", { for: `choice-${i}` }, input, ` [${o.key}] ${o.label}`);
    if (o.key === q.default) label.append(el("span", { class: "default-mark", text: " (default)" }));
    fieldset.append(label);
  });
  $("answer-comment").value = "";
  (fieldset.querySelector("input:checked") || fieldset.querySelector("input"))?.focus();
}

// The material of the gate: "response of NODE:\n..." or "FILE:\n..." as the engine
// gives it (the first line says what it is), and what the stage before the gate
// changed in the run's workspace (its diff), when it changed files.
function showMaterial(review, diff) {
  const box = $("question-material");
  box.hidden = !review.trim();
  const newline = review.indexOf("\n");
  const head = newline > 0 ? review.slice(0, newline).replace(/:$/, "") : "";
  $("question-material-title").textContent = head ? `To review: ${head}` : "To review";
  $("question-review").textContent = newline > 0 ? review.slice(newline + 1) : review;
  const slot = $("question-diff");
  slot.hidden = !(diff && diff.diff);
  slot.replaceChildren(...(slot.hidden ? [] : [diffBlock(diff, `Changes of ${diff.node}`)]));
}

// A stage's diff as an open block: "TITLE (2 files changed, ...)" over the patch.
function diffBlock(data, title) {
  const summary = data.stat.trim().split("\n").pop();
  const cut = data.truncated ? el("p", { class: "cut", text: "The diff is cut here: attractor diff shows it whole." }) : "";
  return el("details", { class: "changes", open: "" },
    el("summary", { text: summary ? `${title} (${summary.trim()})` : title }),
    el("pre", { class: "diff" }, ...data.diff.split("\n").map(diffLine)), cut);
}

// One line of a unified diff, coloured by what it is (added, removed, a hunk, a file).
function diffLine(line) {
  const kind = /^(\+\+\+|---|diff |index )/.test(line) ? "file" : line.startsWith("+") ? "add"
    : line.startsWith("-") ? "del" : line.startsWith("@@") ? "hunk" : "same";
  return el("span", { class: `d-${kind}`, text: `${line}\n` });
}

// When a gate with a timeout takes its default (or times out), counted down.
function showDeadline() {
  const q = view.question;
  const line = $("question-deadline");
  if (!q || !q.deadline || $("question").hidden) { line.hidden = true; return; }
  line.hidden = false;
  const left = Math.max(0, q.deadline - Date.now() / 1000);
  const when = new Date(q.deadline * 1000).toLocaleTimeString();
  const option = (q.options || []).find((o) => o.key === q.default);
  const then = q.default ? `the gate takes [${q.default}]${option ? ` ${option.label}` : ""}`
    : "the gate times out";
  line.textContent = `Answer by ${when} (${seconds(left)} left); after that ${then}.`;
}

$("answer-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const qid = $("question").dataset.qid;
  const picked = document.querySelector("#question-options input[name=choice]:checked")
    || $("answer-text");
  try {
    await api(`/pipelines/${encodeURIComponent(view.id)}/questions/${qid}/answer`, {
      method: "POST",
      body: JSON.stringify({
        answer: picked ? picked.value : "", comment: $("answer-comment").value, answered_by: "page",
      }),
    });
    $("question").hidden = true;
  } catch (error) {
    $("run-error").textContent = error.message;
  }
});

// -- controls and the event stream ------------------------------------------------

$("cancel-btn").addEventListener("click", async () => {
  try { await api(`/pipelines/${encodeURIComponent(view.id)}/cancel`, { method: "POST" }); }
  catch (error) { $("run-error").textContent = error.message; }
});

// Resume (as `attractor resume`), retry the failed node (--retry-failed) or go
// back to a node (--from NODE): the same run directory goes on.
async function resume(how) {
  try {
    const { id } = await api(`/pipelines/${encodeURIComponent(view.id)}/resume`,
                             { method: "POST", body: JSON.stringify(how) });
    if (id !== view.id) location.hash = `#/run/${encodeURIComponent(id)}`;
    else await showRun(id);
  } catch (error) { $("run-error").textContent = error.message; }
}

$("resume-btn").addEventListener("click", () => resume({}));
$("failure-retry").addEventListener("click", () => resume({ retry_failed: true }));
$("failure-from").addEventListener("click", (event) => resume({ from: event.target.dataset.node }));
$("retry-btn").addEventListener("click", () => resume({ retry_failed: true }));
$("from-form").addEventListener("submit", (event) => {
  event.preventDefault();
  resume({ from: $("from-node").value });
});

function openStream() {
  // EventSource cannot set headers: the token goes in the query.
  const source = new EventSource(withToken(`/pipelines/${encodeURIComponent(view.id)}/events`));
  view.source = source;
  source.onmessage = null;
  const handle = (message) => {
    const id = Number(message.lastEventId);
    if (id <= view.lastId) return; // already seen before a reconnect
    view.lastId = id;
    const event = JSON.parse(message.data);
    logEvent(id, event);
    applyEvent(event);
    if (event.type === "pipeline_started") refreshRun();
    else if (SPENDING.has(event.type)) refreshSoon();
    if (TIMELINE.has(event.type)) timelineSoon();
    if (FINAL.has(event.type)) {
      // A replay holds the final events of earlier attempts too: stop only when
      // the run is really over.
      refreshRun().then(() => {
        if (!view.run.active && view.run.status !== "running") closeStream();
        return loadGraph();
      });
    }
  };
  for (const type of EVENT_TYPES) source.addEventListener(type, handle);
  source.onerror = async () => {
    // The stream ends when nobody drives the run any more: stop reconnecting then.
    const run = await api(`/pipelines/${encodeURIComponent(view.id)}`).catch(() => null);
    if (run && !run.active && run.status !== "running") { closeStream(); view.run = run; showHeader(); }
  };
}

function closeStream() {
  if (view.source) view.source.close();
  view.source = null;
}

// How one event reads in the log (after its type and node).
function eventText(event) {
  if (event.type === "stage_output") return `${event.stream}: ${event.text}`;
  if (event.type === "child_event") {  // a sub-pipeline's step, as NODE/CHILD
    const inner = event.event || {};
    return `${inner.type}: ${event.node}/${inner.name || inner.node || inner.stage || ""}`;
  }
  if (event.type === "checkpoint_saved") return event.phase || "";
  if (event.type === "interview_completed") {
    const by = event.answered_by ? ` by ${event.answered_by}` : "";
    const comment = event.comment ? `: "${event.comment}"` : "";
    const label = event.label && event.label !== event.answer ? ` (${event.label})` : "";
    return `${event.question} → ${event.answer}${label}${by}${comment}`;
  }
  return event.status || event.error || event.question || event.summary || "";
}

function logEvent(id, event) {
  const what = event.name || event.node || event.stage || "";
  const extra = eventText(event).split("\n")[0];
  const log = $("event-log");
  const previous = Number(log.lastElementChild?.value || 0);
  if (previous && id > previous + 1) {
    // Events of a type this page does not know (a newer engine): still numbered.
    log.append(el("li", { value: String(previous + 1), class: "muted",
                          text: `${id - previous - 1} event(s) of other types` }));
  }
  const ts = typeof event.ts === "number" ? new Date(event.ts * 1000) : null;
  const time = ts ? `${ts.toLocaleTimeString("en-GB")}.${String(ts.getMilliseconds()).padStart(3, "0")}` : "";
  log.append(el("li", { value: String(id), "data-type": event.type },
    el("time", { datetime: ts ? ts.toISOString() : "", text: time }),
    ` ${event.type} ${what} ${extra}`.trimEnd()));
  while (log.children.length > 300) log.firstChild.remove();
  log.scrollTop = log.scrollHeight;
}

// -- routing ---------------------------------------------------------------------

function route() {
  const match = location.hash.match(/^#\/run\/(.+)$/);
  clearTimeout(runsView.timer);
  if (match) showRun(decodeURIComponent(match[1]));
  else { closeStream(); clearInterval(view.timer); showRuns(); }
}
window.addEventListener("hashchange", route);
// Every script of the page has run by then (runs.js, costs.js, timeline.js, output.js).
window.addEventListener("DOMContentLoaded", route);
