// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <string_view>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::ops::detail {

/// The dashboard `http_server` serves at `/`: one self-contained page (no build step, no
/// external assets, no framework) over the JSON API of docs/operations.md. Panels:
/// - the dead-letter queues with their depths, and the entries of the selected queue a page at
///   a time with their reason, attempts, dead-lettering time (UTC and relative), body preview
///   (the whole message on demand), a replay button per entry and a replay of every entry
///   matching a reason. Each entry's history is drawn as timelines: letterbox's fault history
///   (first and last failure, attempts, exception, dead-lettering, replays), the broker's
///   `x-death` (one row per entry: time, queue, exchange, reason, count, routing keys) and the
///   `x-death` kept from before the last replay (`x-letterbox-death-history`), with the raw
///   JSON behind a disclosure;
/// - the outbox (`/outbox`, `/outbox/lag`): pending, leased and parked rows, the parked rows
///   grouped by reason, and the relay's lag over the samples the server keeps, as a sparkline;
/// - the consumers (`/consumers`): deliveries, their rate per second, and how they were settled;
/// - the topology lint (`/topology/findings`): severity, code, objects, versions, why, fix.
///
/// Every request sends the bearer token typed into the page (kept in the tab's sessionStorage
/// only): reading entries needs it as replays do. An entry is named by its `handle` when it has
/// one (no message id), else by its `id`, URL-encoded in paths. Everything the server sends is
/// put in the page as text (`textContent`, `dataset`, numeric SVG attributes), never as markup:
/// entries carry headers and bodies that anyone who can publish chooses.
///
/// Element ids and classes are a stable contract for the browser test
/// (tests/integration/ops_dashboard_browser.cpp): `#token`, `#queues tr[data-queue] .depth`,
/// `#entries tr[data-id] button.replay`, `#entries tr[data-id] button.whole`, `#bulk-reason`,
/// `#bulk-replay`, `#prev-page`, `#next-page`, `#status`; in an entry's row,
/// `details.history`, `table.fault-timeline tr[data-event]`, `table.xdeath-timeline` (the
/// broker's `x-death`) and `table.xdeath-timeline.earlier` (before the last replay), whose
/// `tr.xdeath` rows have the cells `.time` (`.utc`, `.ago`), `.queue`, `.exchange`,
/// `.reason`, `.count`, `.keys`, and `details.raw`; `#outbox-panel` with `#outbox-pending`,
/// `#outbox-leased`, `#outbox-parked`, `#outbox-oldest`, `#outbox-parked-reasons
/// tr[data-reason] .count`, `#outbox-lag svg polyline`, `#outbox-lag-text`, `#outbox-note`;
/// `#consumers-panel` with `#consumers tr[data-consumer]` (cells `.delivered`, `.rate`,
/// `.acked`, `.failed`, `.retried`, `.redelivered`, `.dead-lettered`) and `#consumers-note`;
/// `#lint-panel` with `#lint tr[data-code]` (cells `.severity .badge`, `.code`, `.objects`,
/// `.versions`, `.why`, `.fix`), `#lint-note` and `#lint-refresh`.
inline std::string_view dashboard_page() noexcept {
    return R"HTML(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>letterbox: operations</title>
<style>
  body { font: 14px/1.4 system-ui, sans-serif; margin: 0; color: #1b1f24; background: #f6f7f9; }
  header { background: #1b1f24; color: #fff; padding: 10px 20px; display: flex; gap: 16px;
           align-items: center; }
  header h1 { font-size: 16px; margin: 0; flex: 1; }
  header input { width: 220px; }
  main { display: grid; grid-template-columns: minmax(200px, 0.9fr) 1.6fr 2.1fr; gap: 20px;
         padding: 0 20px 20px; align-items: start; }
  #entries-panel, #lint-panel { grid-column: 1 / -1; overflow-x: auto; }
  section { background: #fff; border: 1px solid #d8dce1; border-radius: 6px; padding: 12px;
            min-width: 0; overflow-x: auto; }
  h2 { font-size: 14px; margin: 0 0 8px; }
  h3 { font-size: 12px; margin: 8px 0 4px; color: #3d4650; font-weight: 600; }
  table { border-collapse: collapse; width: 100%; }
  th, td { text-align: left; padding: 5px 6px; border-bottom: 1px solid #eceef1;
           vertical-align: top; }
  th { font-size: 12px; color: #56606b; font-weight: 600; }
  #queues tr[data-queue] { cursor: pointer; }
  #queues tr.selected { background: #e8f0fe; }
  .depth, .num { text-align: right; font-variant-numeric: tabular-nums; }
  .depth.alert, .num.alert { color: #b3261e; font-weight: 600; }
  .reason, .code, .mono { font-family: ui-monospace, monospace; }
  .reason { color: #7a4b00; }
  #entries > tbody > tr > td:nth-child(5) { min-width: 440px; }
  #entries > tbody > tr > td:first-child { min-width: 160px; max-width: 240px;
                                          overflow-wrap: anywhere; }
  #entries button.replay { margin-top: 4px; }
  #consumers th, #consumers td { padding: 5px 3px; }
  #entries > tbody > tr > td.time .ago { display: block; margin-left: 0; }
  .utc { white-space: nowrap; }
  details pre { white-space: pre-wrap; word-break: break-word; font-size: 12px;
                background: #f6f7f9; padding: 6px; margin: 4px 0; }
  table.timeline { font-size: 12px; margin: 2px 0 6px; }
  table.timeline td, table.timeline th { padding: 2px 6px 2px 0; border-bottom: 1px dotted #e1e4e8; }
  table.timeline td.time { white-space: nowrap; }
  .ago { color: #6a737d; margin-left: 4px; }
  .muted { color: #6a737d; }
  .bar { display: flex; gap: 8px; align-items: center; margin-bottom: 10px; }
  .pager { display: flex; gap: 8px; align-items: center; margin-top: 10px; }
  .stats { display: flex; gap: 18px; margin-bottom: 8px; }
  .stat b { display: block; font-size: 20px; font-variant-numeric: tabular-nums; }
  .stat b.alert { color: #b3261e; }
  .stat span { font-size: 12px; color: #56606b; }
  #outbox-lag { display: flex; gap: 12px; align-items: center; margin: 6px 0; }
  #outbox-lag svg { background: #f6f7f9; border: 1px solid #eceef1; border-radius: 4px; }
  #outbox-lag polyline { fill: none; stroke: #0b57d0; stroke-width: 1.5; }
  .badge { display: inline-block; padding: 0 6px; border-radius: 9px; font-size: 11px;
           font-weight: 600; color: #fff; text-transform: uppercase; }
  .badge.error { background: #b3261e; }
  .badge.warning { background: #b26a00; }
  .badge.info { background: #0b57d0; }
  #lint td.objects div, #lint td.versions div, #lint td.code { white-space: nowrap; }
  #status { min-height: 1.4em; margin: 8px 20px; color: #3d4650; }
  #status.error { color: #b3261e; }
  button { cursor: pointer; }
</style>
</head>
<body>
<header>
  <h1>letterbox &middot; operations</h1>
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
  <section id="outbox-panel">
    <h2>Outbox</h2>
    <p id="outbox-note" class="muted"></p>
    <div class="stats">
      <div class="stat"><b id="outbox-pending">&ndash;</b><span>pending</span></div>
      <div class="stat"><b id="outbox-leased">&ndash;</b><span>being published</span></div>
      <div class="stat"><b id="outbox-parked">&ndash;</b><span>parked</span></div>
      <div class="stat"><b id="outbox-oldest">&ndash;</b><span>oldest pending</span></div>
    </div>
    <h3>Relay lag</h3>
    <div id="outbox-lag"><span id="outbox-lag-text" class="muted"></span></div>
    <h3>Parked, by reason</h3>
    <table id="outbox-parked-reasons"><thead><tr><th>reason</th><th class="num">rows</th>
      <th>newest</th></tr></thead><tbody></tbody></table>
  </section>
  <section id="consumers-panel">
    <h2>Consumers</h2>
    <p id="consumers-note" class="muted"></p>
    <table id="consumers"><thead><tr><th>consumer</th><th class="num">delivered</th>
      <th class="num">per&nbsp;s</th><th class="num">acked</th><th class="num">failed</th>
      <th class="num">retried</th><th class="num">redelivered</th>
      <th class="num">dead-lettered</th></tr></thead><tbody></tbody></table>
  </section>
  <section id="entries-panel">
    <h2 id="entries-title">Entries</h2>
    <div class="bar">
      <label>Reason <input id="bulk-reason" placeholder="e.g. retries-exhausted"></label>
      <button id="bulk-replay" type="button">Replay every entry with this reason</button>
    </div>
    <table id="entries"><thead><tr><th>message</th><th>reason</th><th>attempts</th>
      <th>dead-lettered</th><th>history</th><th>body</th></tr></thead>
      <tbody></tbody></table>
    <div class="pager">
      <button id="prev-page" type="button" hidden>Previous page</button>
      <button id="next-page" type="button" hidden>Next page</button>
      <span id="page-info"></span>
    </div>
  </section>
  <section id="lint-panel">
    <h2>Topology lint <button id="lint-refresh" type="button">Check again</button></h2>
    <p id="lint-note" class="muted"></p>
    <table id="lint"><thead><tr><th>severity</th><th>code</th><th>objects</th>
      <th>versions</th><th>why</th><th>fix</th></tr></thead><tbody></tbody></table>
  </section>
</main>
)HTML"
           R"HTML(<script>
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
    err.code = json.error && json.error.code;
    throw err;
  }
  return json;
}

// ---- text and time -------------------------------------------------------------------------
// Header values are whatever the publisher wrote: shown as text, whatever their JSON type.
function text(v) {
  if (v === null || v === undefined) return "";
  return typeof v === "string" ? v : typeof v === "number" ? String(v) : JSON.stringify(v);
}

// A time from the API: RFC 3339 text, or an AMQP timestamp of a field table
// ({"$timestamp": seconds}). Null when it is neither.
function toDate(v) {
  let ms = NaN;
  if (v && typeof v === "object" && typeof v["$timestamp"] === "number") ms = v["$timestamp"] * 1000;
  else if (typeof v === "string") ms = Date.parse(v);
  if (!Number.isFinite(ms) || Math.abs(ms) > 8.64e15) return null;
  return new Date(ms);
}

function utc(d) { return d.toISOString().slice(0, 19).replace("T", " ") + " UTC"; }

function duration(s) {
  s = Math.round(s);
  if (s < 60) return s + " s";
  if (s < 3600) return Math.floor(s / 60) + " min";
  if (s < 86400) return Math.floor(s / 3600) + " h " + Math.floor((s % 3600) / 60) + " min";
  return Math.floor(s / 86400) + " d " + Math.floor((s % 86400) / 3600) + " h";
}

function ago(d) {
  const s = (Date.now() - d.getTime()) / 1000;
  if (s < -5) return "in " + duration(-s);
  if (s < 5) return "just now";
  return duration(s) + " ago";
}

function cell(row, value, cls) {
  const td = row.insertCell();
  td.textContent = text(value);
  if (cls) td.className = cls;
  return td;
}

// A cell with a time as "2026-12-07 23:41:05 UTC" and "3 min ago" (only the latter when
// `compact`, the former then in its tooltip); the raw value when it is no time.
function timeCell(row, v, compact) {
  const td = row.insertCell();
  td.className = "time";
  const d = toDate(v);
  if (d === null) { td.textContent = text(v); return td; }
  const b = document.createElement("span");
  b.className = "ago";
  if (compact) {
    b.textContent = ago(d);
    td.title = utc(d);
    td.append(b);
    return td;
  }
  const a = document.createElement("span");
  a.className = "utc";
  a.textContent = utc(d);
  b.textContent = "(" + ago(d) + ")";
  td.append(a, b);
  return td;
}

function el(tag, cls, content) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (content !== undefined) e.textContent = content;
  return e;
}

// ---- dead letters ---------------------------------------------------------------------------
// An entry's handle names exactly that entry (a message id names every copy of a message):
// per-entry actions use it. The id is what operators search by, so the table shows it.
function keyOf(e) { return e.handle ? e.handle : e.id; }
function labelOf(e) { return e.id ? e.id : "no id, " + keyOf(e); }

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

// x-death tables, as the broker lists them (the most recent death first).
function xdeathTable(list, earlier) {
  const entries = Array.isArray(list) ? list : [list];
  const t = el("table", "timeline xdeath-timeline" + (earlier ? " earlier" : ""));
  const head = t.createTHead().insertRow();
  for (const h of ["time", "queue", "exchange", "reason", "count", "routing keys"])
    head.append(el("th", "", h));
  const body = t.createTBody();
  for (const x of entries) {
    const d = x && typeof x === "object" && !Array.isArray(x) ? x : { reason: x };
    const row = body.insertRow();
    row.className = "xdeath";
    timeCell(row, d.time);
    cell(row, d.queue, "queue");
    cell(row, d.exchange === "" ? "(default)" : d.exchange, "exchange");
    cell(row, d.reason, "reason");
    cell(row, d.count, "count num");
    cell(row, Array.isArray(d["routing-keys"]) ? d["routing-keys"].map(text).join(", ")
                                                : d["routing-keys"], "keys mono");
  }
  return t;
}

// letterbox's own record of the failure (the headers the dead-letter middleware and the
// replay write), in time order.
function faultTable(e, h) {
  const events = [];
  const add = (name, time, what) => events.push({ name, time, date: toDate(time), what });
  const attempts = h["x-letterbox-attempts"];
  const exc = e.exception && e.exception.type
    ? e.exception.type + (e.exception.message ? ": " + e.exception.message : "") : "";
  if (h["x-letterbox-first-failure-time"] !== undefined)
    add("first-failure", h["x-letterbox-first-failure-time"], "first failure");
  if (h["x-letterbox-last-failure-time"] !== undefined)
    add("last-failure", h["x-letterbox-last-failure-time"],
        "last failure" + (attempts !== undefined ? ", attempt " + text(attempts) : "") +
        (exc ? ": " + exc : ""));
  if (h["x-letterbox-dead-lettered-time"] !== undefined)
    add("dead-lettered", h["x-letterbox-dead-lettered-time"],
        "dead-lettered: " + text(h["x-letterbox-death-reason"] || e.reason) +
        (e.consumer_id ? " by consumer " + e.consumer_id : "") +
        (e.original_queue ? " from queue " + e.original_queue : ""));
  if (h["x-letterbox-replayed-time"] !== undefined)
    add("replayed", h["x-letterbox-replayed-time"],
        "replayed" + (e.replay_count ? " (" + e.replay_count + " times in all)" : ""));
  if (events.length === 0) return null;
  events.sort((a, b) => (a.date ? a.date.getTime() : 0) - (b.date ? b.date.getTime() : 0));
  const t = el("table", "timeline fault-timeline");
  const body = t.createTBody();
  for (const ev of events) {
    const row = body.insertRow();
    row.dataset.event = ev.name;
    timeCell(row, ev.time);
    cell(row, ev.what, "what");
  }
  return t;
}

function history(e) {
  const h = e.headers || {};
  const d = el("details", "history");
  const deaths = Array.isArray(h["x-death"]) ? h["x-death"].length : h["x-death"] ? 1 : 0;
  d.append(el("summary", "", (e.exception && e.exception.type ? e.exception.type : e.reason || "history") +
    (deaths ? " \u00b7 " + deaths + (deaths === 1 ? " x-death entry" : " x-death entries") : "") +
    (e.replay_count ? " \u00b7 replayed " + e.replay_count + "x" : "")));
  const fault = faultTable(e, h);
  if (fault) { d.append(el("h3", "", "letterbox fault history")); d.append(fault); }
  if (h["x-death"] !== undefined && h["x-death"] !== null) {
    d.append(el("h3", "", "x-death (broker, most recent first)"));
    d.append(xdeathTable(h["x-death"], false));
  }
  if (h["x-letterbox-death-history"] !== undefined && h["x-letterbox-death-history"] !== null) {
    d.append(el("h3", "", "x-death before the last replay"));
    d.append(xdeathTable(h["x-letterbox-death-history"], true));
  }
  d.append(el("div", "muted", "first consumed from exchange " +
    (e.original_exchange === "" ? "(default)" : "'" + e.original_exchange + "'") +
    ", routing key '" + e.original_routing_key + "', queue '" + e.original_queue + "'"));
  const raw = el("details", "raw");
  raw.append(el("summary", "", "raw"));
  const shown = {
    exception: e.exception && e.exception.type ? e.exception : null,
    first_failure: e.first_failure_time, last_failure: e.last_failure_time,
    "x-death": h["x-death"], "x-letterbox-death-history": h["x-letterbox-death-history"]
  };
  for (const k of Object.keys(shown)) if (shown[k] === null || shown[k] === undefined) delete shown[k];
  raw.append(el("pre", "", JSON.stringify(shown, null, 2)));
  d.append(raw);
  return d;
}

function bodyCell(e) {
  const d = document.createElement("details");
  d.append(el("summary", "", e.body_bytes + " bytes" + (e.body_truncated ? " (preview)" : "")));
  const pre = el("pre", "", e.body_encoding === "base64" ? "base64: " + e.body : e.body);
  d.append(pre);
  if (e.body_truncated) {
    const b = el("button", "whole", "Load the whole message");
    b.type = "button";
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
  // Keep open what the operator opened, across the refresh.
  const open = new Set();
  for (const r of body.rows)
    for (const [i, d] of [...r.querySelectorAll("details")].entries())
      if (d.open) open.add(r.dataset.id + "/" + i);
  body.replaceChildren();
  for (const e of data.entries) {
    const key = keyOf(e);
    const row = body.insertRow();
    row.dataset.id = key;
    const first = cell(row, e.type ? labelOf(e) + " (" + e.type + ")" : labelOf(e));
    const b = el("button", "replay", "Replay");
    b.type = "button";
    b.addEventListener("click", () => replay({ ids: [key] }));
    first.append(el("br"), b);
    cell(row, e.reason, "reason");
    cell(row, e.attempts, "num");
    timeCell(row, e.dead_lettered_time);
    row.insertCell().append(history(e));
    row.insertCell().append(bodyCell(e));
    for (const [i, d] of [...row.querySelectorAll("details")].entries())
      if (open.has(key + "/" + i)) d.open = true;
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

)HTML"
           R"HTML(// ---- the outbox -----------------------------------------------------------------------------
function stat(id, value, alert) {
  const b = $(id);
  b.textContent = text(value);
  b.className = alert ? "alert" : "";
}

function sparkline(samples) {
  const w = 240, h = 40, pad = 3;
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("width", String(w));
  svg.setAttribute("height", String(h));
  svg.setAttribute("viewBox", "0 0 " + w + " " + h);
  svg.setAttribute("role", "img");
  const values = samples.map((s) => Number(s.lag_seconds)).filter(Number.isFinite);
  const max = Math.max(...values, 0);
  const line = document.createElementNS("http://www.w3.org/2000/svg", "polyline");
  const step = values.length > 1 ? (w - 2 * pad) / (values.length - 1) : 0;
  line.setAttribute("points", values.map((v, i) =>
    (pad + i * step).toFixed(1) + "," +
    (h - pad - (max > 0 ? (v / max) * (h - 2 * pad) : 0)).toFixed(1)).join(" "));
  svg.append(line);
  const title = document.createElementNS("http://www.w3.org/2000/svg", "title");
  title.textContent = "relay lag, " + values.length + " samples, max " + max.toFixed(1) + " s";
  svg.append(title);
  return svg;
}

async function loadOutbox() {
  const note = $("#outbox-note");
  try {
    const [all, parked] = await Promise.all([
      call("GET", "/outbox?limit=1"), call("GET", "/outbox?status=parked&limit=1000")]);
    const s = all.stats;
    note.textContent = "";
    stat("#outbox-pending", s.pending, false);
    stat("#outbox-leased", s.leased, false);
    stat("#outbox-parked", s.parked, s.parked > 0);
    stat("#outbox-oldest", s.pending > 0 ? duration(s.oldest_pending_age_seconds) : "\u2013",
         s.oldest_pending_age_seconds >= 60);
    const groups = new Map();
    for (const r of parked.rows) {
      const reason = r.last_error === null || r.last_error === undefined ? "" : String(r.last_error);
      const g = groups.get(reason) || { count: 0, newest: null };
      g.count += 1;
      const d = toDate(r.created_at);
      if (d && (g.newest === null || d > g.newest)) g.newest = d;
      groups.set(reason, g);
    }
    const body = $("#outbox-parked-reasons tbody");
    body.replaceChildren();
    for (const [reason, g] of [...groups].sort((a, b) => b[1].count - a[1].count)) {
      const row = body.insertRow();
      row.dataset.reason = reason;
      cell(row, reason === "" ? "(no reason)" : reason, "reason");
      cell(row, g.count, "count num");
      if (g.newest) timeCell(row, g.newest.toISOString(), true); else cell(row, "");
    }
    if (s.parked > parked.rows.length)
      note.textContent = "parked reasons of the first " + parked.rows.length + " of " +
                         s.parked + " parked rows";
  } catch (err) {
    for (const id of ["#outbox-pending", "#outbox-leased", "#outbox-parked", "#outbox-oldest"])
      stat(id, "\u2013", false);
    $("#outbox-parked-reasons tbody").replaceChildren();
    note.textContent = err.code === "no_outbox"
      ? "no outbox store (http_server::set_outbox)" : "cannot read the outbox: " + err.message;
  }
  const lag = $("#outbox-lag");
  const lagText = $("#outbox-lag-text");
  for (const old of lag.querySelectorAll("svg")) old.remove();
  try {
    const l = await call("GET", "/outbox/lag");
    lag.prepend(sparkline(l.samples));
    const minutes = (l.samples.length * l.interval_seconds) / 60;
    lagText.textContent = "now " + l.lag_seconds.toFixed(1) + " s, over the last " +
      (minutes >= 1 ? Math.round(minutes) + " min" : Math.round(minutes * 60) + " s") +
      "; published " + l.published + ", parked " + l.parked;
  } catch (err) {
    lagText.textContent = err.code === "no_relay"
      ? "no relay watched (http_server::watch_relay)" : "cannot read the lag: " + err.message;
  }
}

// ---- consumers ------------------------------------------------------------------------------
async function loadConsumers() {
  const note = $("#consumers-note");
  const body = $("#consumers tbody");
  try {
    const data = await call("GET", "/consumers");
    body.replaceChildren();
    for (const c of data.consumers) {
      const row = body.insertRow();
      row.dataset.consumer = c.consumer;
      cell(row, c.consumer, "mono");
      cell(row, c.delivered, "delivered num");
      cell(row, c.delivered_per_second === null ? "\u2013" : c.delivered_per_second.toFixed(2),
           "rate num");
      cell(row, c.acked, "acked num");
      cell(row, c.failed + c.rejected, "failed num" + (c.failed + c.rejected > 0 ? " alert" : ""));
      cell(row, c.retried, "retried num");
      cell(row, c.redelivered, "redelivered num");
      cell(row, c.dead_lettered, "dead-lettered num" + (c.dead_lettered > 0 ? " alert" : ""));
    }
    note.textContent = data.consumers.length === 0
      ? "no consumer named in letterbox_metrics::consumer_observer(name)"
      : data.rate_window_seconds === null ? "rates need a second sample"
      : "rates over the last " + duration(data.rate_window_seconds) +
        "; failed counts failures no layer decided on and rejects";
  } catch (err) {
    body.replaceChildren();
    note.textContent = err.code === "no_consumer_metrics"
      ? "no metrics registry: give the server letterbox_metrics (http_server::watch_consumers)"
      : "cannot read the consumers: " + err.message;
  }
}

// ---- topology lint --------------------------------------------------------------------------
const severityRank = { error: 0, warning: 1, info: 2 };

async function loadFindings() {
  const note = $("#lint-note");
  const body = $("#lint tbody");
  note.textContent = "checking\u2026";
  try {
    const data = await call("GET", "/topology/findings");
    body.replaceChildren();
    const list = [...data.findings].sort((a, b) =>
      (severityRank[a.severity] ?? 3) - (severityRank[b.severity] ?? 3));
    for (const f of list) {
      const row = body.insertRow();
      row.dataset.code = f.code;
      const sev = row.insertCell();
      sev.className = "severity";
      const badge = el("span", "badge", text(f.severity));
      if (Object.hasOwn(severityRank, f.severity)) badge.classList.add(f.severity);
      sev.append(badge);
      cell(row, f.code, "code");
      for (const [key, cls] of [["objects", "objects"], ["versions", "versions"]]) {
        const td = row.insertCell();
        td.className = cls;
        for (const o of Array.isArray(f[key]) ? f[key] : [f[key]]) td.append(el("div", "", text(o)));
      }
      cell(row, f.why, "why");
      cell(row, f.fix, "fix");
    }
    const n = (s, one, many) => {
      const k = list.filter((f) => f.severity === s).length;
      return k + " " + (k === 1 ? one : many);
    };
    note.textContent = list.length === 0 ? "no findings" :
      n("error", "error", "errors") + ", " + n("warning", "warning", "warnings") + ", " +
      n("info", "note", "notes") + "; checked " + utc(new Date());
  } catch (err) {
    body.replaceChildren();
    note.textContent = err.code === "no_topology_check"
      ? "not configured (http_server::set_topology_check)"
      : "cannot run the topology check: " + err.message;
  }
}
$("#lint-refresh").addEventListener("click", loadFindings);

async function refreshPanels() {
  await Promise.all([loadOutbox(), loadConsumers()]);
}

async function refresh() {
  try {
    await loadQueues();
    await loadEntries();
  } catch (err) {
    say("cannot load: " + err.message, true);
  }
}

refresh();
refreshPanels();
loadFindings();
setInterval(refresh, 10000);
setInterval(refreshPanels, 5000);
</script>
</body>
</html>
)HTML";
}

} // namespace letterbox::ops::detail
