// What a run spent and its budgets (loaded after app.js).
"use strict";

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

