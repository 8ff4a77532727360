// colbench view: a single page over the server's JSON API (see colbench/view/_app.py).
// Every text from a run goes into the page through textContent; only the server's own SVG
// plots (whose labels the server escapes) are inserted as markup.
"use strict";

const state = {
  runs: [],                 // the last /api/runs answer
  versions: {},             // run id -> version, to tell what changed
  pollSeconds: 3,
  runFilters: { env: "", model: "", protocol: "", status: "", text: "" },
  episodeFilters: { outcome: "", text: "", key: "", value: "" },
  breakdownKey: "",
  selected: new Set(),      // runs ticked for comparison
  sorts: {},                // table id -> { column, descending }
  flipsOnly: false,         // the comparison lists only the pairs whose success flipped
  rendering: 0,             // a counter: an older render that finishes late is dropped
};

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "class") node.className = value;
    else if (name === "text") node.textContent = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function svg(markup) {
  const holder = el("div", { class: "plot" });
  holder.innerHTML = markup;  // generated and escaped by the server (colbench/view/_plots.py)
  return holder;
}

// One format per kind of figure: rates and scores as percentages, other numbers with fixed
// decimals, durations in words.
function pct(value) { return value === null || value === undefined ? "-" : (100 * value).toFixed(1) + "%"; }
function num(value, digits = 2) { return value === null || value === undefined ? "-" : Number(value).toFixed(digits); }
function signedPct(value) { return (value > 0 ? "+" : "") + (100 * value).toFixed(1) + " pts"; }
function pValue(value) { return value < 0.001 ? "p < 0.001" : `p = ${value.toFixed(3)}`; }
function duration(seconds) {
  if (seconds === null || seconds === undefined) return null;
  if (seconds < 90) return `${Math.round(seconds)} s`;
  if (seconds < 5400) return `${Math.round(seconds / 60)} min`;
  return `${(seconds / 3600).toFixed(1)} h`;
}

// A table whose columns sort on a click on their heading (again: the other way). Each column:
// { label, value: row -> what it sorts by, cell: row -> <td> }. The order is kept per table
// across redraws, so that a live update does not undo the reader's choice.
function sortableTable(id, columns, rows, rowNode) {
  const sort = state.sorts[id];
  let shown = rows;
  if (sort && columns[sort.column]) {
    const value = columns[sort.column].value;
    const order = (x, y) => {
      const a = value(x), b = value(y);
      if (a === b) return 0;
      if (a === null || a === undefined || a === "") return 1;   // blanks last either way
      if (b === null || b === undefined || b === "") return -1;
      const less = typeof a === "number" && typeof b === "number" ? a < b : String(a).localeCompare(String(b), undefined, { numeric: true }) < 0;
      return (less ? -1 : 1) * (sort.descending ? -1 : 1);
    };
    shown = [...rows].sort(order);
  }
  const heading = (column, index) => {
    if (!column.value) return el("th", { text: column.label });
    const active = sort && sort.column === index;
    return el("th", { class: "sortable", "data-column": column.label,
      "aria-sort": active ? (sort.descending ? "descending" : "ascending") : "none",
      title: "sort by this column",
      onclick: () => { state.sorts[id] = { column: index, descending: active ? !sort.descending : false }; render(); } },
      column.label, el("span", { class: "arrow", text: active ? (sort.descending ? " \u25be" : " \u25b4") : "" }));
  };
  return el("table", { id, class: "sortable-table" },
    el("thead", {}, el("tr", {}, columns.map(heading))),
    el("tbody", {}, shown.map((row) => rowNode(row, columns.map((c) => c.cell(row))))));
}

function stateBadge(run) {
  // running n/N · ETA, stopped (why, on hover and below), finished.
  const progress = run.planned ? `${run.episodes}/${run.planned}` : `${run.episodes}`;
  let text = run.status;
  if (run.status === "running") {
    const eta = duration(run.eta_seconds);
    text = `running ${progress}` + (eta ? ` \u00b7 ETA ${eta}` : "");
  } else if (run.status === "stopped") text = `stopped at ${progress}`;
  return el("span", { class: `badge state ${run.status}`, title: run.state_reason || "", text });
}

async function api(path) {
  const response = await fetch(path, { cache: "no-store" });
  const body = await response.json();
  if (!response.ok) throw new Error(body.error || response.statusText);
  return body;
}

function route() {
  const hash = location.hash.replace(/^#\/?/, "");
  const [path, query] = hash.split("?");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  return { parts, params: new URLSearchParams(query || "") };
}

function episodeHref(runId, taskId, trial) {
  return `#/run/${encodeURIComponent(runId)}/episode?task=${encodeURIComponent(taskId)}&trial=${trial}`;
}

async function render() {
  const ticket = ++state.rendering;
  const { parts, params } = route();
  let view;
  try {
    if (parts[0] === "run" && parts[2] === "episode") view = await episodeView(parts[1], params.get("task"), params.get("trial"));
    else if (parts[0] === "run" && parts[2] === "breakdown") view = await breakdownView(parts[1]);
    else if (parts[0] === "run") view = await runView(parts[1]);
    else if (parts[0] === "compare") view = await compareView(parts[1], parts[2]);
    else if (parts[0] === "training") view = await trainingView();
    else view = await runsView();
  } catch (error) {
    view = el("p", { class: "warning", text: `could not load: ${error.message}` });
  }
  if (ticket !== state.rendering) return;
  const main = document.getElementById("main");
  main.replaceChildren(view);
}

// -- the run list -------------------------------------------------------------------------
async function loadRuns() {
  const body = await api("/api/runs");
  state.runs = body.runs;
  state.pollSeconds = body.poll_seconds || state.pollSeconds;
  return body;
}

function options(values, current, allLabel) {
  return [el("option", { value: "", text: allLabel }),
    ...values.map((v) => el("option", { value: v, text: v, selected: v === current }))];
}

function distinct(rows, key) {
  return [...new Set(rows.map((r) => r[key]).filter((v) => v !== null && v !== undefined))].sort();
}

function runMatches(run, f) {
  if (f.env && run.env !== f.env) return false;
  if (f.model && run.model !== f.model) return false;
  if (f.protocol && run.protocol !== f.protocol) return false;
  if (f.status && run.status !== f.status) return false;
  if (f.text) {
    const needle = f.text.toLowerCase();
    const hay = [run.label, run.env, run.model, run.task_set, run.protocol].join(" ").toLowerCase();
    if (!hay.includes(needle)) return false;
  }
  return true;
}

async function runsView() {
  const body = await loadRuns();
  const f = state.runFilters;
  const runs = body.runs;
  const shown = runs.filter((r) => runMatches(r, f));
  const rerender = () => render();
  const select = (key, label) => el("label", {}, `${label} `,
    el("select", { id: `filter-${key}`, onchange: (e) => { f[key] = e.target.value; rerender(); } },
      options(distinct(runs, key), f[key], "all")));
  const text = el("input", { id: "filter-text", type: "search", placeholder: "filter runs", value: f.text,
    onchange: (e) => { f.text = e.target.value; rerender(); } });
  const compare = el("button", { id: "compare", disabled: state.selected.size !== 2,
    onclick: () => { const [a, b] = [...state.selected]; location.hash = `#/compare/${a}/${b}`; } },
    "compare the two ticked runs");
  const columns = [
    { label: "", cell: (r) => el("td", {}, el("input", { type: "checkbox", class: "pick", checked: state.selected.has(r.id),
      onchange: (e) => { if (e.target.checked) state.selected.add(r.id); else state.selected.delete(r.id); rerender(); } })) },
    { label: "run", value: (r) => r.label, cell: (r) => el("td", {}, el("a", { href: `#/run/${r.id}`, text: r.label }),
      r.problem ? el("div", { class: "warning", text: r.problem }) : null) },
    { label: "env", value: (r) => r.env, cell: (r) => el("td", { text: r.env || "-" }) },
    { label: "model", value: (r) => r.model, cell: (r) => el("td", { text: r.model || "-" }) },
    { label: "protocol", value: (r) => r.protocol, cell: (r) => el("td", { text: r.protocol || "-" }) },
    { label: "task set", value: (r) => r.task_set, cell: (r) => el("td", { text: r.task_set || "-" }) },
    { label: "state", value: (r) => r.status, cell: (r) => el("td", { class: "state" }, stateBadge(r),
      r.status === "stopped" && r.state_reason ? el("div", { class: "why", text: r.state_reason }) : null) },
    { label: "episodes", value: (r) => r.episodes, cell: (r) => el("td", { class: "num episodes", text: r.episodes }) },
    { label: "errors", value: (r) => r.env_errors + r.model_errors, cell: (r) => el("td", { class: "num", text: r.env_errors + r.model_errors }) },
    { label: "success", value: (r) => r.success_rate, cell: (r) => el("td", { class: "num success", text: pct(r.success_rate) }) },
    { label: "score", value: (r) => r.score, cell: (r) => el("td", { class: "num score", text: pct(r.score) }) },
    { label: "turns", value: (r) => r.mean_turns, cell: (r) => el("td", { class: "num", text: num(r.mean_turns, 1) }) },
  ];
  return el("section", {},
    el("h1", { text: `Runs (${shown.length} of ${runs.length})` }),
    el("p", { class: "note", text: `under ${body.roots.join(", ")}` }),
    el("div", { class: "filters" }, select("env", "env"), select("model", "model"),
      select("protocol", "protocol"), select("status", "state"), text, compare),
    sortableTable("runs", columns, shown, (r, cells) => el("tr", { class: "run", "data-run-id": r.id, "data-state": r.status }, cells)));
}

// -- one run: episodes and breakdown --------------------------------------------------------
function runHeader(run, active) {
  return [el("h1", { text: run.label }),
    el("p", { class: "facts" }, stateBadge(run), ` ${run.env || "?"} · ${run.model || "?"} · protocol ${run.protocol || "?"} · task set ${run.task_set || "?"}`,
      ` · ${run.episodes} episodes · success ${pct(run.success_rate)} · score ${pct(run.score)}`),
    run.status === "stopped" && run.state_reason ? el("p", { class: "why", id: "state-reason", text: `stopped: ${run.state_reason}` }) : null,
    el("p", { class: "tabs" },
      el("a", { href: `#/run/${run.id}`, class: active === "episodes" ? "active" : "", text: "episodes" }),
      el("a", { href: `#/run/${run.id}/breakdown`, class: active === "breakdown" ? "active" : "", text: "breakdown and plots" }))];
}

function episodeMatches(ep, f) {
  if (f.outcome && ep.outcome !== f.outcome) return false;
  if (f.text && !ep.task_id.toLowerCase().includes(f.text.toLowerCase())) return false;
  if (f.key && f.value && ep.groups[f.key] !== f.value) return false;
  return true;
}

async function runView(runId) {
  const body = await api(`/api/runs/${encodeURIComponent(runId)}`);
  const f = state.episodeFilters;
  if (f.key && !body.group_keys.includes(f.key)) { f.key = ""; f.value = ""; }
  const shown = body.episodes.filter((e) => episodeMatches(e, f));
  const rerender = () => render();
  const groupValues = f.key ? distinct(body.episodes.map((e) => ({ v: e.groups[f.key] })), "v") : [];
  const keyColumns = body.group_keys.slice(0, 2);
  const columns = [
    { label: "task", value: (e) => e.task_id, cell: (e) => el("td", {}, el("a", { href: episodeHref(runId, e.task_id, e.trial), text: e.task_id })) },
    { label: "trial", value: (e) => e.trial, cell: (e) => el("td", { class: "num", text: e.trial }) },
    { label: "outcome", value: (e) => e.outcome, cell: (e) => el("td", {}, el("span", { class: `badge ${e.outcome}`, text: e.outcome })) },
    { label: "score", value: (e) => e.score, cell: (e) => el("td", { class: "num", text: pct(e.score) }) },
    { label: "turns", value: (e) => e.turns, cell: (e) => el("td", { class: "num", text: e.turns }) },
    ...keyColumns.map((k) => ({ label: k, value: (e) => e.groups[k] ?? "", cell: (e) => el("td", { text: e.groups[k] ?? "" }) })),
    { label: "error", value: (e) => e.error, cell: (e) => el("td", { class: "note", text: e.error || "" }) },
  ];
  return el("section", {}, runHeader(body.run, "episodes"),
    body.metadata_problem ? el("p", { class: "note", text: body.metadata_problem }) : null,
    el("div", { class: "filters" },
      el("label", {}, "outcome ", el("select", { id: "filter-outcome", onchange: (e) => { f.outcome = e.target.value; rerender(); } },
        options(["success", "failure", "model-error", "env-error"], f.outcome, "all"))),
      el("input", { id: "filter-task", type: "search", placeholder: "task id", value: f.text,
        onchange: (e) => { f.text = e.target.value; rerender(); } }),
      el("label", {}, "group ", el("select", { id: "filter-key", onchange: (e) => { f.key = e.target.value; f.value = ""; rerender(); } },
        options(body.group_keys, f.key, "(none)"))),
      f.key ? el("select", { id: "filter-value", onchange: (e) => { f.value = e.target.value; rerender(); } },
        options(groupValues, f.value, "all")) : null),
    el("p", { class: "note", id: "episode-count", text: `${shown.length} of ${body.episodes.length} episodes` }),
    sortableTable("episodes", columns, shown, (e, cells) => el("tr", { class: "episode", "data-task": e.task_id, "data-trial": e.trial, "data-outcome": e.outcome }, cells)));
}

async function breakdownView(runId) {
  const runBody = await api(`/api/runs/${encodeURIComponent(runId)}`);
  const key = state.breakdownKey && runBody.group_keys.includes(state.breakdownKey) ? state.breakdownKey : "";
  const body = await api(`/api/runs/${encodeURIComponent(runId)}/breakdown${key ? `?key=${encodeURIComponent(key)}` : ""}`);
  const plots = Object.entries(body.plots).map(([name, markup]) => { const p = svg(markup); p.dataset.plot = name; return p; });
  const groupColumns = [
    { label: body.key, value: (g) => g.group, cell: (g) => el("td", { text: g.group }) },
    { label: "episodes", value: (g) => g.episodes, cell: (g) => el("td", { class: "num", text: g.episodes }) },
    { label: "successes", value: (g) => g.successes, cell: (g) => el("td", { class: "num", text: g.successes }) },
    { label: "success", value: (g) => g.success_rate, cell: (g) => el("td", { class: "num", text: pct(g.success_rate) }) },
    { label: "score", value: (g) => g.score, cell: (g) => el("td", { class: "num", text: pct(g.score) }) },
    { label: "turns", value: (g) => g.mean_turns, cell: (g) => el("td", { class: "num", text: num(g.mean_turns, 1) }) },
  ];
  const table = body.groups.length ? sortableTable("groups", groupColumns, body.groups, (g, cells) => el("tr", {}, cells)) :
    el("p", { class: "note", text: "no task metadata to group by" });
  return el("section", {}, runHeader(runBody.run, "breakdown"),
    body.metadata_problem ? el("p", { class: "note", text: body.metadata_problem }) : null,
    body.keys.length ? el("div", { class: "filters" }, el("label", {}, "group by ",
      el("select", { id: "breakdown-key", onchange: (e) => { state.breakdownKey = e.target.value; render(); } },
        body.keys.map((k) => el("option", { value: k, text: k, selected: k === body.key }))))) : null,
    table, el("div", { class: "plots" }, plots));
}

// -- one episode ----------------------------------------------------------------------------
function metricText(name, value) {
  // Scores and rates as percentages, other fractions with fixed decimals; texts as they are.
  if (typeof value === "number" && !Number.isInteger(value)) {
    return ["score", "success"].includes(name) || (value >= 0 && value <= 1 && /score|rate|similarity|fraction/.test(name)) ? pct(value) : num(value, 3);
  }
  if (name === "score" && typeof value === "number") return pct(value);
  return typeof value === "object" ? JSON.stringify(value) : String(value);
}

function message(kind, who, text) {
  // As the HTML report draws a transcript: the env on the left, the agent's bubble on the right.
  return el("div", { class: `msg ${kind}` }, el("div", { class: "who", text: who }),
    el("pre", { text: text === null || text === undefined || text === "" ? "(empty)" : text }));
}

function figures(images) {
  // Each picture links to itself, full size; the page shows it scaled and cut in height.
  return images.map((im) => el("figure", {},
    el("a", { href: im.url, target: "_blank", rel: "noopener" },
      el("img", { src: im.url, alt: im.caption, loading: "lazy", class: "render" })),
    el("figcaption", { text: im.caption })));
}

async function episodeView(runId, taskId, trial) {
  const query = `task=${encodeURIComponent(taskId)}&trial=${encodeURIComponent(trial)}`;
  const ep = await api(`/api/runs/${encodeURIComponent(runId)}/episode?${query}`);
  const turns = ep.turns.map((t) => el("div", { class: "turn", "data-turn": t.turn },
    el("div", { class: "note", text: `turn ${t.turn} · reward ${num(t.reward)}` + (t.model_seconds ? ` · model ${num(t.model_seconds, 1)} s` : "") }),
    t.turn === 1 ? message("env", "observation", t.observation) : null,
    message("agent", "agent", t.action),
    t.next_observation !== null ? message("env", "reply", t.next_observation) : null,
    t.images.length ? el("div", { class: "images" }, figures(t.images)) : null,
    Object.keys(t.info).length ? el("details", {}, el("summary", { text: "info" }),
      el("pre", { class: "info", text: JSON.stringify(t.info, null, 2) })) : null));
  return el("section", { id: "episode" },
    el("p", {}, el("a", { href: `#/run/${runId}`, text: "← episodes" })),
    el("h1", { text: `${ep.task_id} (trial ${ep.trial})` }),
    el("p", { class: "facts" }, el("span", { class: `badge ${ep.outcome}`, text: ep.outcome }),
      ` · ${ep.env} · ${ep.model} · ${ep.turns.length} turn${ep.turns.length === 1 ? "" : "s"}` + (ep.truncated ? " · truncated" : "") + (ep.attempts > 1 ? ` · ${ep.attempts} attempts` : "")),
    ep.error ? el("div", {}, el("div", { class: "who", text: ep.failure === "env" ? "environment failure" : "failure" }),
      el("pre", { class: "error", id: "failure", text: ep.error })) : null,
    ep.renders.length ? el("div", { class: "renders" }, figures(ep.renders)) : null,
    el("h2", { text: "metrics" }),
    el("table", { id: "metrics", class: "metrics" }, el("tbody", {}, Object.entries(ep.metrics).map(([k, v]) =>
      el("tr", {}, el("th", { text: k }), el("td", { text: metricText(k, v) }))))),
    ep.final_answer ? el("div", {}, el("div", { class: "who", text: "final answer" }), el("pre", { class: "answer", text: ep.final_answer })) : null,
    el("h2", { text: "transcript" }),
    ep.system_prompt ? el("details", { class: "system" }, el("summary", { text: ep.instructions_label }), el("pre", { text: ep.system_prompt })) : null,
    turns);
}

// -- comparison -----------------------------------------------------------------------------
function testLine(id, label, test) {
  if (!test) return null;
  const interval = test.ci95 ? ` (95% interval ${signedPct(test.ci95[0])} to ${signedPct(test.ci95[1])})` : "";
  return el("tr", { id },
    el("th", { text: label }), el("td", { class: "num", text: signedPct(test.difference) + interval }),
    el("td", { class: "num p", text: pValue(test.p_value) }), el("td", { class: "note", text: `${test.method}, ${test.n} pairs` }));
}

async function compareView(a, b) {
  const body = await api(`/api/compare?a=${encodeURIComponent(a)}&b=${encodeURIComponent(b)}`);
  const side = (runId, row, cell) => cell === null ? el("td", { class: "note", text: "(none)" }) :
    el("td", {}, el("a", { href: episodeHref(runId, row.task_id, row.trial), class: `badge ${cell.outcome}`, text: cell.outcome }),
      cell.score === null ? "" : ` ${pct(cell.score)}`);
  const shown = state.flipsOnly ? body.rows.filter((r) => r.flipped) : body.rows;
  const columns = [
    { label: "task", value: (r) => r.task_id, cell: (r) => el("td", { text: r.task_id }) },
    { label: "trial", value: (r) => r.trial, cell: (r) => el("td", { class: "num", text: r.trial }) },
    { label: "A", value: (r) => r.a?.score, cell: (r) => side(a, r, r.a) },
    { label: "B", value: (r) => r.b?.score, cell: (r) => side(b, r, r.b) },
    { label: "change", value: (r) => r.change, cell: (r) => el("td", { class: `change-${r.change.replace(/ /g, "-")}`, text: r.change }) },
  ];
  const totals = Object.entries(body.totals).map(([k, v]) => `${k}: ${v}`).join(" · ");
  const flips = body.rows.filter((r) => r.flipped).length;
  return el("section", {},
    el("h1", { text: "Comparison" }),
    el("p", {}, "A: ", el("a", { href: `#/run/${a}`, text: body.a.label }), ` (${body.a.model || "?"}, success ${pct(body.a.success_rate)}, score ${pct(body.a.score)})`),
    el("p", {}, "B: ", el("a", { href: `#/run/${b}`, text: body.b.label }), ` (${body.b.model || "?"}, success ${pct(body.b.success_rate)}, score ${pct(body.b.score)})`),
    body.warnings.map((w) => el("p", { class: "warning", text: w })),
    el("h2", { text: "Paired tests (B - A, on the episodes both runs scored)" }),
    el("table", { id: "paired-tests", class: "metrics" }, el("tbody", {},
      testLine("test-success", "success", body.tests.success), testLine("test-score", "score", body.tests.score))),
    el("p", { id: "compare-totals", text: totals }),
    el("div", { class: "filters" }, el("label", {}, el("input", { type: "checkbox", id: "flips-only", checked: state.flipsOnly,
      onchange: (e) => { state.flipsOnly = e.target.checked; render(); } }), ` flips only (${flips} of ${body.rows.length})`)),
    sortableTable("comparison", columns, shown, (r, cells) => el("tr", { class: "pair", "data-task": r.task_id, "data-change": r.change }, cells)));
}

// -- training curves ------------------------------------------------------------------------
async function trainingView() {
  const body = await api("/api/training");
  if (!body.trainings.length) {
    return el("section", {}, el("h1", { text: "Training" }),
      el("p", { class: "note", text: "no trainer logs (trainer_state.json, rollouts/step-*/samples.jsonl) under the folders given" }));
  }
  return el("section", {}, el("h1", { text: "Training" }),
    body.trainings.map((t) => el("div", { class: "training" }, el("h2", { text: t.label, title: t.path }),
      el("div", { class: "plots" }, t.plots.map((p) => svg(p.svg))))));
}

// -- live updates ---------------------------------------------------------------------------
async function poll() {
  const live = document.getElementById("live");
  try {
    const before = state.versions;
    const body = await loadRuns();
    state.versions = Object.fromEntries(body.runs.map((r) => [r.id, r.version]));
    live.classList.remove("stale");
    live.textContent = `live · ${new Date().toLocaleTimeString()}`;
    const { parts } = route();
    const changed = (id) => before[id] !== state.versions[id];
    let stale;
    if (parts[0] === "run" && parts[2] !== "episode") stale = changed(parts[1]);
    else if (parts[0] === "compare") stale = changed(parts[1]) || changed(parts[2]);
    else if (parts[0] === "run" || parts[0] === "training") stale = false;  // a transcript is not redrawn under the reader
    else stale = Object.keys(before).length !== Object.keys(state.versions).length || Object.keys(state.versions).some(changed);
    // Not while the reader types in a filter or holds a list open: the redraw would drop it.
    const busy = ["INPUT", "SELECT"].includes(document.activeElement?.tagName) && document.activeElement.type !== "checkbox";
    if (stale && !busy) await render();
  } catch (error) {
    live.classList.add("stale");
    live.textContent = `offline: ${error.message}`;
  }
  setTimeout(poll, state.pollSeconds * 1000);
}

window.addEventListener("hashchange", render);
(async () => {
  const body = await loadRuns().catch(() => null);
  if (body) state.versions = Object.fromEntries(body.runs.map((r) => [r.id, r.version]));
  await render();
  setTimeout(poll, state.pollSeconds * 1000);
})();
