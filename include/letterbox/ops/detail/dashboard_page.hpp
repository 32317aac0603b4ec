// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <string_view>

namespace letterbox::ops::detail {

/// The dashboard `http_server` serves at `/`: one self-contained page (no build step, no
/// external assets, no framework) over the JSON API of docs/operations.md. It lists the
/// dead-letter queues with their depths, the entries of the selected queue with their reason
/// and history, a replay button per entry and a replay of every entry matching a filter.
/// Mutations send the bearer token typed into the page (kept in the tab's sessionStorage only).
///
/// Element ids and classes are a stable contract for the browser test
/// (tests/integration/ops_dashboard_browser.cpp): `#token`, `#queues tr[data-queue] .depth`,
/// `#entries tr[data-id] button.replay`, `#bulk-reason`, `#bulk-replay`, `#status`.
inline std::string_view dashboard_page() noexcept {
    return R"HTML(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>letterbox: dead letters</title>
<style>
  body { font: 14px/1.4 system-ui, sans-serif; margin: 0; color: #1b1f24; background: #f6f7f9; }
  header { background: #1b1f24; color: #fff; padding: 10px 20px; display: flex; gap: 16px;
           align-items: center; }
  header h1 { font-size: 16px; margin: 0; flex: 1; }
  header input { width: 220px; }
  main { display: grid; grid-template-columns: 260px 1fr; gap: 20px; padding: 20px; }
  section { background: #fff; border: 1px solid #d8dce1; border-radius: 6px; padding: 12px; }
  h2 { font-size: 14px; margin: 0 0 8px; }
  table { border-collapse: collapse; width: 100%; }
  th, td { text-align: left; padding: 5px 6px; border-bottom: 1px solid #eceef1;
           vertical-align: top; }
  #queues tr[data-queue] { cursor: pointer; }
  #queues tr.selected { background: #e8f0fe; }
  .depth { text-align: right; font-variant-numeric: tabular-nums; }
  .depth.alert { color: #b3261e; font-weight: 600; }
  .reason { font-family: ui-monospace, monospace; color: #7a4b00; }
  td:nth-child(5) { min-width: 360px; }
  details pre { white-space: pre-wrap; word-break: break-word; font-size: 12px;
                background: #f6f7f9; padding: 6px; margin: 4px 0; }
  .bar { display: flex; gap: 8px; align-items: center; margin-bottom: 10px; }
  #status { min-height: 1.4em; margin: 0 20px; color: #3d4650; }
  #status.error { color: #b3261e; }
  button { cursor: pointer; }
</style>
</head>
<body>
<header>
  <h1>letterbox &middot; dead letters</h1>
  <label>Token <input id="token" type="password" autocomplete="off"
         placeholder="bearer token for replays"></label>
</header>
<p id="status" role="status"></p>
<main>
  <section>
    <h2>Dead-letter queues</h2>
    <table id="queues"><thead><tr><th>queue</th><th class="depth">depth</th></tr></thead>
      <tbody></tbody></table>
  </section>
  <section>
    <h2 id="entries-title">Entries</h2>
    <div class="bar">
      <label>Reason <input id="bulk-reason" placeholder="e.g. retries-exhausted"></label>
      <button id="bulk-replay" type="button">Replay every entry with this reason</button>
    </div>
    <table id="entries"><thead><tr><th>message</th><th>reason</th><th>attempts</th>
      <th>dead-lettered</th><th>history</th><th></th></tr></thead><tbody></tbody></table>
  </section>
</main>
<script>
"use strict";
const state = { queue: null };
const $ = (sel) => document.querySelector(sel);
const token = $("#token");
token.value = sessionStorage.getItem("letterbox-token") || "";
token.addEventListener("change", () => sessionStorage.setItem("letterbox-token", token.value));

function say(text, isError) {
  const s = $("#status");
  s.textContent = text;
  s.className = isError ? "error" : "";
}

async function call(method, path, body) {
  const init = { method, headers: {} };
  if (method !== "GET") init.headers["Authorization"] = "Bearer " + token.value;
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const res = await fetch(path, init);
  const json = await res.json().catch(() => ({}));
  if (!res.ok) throw new Error((json.error && json.error.message) || res.statusText);
  return json;
}

function cell(row, text, cls) {
  const td = row.insertCell();
  td.textContent = text === null || text === undefined ? "" : String(text);
  if (cls) td.className = cls;
  return td;
}

async function loadQueues() {
  const data = await call("GET", "/queues");
  const body = $("#queues tbody");
  body.replaceChildren();
  for (const q of data.queues) {
    const row = body.insertRow();
    row.dataset.queue = q.queue;
    if (q.queue === state.queue) row.className = "selected";
    cell(row, q.queue);
    cell(row, q.depth === null ? "?" : q.depth, "depth" + (q.depth > 0 ? " alert" : ""));
    row.addEventListener("click", () => { state.queue = q.queue; refresh(); });
  }
  if (state.queue === null && data.queues.length > 0) {
    state.queue = data.queues[0].queue;
    body.rows[0].className = "selected";
  }
}

function history(e) {
  const d = document.createElement("details");
  const s = document.createElement("summary");
  s.textContent = (e.exception && e.exception.type ? e.exception.type : "details") +
                  (e.replay_count ? " (replayed " + e.replay_count + "x)" : "");
  const pre = document.createElement("pre");
  const h = e.headers || {};
  const shown = {
    exception: e.exception && e.exception.type ? e.exception : null,
    first_failure: e.first_failure_time, last_failure: e.last_failure_time,
    original: "exchange '" + e.original_exchange + "', routing key '" +
      e.original_routing_key + "', queue '" + e.original_queue + "'",
    "x-death": h["x-death"], "x-letterbox-death-history": h["x-letterbox-death-history"]
  };
  for (const k of Object.keys(shown)) if (shown[k] === null || shown[k] === undefined) delete shown[k];
  pre.textContent = JSON.stringify(shown, null, 2);
  d.append(s, pre);
  return d;
}

async function loadEntries() {
  const body = $("#entries tbody");
  if (state.queue === null) { body.replaceChildren(); return; }
  const data = await call("GET", "/dlq/" + encodeURIComponent(state.queue) + "?limit=200");
  $("#entries-title").textContent = "Entries of " + state.queue;
  body.replaceChildren();
  for (const e of data.entries) {
    const row = body.insertRow();
    row.dataset.id = e.id;
    cell(row, e.type ? e.id + " (" + e.type + ")" : e.id);
    cell(row, e.reason, "reason");
    cell(row, e.attempts);
    cell(row, e.dead_lettered_time);
    row.insertCell().append(history(e));
    const b = document.createElement("button");
    b.type = "button";
    b.className = "replay";
    b.textContent = "Replay";
    b.addEventListener("click", () => replay({ ids: [e.id] }));
    row.insertCell().append(b);
  }
}

async function replay(filter) {
  try {
    const r = await call("POST", "/dlq/" + encodeURIComponent(state.queue) + "/replay", filter);
    say("replayed " + r.replayed + ", failed " + r.failed + ", left alone " + r.skipped,
        r.failed > 0);
  } catch (err) {
    say("replay refused: " + err.message, true);
  }
  await refresh();
}

$("#bulk-replay").addEventListener("click", () => {
  const reason = $("#bulk-reason").value.trim();
  if (reason === "") { say("type a reason to replay by", true); return; }
  replay({ reason });
});

async function refresh() {
  try {
    await loadQueues();
    await loadEntries();
  } catch (err) {
    say("cannot load: " + err.message, true);
  }
}

refresh();
setInterval(refresh, 10000);
</script>
</body>
</html>
)HTML";
}

} // namespace letterbox::ops::detail
