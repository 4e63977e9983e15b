// attractor's web page: the runs list and one run's live view. Plain script, no build step.
"use strict";

const STATES = ["pending", "running", "success", "partial", "fail", "skipped", "retry", "stopped"];
const FINAL = new Set(["pipeline_completed", "pipeline_failed", "pipeline_timed_out",
                       "pipeline_interrupted"]);
const $ = (id) => document.getElementById(id);
// Runs that stopped before their end: a plain resume goes on where they stopped.
const RESUMABLE = new Set(["interrupted", "timed_out", "terminated", "hangup", "stopped"]);

// The access token: opened as /?token=..., the page keeps it in memory and sends
// it on every request (the server also set an HttpOnly cookie, which a reload
// carries), and takes it out of the address bar so it is not shared by accident.
const TOKEN = new URLSearchParams(location.search).get("token");
if (TOKEN) history.replaceState(null, "", location.pathname + location.hash);
const authHeaders = TOKEN ? { Authorization: `Bearer ${TOKEN}` } : {};
const withToken = (url) => (TOKEN ? `${url}?token=${encodeURIComponent(TOKEN)}` : url);

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
  const m = Math.floor(value / 60), s = Math.round(value % 60);
  return m < 60 ? `${m}m${String(s).padStart(2, "0")}s` : `${Math.floor(m / 60)}h${m % 60}m`;
}

function stateColour(state) {
  return getComputedStyle(document.documentElement).getPropertyValue(`--${state}`).trim();
}

// -- runs list -----------------------------------------------------------------

async function showRuns() {
  $("runs-view").hidden = false;
  $("run-view").hidden = true;
  const { runs } = await api("/pipelines");
  const body = $("runs-body");
  body.replaceChildren();
  for (const run of runs) {
    const started = run.started_at ? new Date(run.started_at * 1000).toLocaleString() : "";
    body.append(el("tr", {},
      el("td", {}, el("a", { href: `#/run/${encodeURIComponent(run.id)}`, text: run.id })),
      el("td", { text: run.name }),
      el("td", {}, el("span", { class: `badge s-${run.status}`, text: run.status })),
      el("td", { text: started }),
      el("td", { text: seconds(run.duration) })));
  }
  $("runs-empty").hidden = runs.length > 0;
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

const view = { id: null, source: null, lastId: 0, nodes: {}, run: null, selected: null,
               timer: null, startedAt: null, finishedAt: null, order: [] };

async function showRun(id) {
  closeStream();
  Object.assign(view, { id, lastId: 0, nodes: {}, run: null, selected: null, order: [] });
  $("runs-view").hidden = true;
  $("run-view").hidden = false;
  $("run-title").textContent = id;
  $("event-log").replaceChildren();
  $("node-panel").hidden = true;
  $("run-error").textContent = "";
  buildLegend();
  await refreshRun();
  await loadGraph();
  openStream();
  clearInterval(view.timer);
  view.timer = setInterval(showElapsed, 1000);
}

async function refreshRun() {
  const run = await api(`/pipelines/${encodeURIComponent(view.id)}`);
  view.run = run;
  view.nodes = run.nodes;
  view.order = Object.keys(run.nodes);
  view.startedAt = run.started_at;
  view.finishedAt = run.status === "running" ? null : run.finished_at;
  showHeader();
  renderNodeList();
  showQuestions(run.questions || []);
  // Why a run failed (or the error it died of here), else nothing.
  const why = run.error || (run.status === "fail" ? run.failure_reason : "");
  if (why) $("run-error").textContent = why;
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
  if (!view.startedAt) return;
  const end = view.finishedAt || Date.now() / 1000;
  $("run-elapsed").textContent = `elapsed ${seconds(Math.max(0, end - view.startedAt))}`;
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
    case "stage_started": {
      const n = node(event.name);
      Object.assign(n, { state: "running", turn: "", tool: "", attempts: event.attempt || 1 });
      // The visit the engine numbered (a resume or a go-back goes on counting
      // from the run's own numbers); counted from first attempts for older events.
      if (Number.isInteger(event.visit)) n.visits = Math.max(n.visits, event.visit);
      else if ((event.attempt || 1) === 1) n.visits += 1;
      paintNode(n.id);
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
    case "agent_turn_started":
      node(event.node).turn = `turn ${event.turn}/${event.max_turns}`;
      paintNode(event.node);
      break;
    case "tool_call_started":
      node(event.node).tool = `${event.tool}: ${event.summary || ""}`;
      paintNode(event.node);
      break;
    case "tool_call_completed":
      node(event.node).tool = "";
      paintNode(event.node);
      break;
    case "interview_started": case "interview_completed": case "interview_timeout":
      loadQuestions();
      break;
  }
  if (view.selected && [event.name, event.node, event.stage].includes(view.selected)) {
    selectNode(view.selected);
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
  list.replaceChildren(...ids.map((id) => {
    const n = view.nodes[id];
    const info = [n.turn, n.tool, n.visits > 1 ? `x${n.visits}` : "", n.duration ? seconds(n.duration) : ""]
      .filter(Boolean).join(" · ");
    return el("li", {}, el("button", { type: "button", "data-node": id, "data-state": n.state,
                                        onclick: () => selectNode(id) },
      el("span", { class: "dot", style: `background: var(--${n.state})` }),
      el("span", { text: id }), el("span", { class: "muted", text: n.state }),
      el("span", { class: "info", text: info })));
  }));
}

async function selectNode(id) {
  view.selected = id;
  for (const g of document.querySelectorAll("#graph g.node")) {
    g.classList.toggle("selected", g.id === `node-${id}`);
  }
  const data = await api(`/pipelines/${encodeURIComponent(view.id)}/nodes/${encodeURIComponent(id)}`);
  if (view.selected !== id) return;
  $("node-panel").hidden = false;
  $("node-title").textContent = data.label && data.label !== id ? `${id} - ${data.label}` : id;
  const n = data.node;
  const facts = [["type", data.handler], ["state", n.state], ["visits", n.visits],
                 ["time", seconds(n.duration)], ["chose", n.preferred_label], ["notes", n.notes],
                 ["error", n.error], ["now", [n.turn, n.tool].filter(Boolean).join(" · ")]];
  $("node-facts").replaceChildren(...facts.filter(([, v]) => v !== "" && v != null)
    .flatMap(([k, v]) => [el("dt", { text: k }), el("dd", { text: String(v) })]));
  const files = Object.entries(data.files);
  if (data.prompt && !data.files["prompt.md"]) files.unshift(["prompt (graph)", data.prompt]);
  $("node-files").replaceChildren(...files.map(([name, text]) =>
    el("details", name === "answer.json" || name === "status.json" ? { open: "" } : {},
       el("summary", { text: name }), el("pre", { text }))));
  showNodeDiff(id);
}

// The files the stage changed (its workspace checkpoint); nothing when the run keeps none.
async function showNodeDiff(id) {
  let data;
  try {
    data = await api(`/pipelines/${encodeURIComponent(view.id)}/nodes/${encodeURIComponent(id)}/diff`);
  } catch (error) {
    return;
  }
  if (view.selected !== id || !data.diff) return;
  $("node-files").append(el("details", { open: "" },
    el("summary", { text: `changes (${data.stat.trim().split("\n").pop()})` }),
    el("pre", { class: "diff", text: data.diff })));
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
  const options = q.options.length ? q.options
    : q.type === "freeform" ? [] : [{ key: "yes", label: "Yes" }, { key: "no", label: "No" }];
  const fieldset = $("question-options");
  fieldset.replaceChildren(el("legend", { class: "sr-only", text: "Choices" }));
  if (!options.length) {
    fieldset.append(el("input", { name: "choice", id: "answer-text", "aria-label": "Answer" }));
  }
  options.forEach((o, i) => {
    const input = el("input", { type: "radio", name: "choice", value: o.key, id: `choice-${i}` });
    if (i === 0) input.checked = true;
    fieldset.append(el("label", { for: `choice-${i}` }, input, ` [${o.key}] ${o.label}`));
  });
  $("answer-comment").value = "";
  fieldset.querySelector("input")?.focus();
}

$("answer-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const qid = $("question").dataset.qid;
  const picked = document.querySelector("#question-options input[name=choice]:checked")
    || $("answer-text");
  try {
    await api(`/pipelines/${encodeURIComponent(view.id)}/questions/${qid}/answer`, {
      method: "POST",
      body: JSON.stringify({ answer: picked ? picked.value : "", comment: $("answer-comment").value }),
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
$("retry-btn").addEventListener("click", () => resume({ retry_failed: true }));
$("from-form").addEventListener("submit", (event) => {
  event.preventDefault();
  resume({ from: $("from-node").value });
});

function openStream() {
  // EventSource cannot set headers: the token goes in the query (and the cookie).
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
    if (FINAL.has(event.type)) {
      // A replay holds the final events of earlier attempts too: stop only when
      // the run is really over.
      refreshRun().then(() => {
        if (!view.run.active && view.run.status !== "running") closeStream();
        return loadGraph();
      });
    }
  };
  for (const type of ["pipeline_started", "stage_started", "stage_completed", "stage_failed",
                      "stage_retrying", "agent_turn_started", "tool_call_started",
                      "tool_call_completed", "interview_started", "interview_completed",
                      "interview_timeout", "parallel_started", "parallel_completed",
                      "agent_warning", "turn_limit_reached", ...FINAL]) {
    source.addEventListener(type, handle);
  }
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

function logEvent(id, event) {
  const what = event.name || event.node || event.stage || "";
  const extra = event.status || event.error || event.question || event.summary || "";
  const log = $("event-log");
  log.append(el("li", { value: String(id), text: `${event.type} ${what} ${extra}`.trim() }));
  while (log.children.length > 300) log.firstChild.remove();
  log.scrollTop = log.scrollHeight;
}

// -- routing ---------------------------------------------------------------------

function route() {
  const match = location.hash.match(/^#\/run\/(.+)$/);
  if (match) showRun(decodeURIComponent(match[1]));
  else { closeStream(); clearInterval(view.timer); showRuns(); }
}
window.addEventListener("hashchange", route);
route();
