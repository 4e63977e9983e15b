// A running step's output in the node panel, ANSI colours rendered (loaded after app.js).
"use strict";

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

function fillOutput(box, node) {
  const out = view.output[node];
  const cut = box.querySelector("#node-output-cut");
  cut.hidden = !out.dropped;
  cut.replaceChildren(`${out.dropped.toLocaleString("en-US")} earlier lines not shown; whole files: `,
    fileLink(fileUrl(node, "stdout.txt"), "stdout.txt"), " ",
    fileLink(fileUrl(node, "stderr.txt"), "stderr.txt"));
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

