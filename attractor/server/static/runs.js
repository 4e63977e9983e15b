// The runs list: live, filtered, pruned (loaded after app.js).
"use strict";

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
  if (document.hidden) runsView.delay = 30000; // nobody looks: read again when they do
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

document.addEventListener("visibilitychange", () => {
  if (!document.hidden && !$("runs-view").hidden) { runsView.delay = 2000; loadRuns(); }
});
$("filter-status").addEventListener("change", renderRuns);
$("filter-pipeline").addEventListener("change", renderRuns);
$("prune-btn").addEventListener("click", async () => {
  const ids = [...document.querySelectorAll("#runs-body input:checked")].map((i) => i.value);
  if (!ids.length) return;
  const what = ids.length === 1 ? `run ${ids[0]}` : `${ids.length} runs`;
  if (!confirm(`Delete ${what} and every file of it, with its git worktree and its branch `
               + "attractor/RUN_ID (merge what you want to keep first)? This cannot be undone.")) return;
  await prune({ ids });
});

// Every run that ended before the age picked (runs still going are kept).
$("prune-old-btn").addEventListener("click", async () => {
  const age = $("prune-age");
  const when = age.options[age.selectedIndex].text;
  if (!confirm(`Delete every run that ended more than ${when}, with its files, its git worktree `
               + "and its branch attractor/RUN_ID (merge what you want to keep first)? "
               + "This cannot be undone.")) return;
  await prune({ older_than: age.value });
});

// POST /pipelines/prune: what was deleted, and why any run was kept.
async function prune(body) {
  $("runs-error").textContent = "";
  $("runs-note").textContent = "";
  try {
    const { deleted, kept } = await api("/pipelines/prune", { method: "POST", body: JSON.stringify(body) });
    $("runs-note").textContent = `Deleted ${deleted.length} run${deleted.length === 1 ? "" : "s"}.`;
    const refused = Object.entries(kept);
    if (refused.length) $("runs-error").textContent = refused.map(([id, why]) => `${id}: ${why}`).join("; ");
  } catch (error) {
    $("runs-error").textContent = error.message;
  }
  for (const box of document.querySelectorAll("#runs-body input:checked")) box.checked = false;
  runsView.last = "";
  await loadRuns();
}

