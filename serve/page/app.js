// The fusebox status page: every circuit's state, last failure, time open
// and a chart of its outages over the last 24 hours, from the daemon's API.
// It loads nothing but this file, style.css and the API, so it works offline.
"use strict";

const REFRESH_MS = 5000;
const STATES = { closed: "closed", open: "open", half_open: "half-open", forced_open: "forced open" };

// A token given as #token=... in the page's address is sent with each API
// call, for a daemon that requires one; it never leaves this page.
function headers() {
  const m = /(?:^#|&)token=([^&]+)/.exec(location.hash);
  return m ? { Authorization: "Bearer " + decodeURIComponent(m[1]) } : {};
}

async function getJSON(path) {
  const r = await fetch(path, { headers: headers(), cache: "no-store" });
  if (!r.ok) throw new Error(path + ": " + r.status + " " + r.statusText);
  return r.json();
}

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  for (const c of children) e.append(c);
  return e;
}

function svg(tag, attrs) {
  const e = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  return e;
}

function human(ms) {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return s + "s";
  const m = Math.floor(s / 60);
  if (m < 60) return m + "m" + String(s % 60).padStart(2, "0") + "s";
  const h = Math.floor(m / 60);
  if (h < 48) return h + "h" + String(m % 60).padStart(2, "0") + "m";
  return Math.floor(h / 24) + "d";
}

function chart(outages, from, to) {
  const span = to - from;
  const s = svg("svg", { class: "chart", viewBox: "0 0 1000 20", preserveAspectRatio: "none", role: "img" });
  s.append(svg("rect", { class: "track", x: 0, y: 0, width: 1000, height: 20 }));
  let down = 0;
  for (const o of outages) {
    const a = Math.max(from, Date.parse(o.from)), b = Math.min(to, Date.parse(o.to));
    if (b <= a) continue;
    down += b - a;
    const r = svg("rect", {
      class: o.forced ? "out forced" : "out",
      x: ((a - from) / span) * 1000, y: 0, height: 20,
      width: Math.max(5, ((b - a) / span) * 1000), // a short outage stays visible
    });
    const t = svg("title", {});
    t.textContent = new Date(a).toLocaleString() + " – " + new Date(b).toLocaleTimeString() + (o.reason ? ": " + o.reason : "");
    r.append(t);
    s.append(r);
  }
  s.setAttribute("aria-label", down ? "down " + human(down) + " in the last 24 hours" : "no outage in the last 24 hours");
  return s;
}

// card is one circuit: its state, facts and chart. drawn is its entry of
// the outages timeline: the newest outages, and how many came earlier in
// the window (the daemon lists at most its newest hundred).
function card(row, drawn, from, to, now) {
  const state = row.state;
  const facts = el("div", { class: "facts" });
  if (state !== "closed" && row.opened_at) {
    facts.append(el("div", { class: "open-for" }, "open for " + human(now - Date.parse(row.opened_at))));
  }
  if (row.open_until && state === "open") {
    facts.append(el("div", {}, "probe in " + human(Date.parse(row.open_until) - now)));
  }
  if (row.open_until && state === "forced_open") {
    facts.append(el("div", {}, "closes in " + human(Date.parse(row.open_until) - now)));
  }
  facts.append(el("div", { class: "last-failure" },
    row.last_failure ? "last failure: " + row.last_failure + (row.last_failure_at ? " (" + human(now - Date.parse(row.last_failure_at)) + " ago)" : "")
                     : "no failure recorded"));
  if (drawn.earlier) {
    facts.append(el("div", { class: "earlier" },
      drawn.earlier + " earlier outage" + (drawn.earlier === 1 ? "" : "s") + " in these 24 hours, not drawn"));
  }
  return el("article", { class: "circuit", "data-name": row.name, "data-state": state },
    el("div", { class: "top" },
      el("span", { class: "name" }, row.name),
      el("span", { class: "badge " + state }, STATES[state] || state)),
    facts,
    chart(drawn.outages || [], from, to),
    el("div", { class: "axis", "aria-hidden": "true" }, el("span", {}, "24h ago"), el("span", {}, "now")));
}

async function refresh() {
  const error = document.getElementById("error");
  try {
    const [rows, timeline] = await Promise.all([getJSON("api/circuits"), getJSON("api/outages")]);
    const now = Date.now();
    const from = Date.parse(timeline.from), to = Date.parse(timeline.to);
    const byName = new Map(timeline.circuits.map((c) => [c.name, c]));
    const circuits = rows.filter((r) => r.kind !== "chain");
    const chains = rows.filter((r) => r.kind === "chain");
    document.getElementById("circuits").replaceChildren(
      ...circuits.map((r) => card(r, byName.get(r.name) || {}, from, to, now)));
    document.getElementById("chains").replaceChildren(
      ...chains.map((c) => el("li", {}, c.name + ": " + (c.endpoints || []).join(" → ") +
        (c.last_source ? " (last answer from " + c.last_source + ")" : ""))));
    document.getElementById("chains-section").hidden = chains.length === 0;
    const notClosed = circuits.filter((r) => r.state !== "closed").length;
    document.getElementById("summary").textContent =
      (notClosed ? notClosed + " of " + circuits.length + " circuits not closed" : "all " + circuits.length + " circuits closed") +
      " · updated " + new Date(now).toLocaleTimeString();
    error.hidden = true;
  } catch (e) {
    error.textContent = "cannot reach the daemon: " + e.message;
    error.hidden = false;
  }
}

refresh();
setInterval(refresh, REFRESH_MS);
