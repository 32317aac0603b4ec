// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <string_view>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::ops::detail {

/// The dashboard `http_server` serves at `/`: one self-contained page (no build step, no
/// external assets, no framework) over the JSON API of docs/operations.md. It lists the
/// dead-letter queues with their depths, the entries of the selected queue a page at a time
/// with their reason, history and body preview (the whole message on demand), a replay button
/// per entry and a replay of every entry matching a filter. Every request sends the bearer
/// token typed into the page (kept in the tab's sessionStorage only): reading entries needs it
/// as replays do. An entry is named by its `handle` when it has one (no message id), else by
/// its `id`, URL-encoded in paths.
///
/// Element ids and classes are a stable contract for the browser test
/// (tests/integration/ops_dashboard_browser.cpp): `#token`, `#queues tr[data-queue] .depth`,
/// `#entries tr[data-id] button.replay`, `#entries tr[data-id] button.whole`, `#bulk-reason`,
/// `#bulk-replay`, `#prev-page`, `#next-page`, `#status`.
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
  .pager { display: flex; gap: 8px; align-items: center; margin-top: 10px; }
  #status { min-height: 1.4em; margin: 0 20px; color: #3d4650; }
  #status.error { color: #b3261e; }
  button { cursor: pointer; }
</style>
</head>
<body>
<header>
  <h1>letterbox &middot; dead letters</h1>
  <label>Token <input id="token" type="password" autocomplete="off"
         placeholder="bearer token"></label>
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
      <th>dead-lettered</th><th>history</th><th>body</th><th></th></tr></thead>
      <tbody></tbody></table>
    <div class="pager">
      <button id="prev-page" type="button" hidden>Previous page</button>
      <button id="next-page" type="button" hidden>Next page</button>
      <span id="page-info"></span>
    </div>
  </section>
</main>
<script>
"use strict";
const state = { queue: null, offset: 0, next: null, starts: [] };
const $ = (sel) => document.querySelector(sel);
const token = $("#token");
token.value = sessionStorage.getItem("letterbox-token") || "";
token.addEventListener("change", () => {
  sessionStorage.setItem("letterbox-token", token.value);
  refresh();
});

function say(text, isError) {
  const s = $("#status");
  s.textContent = text;
  s.className = isError ? "error" : "";
}

async function call(method, path, body) {
  const init = { method, headers: {} };
  if (token.value !== "") init.headers["Authorization"] = "Bearer " + token.value;
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const res = await fetch(path, init);
  const json = await res.json().catch(() => ({}));
  if (!res.ok) {
    const err = new Error((json.error && json.error.message) || res.statusText);
    err.status = res.status;
    throw err;
  }
  return json;
}

// The name of an entry in paths and filters: its handle (an entry without a message id has
// one), else its id.
// An entry's handle names exactly that entry (a message id names every copy of a message):
// per-entry actions use it. The id is what operators search by, so the table shows it.
function keyOf(e) { return e.handle ? e.handle : e.id; }
function labelOf(e) { return e.id ? e.id : "no id, " + keyOf(e); }

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
    row.addEventListener("click", () => {
      if (state.queue !== q.queue) { state.offset = 0; state.starts = []; }
      state.queue = q.queue;
      refresh();
    });
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

function bodyCell(e) {
  const d = document.createElement("details");
  const s = document.createElement("summary");
  s.textContent = e.body_bytes + " bytes" + (e.body_truncated ? " (preview)" : "");
  const pre = document.createElement("pre");
  pre.textContent = e.body_encoding === "base64" ? "base64: " + e.body : e.body;
  d.append(s, pre);
  if (e.body_truncated) {
    const b = document.createElement("button");
    b.type = "button";
    b.className = "whole";
    b.textContent = "Load the whole message";
    b.addEventListener("click", async () => {
      try {
        const m = await call("GET", "/dlq/" + encodeURIComponent(state.queue) + "/messages/" +
                                    encodeURIComponent(keyOf(e)));
        pre.textContent = m.body_encoding === "base64" ? "base64: " + m.body : m.body;
        b.remove();
      } catch (err) {
        say("cannot load the message: " + err.message, true);
      }
    });
    d.append(b);
  }
  return d;
}

async function loadEntries() {
  const body = $("#entries tbody");
  if (state.queue === null) { body.replaceChildren(); return; }
  $("#entries-title").textContent = "Entries of " + state.queue;
  let data;
  try {
    data = await call("GET", "/dlq/" + encodeURIComponent(state.queue) + "?limit=100&offset=" +
                      state.offset);
  } catch (err) {
    body.replaceChildren();
    $("#prev-page").hidden = true;
    $("#next-page").hidden = true;
    $("#page-info").textContent = "";
    if (err.status === 401 || err.status === 403)
      say("type the token to read the entries: " + err.message, true);
    else
      throw err;
    return;
  }
  if ($("#status").textContent.startsWith("type the token")) say("", false);
  body.replaceChildren();
  for (const e of data.entries) {
    const key = keyOf(e);
    const row = body.insertRow();
    row.dataset.id = key;
    cell(row, e.type ? labelOf(e) + " (" + e.type + ")" : labelOf(e));
    cell(row, e.reason, "reason");
    cell(row, e.attempts);
    cell(row, e.dead_lettered_time);
    row.insertCell().append(history(e));
    row.insertCell().append(bodyCell(e));
    const b = document.createElement("button");
    b.type = "button";
    b.className = "replay";
    b.textContent = "Replay";
    b.addEventListener("click", () => replay({ ids: [key] }));
    row.insertCell().append(b);
  }
  state.next = data.next_offset;
  $("#prev-page").hidden = state.starts.length === 0;
  $("#next-page").hidden = state.next === null;
  $("#page-info").textContent = data.entries.length === 0 ? "" :
    "entries " + (data.offset + 1) + " to " + (data.offset + data.entries.length);
}

async function replay(filter) {
  try {
    const r = await call("POST", "/dlq/" + encodeURIComponent(state.queue) + "/replay", filter);
    say("replayed " + r.replayed + ", failed " + r.failed + ", left alone " + r.skipped,
        r.failed > 0);
  } catch (err) {
    say("replay refused: " + err.message, true);
    if (err.status === 401 || err.status === 403) return; // nothing moved
  }
  await refresh();
}

$("#next-page").addEventListener("click", () => {
  if (state.next === null) return;
  state.starts.push(state.offset);
  state.offset = state.next;
  refresh();
});
$("#prev-page").addEventListener("click", () => {
  state.offset = state.starts.length > 0 ? state.starts.pop() : 0;
  refresh();
});

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
