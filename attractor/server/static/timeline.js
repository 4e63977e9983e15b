// The Timeline tab: the run as a Gantt chart (loaded after app.js).
"use strict";

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
  view.timeline = { data, read: Date.now() / 1000 };
  renderTimeline(data);
}

// While the run goes on, the bars of what is running grow each second (drawn
// again from the last answer, the server's clock moved on by as much as ours).
function tickTimeline() {
  const last = view.timeline;
  if (!last || $("timeline").hidden || last.data.status !== "running") return;
  renderTimeline(last.data, last.data.now + (Date.now() / 1000 - last.read));
}

function renderTimeline(data, clock = data.now) {
  const now = data.status === "running" ? clock : null;
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

