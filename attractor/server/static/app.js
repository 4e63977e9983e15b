// attractor's web page: the runs list and one run's live view. Plain script, no build step.
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
  "unreadable", ...FINAL];
// Events that change the timeline.
const TIMELINE = new Set(["stage_started", "stage_completed", "stage_failed", "stage_retrying",
                          "interview_started", "interview_completed", "interview_timeout",
                          "parallel_branch_started", "parallel_branch_completed"]);
// Events after which what the run spent (or its budgets' use) may have changed.
const SPENDING = new Set(["stage_completed", "stage_failed", "agent_turn_completed"]);
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

// -- runs list -----------------------------------------------------------------

// The list reads the runs again every 2 seconds while one goes on or something
// changed, and backs off (to 30 seconds) while nothing does.
const runsView = { timer: null, delay: 2000, last: "", runs: [] };

async function showRuns() {
  $("runs-view").hidden = false;
  $("run-view").hidden = true;
  runsView.delay = 2000;
  await loadRuns();
}

async function loadRuns() {
  clearTimeout(runsView.timer);
  let changed = false;
  try {
    const { runs } = await api("/pipelines");
    const stamp = JSON.stringify(runs);
    changed = stamp !== runsView.last;
    Object.assign(runsView, { last: stamp, runs });
    if (changed) renderRuns();
    else showDurations();
  } catch (error) {
    $("runs-error").textContent = error.message;
  }
  const live = runsView.runs.some((r) => r.active || r.status === "running");
  runsView.delay = changed || live ? 2000 : Math.min(runsView.delay * 2, 30000);
  if (!$("runs-view").hidden) runsView.timer = setTimeout(loadRuns, runsView.delay);
}

const isOver = (run) => !run.active && run.status !== "running";
const waiting = (run) => (run.questions || []).length > 0;

function renderRuns() {
  const runs = runsView.runs;
  fillFilter($("filter-status"), ["waiting for you", ...new Set(runs.map((r) => r.status))]);
  fillFilter($("filter-pipeline"), [...new Set(runs.map((r) => r.name))]);
  const status = $("filter-status").value, pipeline = $("filter-pipeline").value;
  const shown = runs.filter((r) => (!pipeline || r.name === pipeline)
    && (!status || (status === "waiting for you" ? waiting(r) : r.status === status)));
  const picked = new Set([...document.querySelectorAll("#runs-body input:checked")].map((i) => i.value));
  const body = $("runs-body");
  body.replaceChildren(...shown.map((run) => {
    const started = run.started_at ? new Date(run.started_at * 1000).toLocaleString() : "";
    const pick = el("input", { type: "checkbox", value: run.id, "aria-label": `select ${run.id}` });
    pick.checked = picked.has(run.id);
    pick.disabled = !isOver(run);
    pick.addEventListener("change", showPruneButton);
    return el("tr", { "data-run": run.id, "data-status": run.status },
      el("td", {}, pick),
      el("td", {}, el("a", { href: `#/run/${encodeURIComponent(run.id)}`, text: run.id })),
      el("td", { text: run.name }),
      el("td", {}, el("span", { class: `badge s-${run.status}`, text: run.status }),
         waiting(run) ? el("span", { class: "badge waiting", text: "waiting for you" }) : ""),
      el("td", { class: "reason", text: run.failure_reason || run.error || "",
                 title: run.failure_reason || run.error || "" }),
      el("td", { text: started }),
      el("td", { class: "duration" }),
      el("td", { class: "cost", text: usageText(run.usage) }));
  }));
  $("runs-empty").hidden = runs.length > 0;
  showDurations();
  showPruneButton();
}

function showDurations() {
  for (const row of document.querySelectorAll("#runs-body tr")) {
    const run = runsView.runs.find((r) => r.id === row.dataset.run);
    if (!run) continue;
    const going = !isOver(run) && run.started_at;
    const value = going ? Date.now() / 1000 - run.started_at : run.duration;
    row.querySelector("td.duration").textContent = seconds(value);
  }
}

function fillFilter(select, values) {
  const keep = select.value;
  const known = [...select.options].slice(1).map((o) => o.value);
  if (known.join("\n") === values.join("\n")) return;
  select.replaceChildren(select.options[0], ...values.map((v) => el("option", { value: v, text: v })));
  select.value = values.includes(keep) ? keep : "";
}

function showPruneButton() {
  const count = document.querySelectorAll("#runs-body input:checked").length;
  $("prune-btn").disabled = count === 0;
  $("prune-btn").textContent = count ? `Delete ${count} selected run${count > 1 ? "s" : ""}` : "Delete selected runs";
}

$("filter-status").addEventListener("change", renderRuns);
$("filter-pipeline").addEventListener("change", renderRuns);
$("prune-btn").addEventListener("click", async () => {
  const ids = [...document.querySelectorAll("#runs-body input:checked")].map((i) => i.value);
  if (!ids.length) return;
  const what = ids.length === 1 ? `run ${ids[0]}` : `${ids.length} runs`;
  if (!confirm(`Delete ${what} and every file of it? This cannot be undone.`)) return;
  $("runs-error").textContent = "";
  try {
    const { kept } = await api("/pipelines/prune", { method: "POST", body: JSON.stringify({ ids }) });
    const refused = Object.entries(kept);
    if (refused.length) $("runs-error").textContent = refused.map(([id, why]) => `${id}: ${why}`).join("; ");
  } catch (error) {
    $("runs-error").textContent = error.message;
  }
  for (const box of document.querySelectorAll("#runs-body input:checked")) box.checked = false;
  runsView.last = "";
  await loadRuns();
});

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
                        output: {} });
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
  if (!view.startedAt) return;
  if (!view.finishedAt && (view.run.budgets || []).some((b) => b.name === "time" && b.limit != null)) {
    showBudgets(view.run.budgets);
  }
  const end = view.finishedAt || Date.now() / 1000;
  $("run-elapsed").textContent = `elapsed ${seconds(Math.max(0, end - view.startedAt))}`;
}

// What the run spent: each node, each parallel branch and the run (the manifest's
// total); a row "other" holds what no node's summary row counts (a node cut short).
function showSpending() {
  const run = view.run;
  const spentAny = (u) => u && (u.input_tokens || u.output_tokens || u.cost);
  $("run-usage").textContent = spentAny(run.usage) ? `spent ${usageText(run.usage)}` : "";
  const rows = [];
  let summed = null;
  for (const id of view.order) {
    const u = run.nodes[id] && run.nodes[id].usage;
    if (!u) continue;
    summed = addUsage(summed, u);
    rows.push(costRow("node", id, u));
  }
  for (const b of run.branches || []) {
    if (b.usage) rows.push(costRow("branch", `${b.parallel} → ${b.branch}`, b.usage));
  }
  if (run.usage && summed) {
    const other = {};
    for (const key of ["input_tokens", "output_tokens", "cache_read_tokens"]) {
      other[key] = (run.usage[key] || 0) - (summed[key] || 0);
    }
    if (run.usage.cost != null) other.cost = run.usage.cost - (summed.cost || 0);
    if (other.input_tokens || other.output_tokens || other.cost > 1e-9) {
      rows.push(costRow("other", "not in a node's row", other));
    }
  }
  if (spentAny(run.usage)) rows.push(costRow("run", "total", run.usage));
  $("costs").hidden = !rows.length;
  $("costs-body").replaceChildren(...rows);
  showBudgets(run.budgets || []);
}

function addUsage(total, u) {
  const sum = { ...(total || {}) };
  for (const key of ["input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"]) {
    sum[key] = (sum[key] || 0) + (u[key] || 0);
  }
  if (u.cost != null) sum.cost = (sum.cost || 0) + u.cost;
  return sum;
}

function costRow(kind, name, u) {
  const n = (v) => (v || 0).toLocaleString("en-US");
  return el("tr", { class: `cost-${kind}`, "data-kind": kind, "data-name": name },
    el("th", { scope: "row", text: kind === "node" ? name : `${kind}: ${name}` }),
    el("td", { class: "num", text: n(u.input_tokens) }),
    el("td", { class: "num", text: n(u.output_tokens) }),
    el("td", { class: "num", text: n(u.cache_read_tokens) }),
    el("td", { class: "num", text: u.cost != null ? dollars(u.cost) : "" }));
}

// Each budget the run has, as a bar that fills as the run spends it.
function showBudgets(budgets) {
  const shown = budgets.filter((b) => b.limit != null);
  const list = $("budgets");
  list.hidden = !shown.length;
  list.replaceChildren(...shown.map((b) => {
    const used = b.name === "time" && view.startedAt && !view.finishedAt
      ? Date.now() / 1000 - view.startedAt : b.used || 0;
    const share = Math.min(1, used / b.limit);
    const text = b.name === "cost" ? `${dollars(used)} of ${dollars(b.limit)}`
      : b.name === "time" ? `${seconds(used)} of ${seconds(b.limit)}`
      : `${Math.round(used).toLocaleString("en-US")} of ${b.limit.toLocaleString("en-US")}`;
    return el("li", { "data-budget": b.name },
      el("span", { class: "budget-name", text: b.name }),
      el("span", { class: `bar${share >= 0.9 ? " near" : ""}`, role: "meter",
                   "aria-label": `${b.name} budget`, "aria-valuemin": "0",
                   "aria-valuemax": String(b.limit), "aria-valuenow": String(used) },
         el("span", { class: "fill", style: `width: ${(share * 100).toFixed(1)}%` })),
      el("span", { class: "muted", text }));
  }));
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
      Object.assign(n, { state: "running", turn: "", tool: "", attempts: event.attempt || 1 });
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
  list.replaceChildren(...ids.map((id) => {
    const n = view.nodes[id];
    const spent = n.usage ? (n.usage.cost != null ? dollars(n.usage.cost)
      : `${((n.usage.input_tokens || 0) + (n.usage.output_tokens || 0)).toLocaleString("en-US")} tok`) : "";
    const info = [n.turn, n.tool, n.visits > 1 ? `x${n.visits}` : "", n.duration ? seconds(n.duration) : "",
                  spent].filter(Boolean).join(" · ");
    return el("li", {}, el("button", { type: "button", "data-node": id, "data-state": n.state,
                                        onclick: () => selectNode(id) },
      el("span", { class: "dot", style: `background: var(--${n.state})` }),
      el("span", { text: id }), el("span", { class: "muted", text: n.state }),
      el("span", { class: "info", text: info })));
  }));
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
const PANEL_SECTIONS = [panelFacts, panelRequests, panelAttempts, panelOutput, panelFiles];

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
                 ["now", [n.turn, n.tool].filter(Boolean).join(" · ")]];
  return el("dl", { id: "node-facts" }, ...facts.filter(([, v]) => v !== "" && v != null)
    .flatMap(([k, v]) => [el("dt", { text: k }), el("dd", { text: String(v) })]));
}

// Each model request of the node (an agent turn) with its tokens.
function panelRequests(data) {
  const turns = data.requests || [];
  if (!turns.length) return null;
  const n = (v) => (v || 0).toLocaleString("en-US");
  return el("details", { id: "node-requests" },
    el("summary", { text: `requests (${turns.length})` }),
    el("table", { class: "costs" },
      el("thead", {}, el("tr", {}, ...["visit", "turn", "in", "out"].map((h) => el("th", { text: h })))),
      el("tbody", {}, ...turns.map((t) => el("tr", {},
        el("td", { text: String(t.visit) }), el("td", { text: `${t.turn} ${t.kind}` }),
        el("td", { class: "num", text: n(t.input_tokens) }),
        el("td", { class: "num", text: n(t.output_tokens) }))))));
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

function panelFiles(data) {
  const files = Object.entries(data.files);
  if (data.prompt && !data.files["prompt.md"]) files.unshift(["prompt (graph)", data.prompt]);
  return el("div", { id: "node-files", "data-folder": data.files_of || "" }, ...files.map(([name, text]) =>
    el("details", name === "answer.json" || name === "status.json" ? { open: "" } : {},
       el("summary", { text: name }),
       // A tail cut from a longer file starts with "…": the whole file is a link away.
       text.startsWith("…") ? el("p", { class: "cut" }, "Only the end is shown: ",
         el("a", { href: fileUrl(data.node.id, name, data.files_of), target: "_blank", text: `whole ${name}` }))
         : "",
       el("pre", { text }))));
}

// The address of a stage file served whole (of the attempt shown, if one was picked).
function fileUrl(node, name, folder) {
  const base = `/pipelines/${encodeURIComponent(view.id)}/nodes/${encodeURIComponent(node)}/files/${name}`;
  const query = new URLSearchParams();
  if (view.attempt && folder) query.set("attempt", folder);
  // No token in the address: the cookie the server set carries it.
  return query.toString() ? `${base}?${query}` : base;
}

// -- live step output ----------------------------------------------------------------

// A node's output lines (stage_output events, and the agent's tool calls) of its
// latest visit, kept to the last OUTPUT_LINES; the rest is in the files.
const OUTPUT_LINES = 500;

function outputOf(node) {
  return (view.output[node] ||= { visit: 0, attempt: 1, lines: [], dropped: 0, ansi: {} });
}

// A later visit or attempt of the node starts its output afresh; lines of an
// earlier one (arriving late) are left out.
function startOutput(node, visit, attempt) {
  const out = outputOf(node);
  const later = visit > out.visit || (visit === out.visit && attempt > out.attempt);
  if (later) Object.assign(out, { visit, attempt, lines: [], dropped: 0, ansi: {} });
  return later || (visit === out.visit && attempt === out.attempt);
}

function addOutput(node, visit, stream, text, attempt = outputOf(node).attempt) {
  const out = outputOf(node);
  if (!startOutput(node, visit, attempt)) return;
  const added = [];
  for (const raw of text.replace(/\n$/, "").split("\n")) {
    const line = { stream, nodes: ansiSpans(lastOverwrite(raw), (out.ansi[stream] ||= {})) };
    out.lines.push(line);
    added.push(line);
  }
  const extra = out.lines.length - OUTPUT_LINES;
  if (extra > 0) { out.lines.splice(0, extra); out.dropped += extra; }
  if (view.selected === node && !view.attempt) showOutputLines(node, added, extra > 0);
}

// What a terminal shows of a line a progress bar rewrote with carriage returns.
function lastOverwrite(line) {
  const trimmed = line.replace(/\r+$/, "");
  return trimmed.slice(trimmed.lastIndexOf("\r") + 1);
}

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

function fillOutput(box, node) {
  const out = view.output[node];
  const cut = box.querySelector("#node-output-cut");
  cut.hidden = !out.dropped;
  cut.replaceChildren(`${out.dropped.toLocaleString("en-US")} earlier lines not shown; whole files: `,
    el("a", { href: fileUrl(node, "stdout.txt"), target: "_blank", text: "stdout.txt" }), " ",
    el("a", { href: fileUrl(node, "stderr.txt"), target: "_blank", text: "stderr.txt" }));
  box.querySelector("pre").replaceChildren(...out.lines.map(lineElement));
}

function lineElement(line) {
  return el("span", { class: `line ${line.stream}` }, ...line.nodes.map((n) => n.cloneNode(true)));
}

function showOutputLines(node, added, trimmed) {
  const box = $("node-output");
  if (!box) { selectNode(node); return; } // the first lines: the section appears
  const pre = box.querySelector("pre");
  const atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
  if (trimmed) fillOutput(box, node);
  else pre.append(...added.map(lineElement));
  if (atEnd) pre.scrollTop = pre.scrollHeight;
}

// ANSI colours: SGR sequences (ESC [ ... m) become styled spans; every other
// escape sequence (cursor moves, titles) is taken out. ``state`` carries the
// style from one line to the next, as a terminal does.
const ESCAPES = /\x1b\[([0-9;]*)m|\x1b\[[0-9;?]*[ -\/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-_]/g;
const PALETTE = ["#000000", "#cd3131", "#0dbc79", "#e5e510", "#2472c8", "#bc3fbc", "#11a8cd", "#e5e5e5",
                 "#666666", "#f14c4c", "#23d18b", "#f5f543", "#3b8eea", "#d670d6", "#29b8db", "#ffffff"];

function ansiSpans(text, state) {
  const nodes = [];
  let last = 0;
  for (const m of text.matchAll(ESCAPES)) {
    if (m.index > last) nodes.push(styled(text.slice(last, m.index), state));
    if (m[1] !== undefined) applySgr(m[1], state);
    last = m.index + m[0].length;
  }
  if (last < text.length) nodes.push(styled(text.slice(last), state));
  nodes.push(document.createTextNode("\n"));
  return nodes;
}

function styled(text, state) {
  const clean = text.replace(/[\x00-\x08\x0b-\x1f\x7f]/g, "");
  if (!state.fg && !state.bg && !state.bold && !state.dim && !state.italic && !state.underline) {
    return document.createTextNode(clean);
  }
  const css = [state.fg && `color: ${state.fg}`, state.bg && `background: ${state.bg}`,
               state.bold && "font-weight: 700", state.dim && "opacity: .7",
               state.italic && "font-style: italic", state.underline && "text-decoration: underline"];
  return el("span", { class: "ansi", style: css.filter(Boolean).join("; "), text: clean });
}

function colour256(n) {
  if (n < 16) return PALETTE[n];
  if (n >= 232) { const v = 8 + (n - 232) * 10; return `rgb(${v}, ${v}, ${v})`; }
  const c = n - 16, step = (v) => (v ? 55 + v * 40 : 0);
  return `rgb(${step(Math.floor(c / 36))}, ${step(Math.floor(c / 6) % 6)}, ${step(c % 6)})`;
}

function applySgr(params, state) {
  const codes = params === "" ? [0] : params.split(";").map(Number);
  for (let i = 0; i < codes.length; i++) {
    const c = codes[i];
    if (c === 0) { for (const k of Object.keys(state)) delete state[k]; }
    else if (c === 1) state.bold = true;
    else if (c === 2) state.dim = true;
    else if (c === 3) state.italic = true;
    else if (c === 4) state.underline = true;
    else if (c === 22) { state.bold = false; state.dim = false; }
    else if (c === 23) state.italic = false;
    else if (c === 24) state.underline = false;
    else if (c >= 30 && c <= 37) state.fg = PALETTE[c - 30];
    else if (c >= 90 && c <= 97) state.fg = PALETTE[c - 90 + 8];
    else if (c >= 40 && c <= 47) state.bg = PALETTE[c - 40];
    else if (c >= 100 && c <= 107) state.bg = PALETTE[c - 100 + 8];
    else if (c === 39) delete state.fg;
    else if (c === 49) delete state.bg;
    else if ((c === 38 || c === 48) && codes[i + 1] === 5) {
      state[c === 38 ? "fg" : "bg"] = colour256(codes[i + 2] || 0);
      i += 2;
    } else if ((c === 38 || c === 48) && codes[i + 1] === 2) {
      state[c === 38 ? "fg" : "bg"] = `rgb(${codes[i + 2] || 0}, ${codes[i + 3] || 0}, ${codes[i + 4] || 0})`;
      i += 4;
    }
  }
}

// -- timeline ---------------------------------------------------------------------

// A Gantt of the run: a lane per node (a bar per attempt of each visit, retries
// included, the waits at gates hatched over the gate's bar) and one per
// parallel branch, on one time axis.
function showTab(name) {
  const timeline = name === "timeline";
  $("tab-graph").setAttribute("aria-selected", String(!timeline));
  $("tab-timeline").setAttribute("aria-selected", String(timeline));
  $("graph-view").hidden = timeline;
  $("timeline").hidden = !timeline;
  if (timeline) loadTimeline();
}

$("tab-graph").addEventListener("click", () => showTab("graph"));
$("tab-timeline").addEventListener("click", () => showTab("timeline"));

async function loadTimeline() {
  if ($("timeline").hidden) return;
  const data = await api(`/pipelines/${encodeURIComponent(view.id)}/timeline`);
  renderTimeline(data);
}

function renderTimeline(data) {
  const now = data.status === "running" ? data.now : null;
  const attempts = data.attempts.filter((a) => a.started != null);
  const endOf = (a) => a.started + (a.duration != null ? a.duration : Math.max(0, (now || a.started) - a.started));
  const times = [...attempts.flatMap((a) => [a.started, endOf(a)]),
                 ...data.waits.flatMap((w) => [w.start, w.end || now]),
                 ...data.branches.flatMap((b) => [b.start, b.end || now])].filter((t) => t != null);
  const box = $("timeline");
  if (!times.length) { box.replaceChildren(el("p", { class: "muted", text: "Nothing has run yet." })); return; }
  const t0 = Math.min(...times), span = Math.max(Math.max(...times) - t0, 0.001);
  const at = (t) => `${(((t - t0) / span) * 100).toFixed(3)}%`;
  const width = (a, b) => `max(3px, ${(((b - a) / span) * 100).toFixed(3)}%)`;
  const lanes = new Map();
  const lane = (key, label, kind) => {
    if (!lanes.has(key)) lanes.set(key, { label, kind, bars: [] });
    return lanes.get(key);
  };
  for (const a of attempts) {
    const state = stateOf(a.status);
    const label = `v${a.visit}${a.attempt > 1 ? ` a${a.attempt}` : ""}`;
    const title = `${a.node} visit ${a.visit} attempt ${a.attempt}: ${a.status}, ${seconds(endOf(a) - a.started)}`
      + (a.note ? ` - ${a.note}` : "");
    lane(a.node, a.node, "node").bars.push(el("button", {
      type: "button", class: `bar s-${state}`, title, "aria-label": title,
      "data-node": a.node, "data-visit": String(a.visit), "data-attempt": String(a.attempt),
      "data-start": String(a.started), "data-duration": String(endOf(a) - a.started),
      style: `left: ${at(a.started)}; width: ${width(a.started, endOf(a))}`,
      onclick: () => selectNode(a.node, a.files) }, label));
    for (const b of data.branches.filter((b) => b.parallel === a.node && a.visit === 1 && a.attempt === 1)) {
      lane(`${b.parallel}/${b.branch}`, `${b.parallel} → ${b.branch}`, "branch");
    }
  }
  for (const w of data.waits) {
    const end = w.end || now || w.start;
    lane(w.node, w.node, "node").bars.push(el("span", {
      class: "wait", "data-node": w.node, title: `waiting for an answer: ${seconds(end - w.start)}`
        + (w.answer ? ` (answered ${w.answer})` : ""),
      style: `left: ${at(w.start)}; width: ${width(w.start, end)}` }));
  }
  for (const b of data.branches) {
    const end = b.end || now || b.start;
    lane(`${b.parallel}/${b.branch}`, `${b.parallel} → ${b.branch}`, "branch").bars.push(el("span", {
      class: `bar branch s-${b.status}`, "data-branch": b.branch, title: `branch ${b.branch}: ${b.status}`,
      style: `left: ${at(b.start)}; width: ${width(b.start, end)}` }));
  }
  const ticks = [0, 0.25, 0.5, 0.75, 1].map((f) =>
    el("span", { class: "tick", style: `left: ${f * 100}%`, text: seconds(f * span) }));
  box.replaceChildren(
    el("div", { class: "lane axis" }, el("span", { class: "lane-label" }), el("div", { class: "track" }, ...ticks)),
    ...[...lanes.values()].map((l) => el("div", { class: `lane ${l.kind}` },
      el("span", { class: "lane-label", text: l.label, title: l.label }),
      el("div", { class: "track" }, ...l.bars))));
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
  showMaterial(q.review || "");
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
// gives it (the first line says what it is).
function showMaterial(review) {
  const box = $("question-material");
  box.hidden = !review.trim();
  const newline = review.indexOf("\n");
  const head = newline > 0 ? review.slice(0, newline).replace(/:$/, "") : "";
  $("question-material-title").textContent = head ? `To review: ${head}` : "To review";
  $("question-review").textContent = newline > 0 ? review.slice(newline + 1) : review;
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
$("failure-retry").addEventListener("click", () => resume({ retry_failed: true }));
$("failure-from").addEventListener("click", (event) => resume({ from: event.target.dataset.node }));
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
  if (event.type === "checkpoint_saved") return event.phase || "";
  if (event.type === "interview_completed") {
    const by = event.answered_by ? ` by ${event.answered_by}` : "";
    const comment = event.comment ? `: "${event.comment}"` : "";
    return `${event.question} → ${event.answer}${by}${comment}`;
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
route();
