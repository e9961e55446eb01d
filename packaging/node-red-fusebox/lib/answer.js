// What a fusebox call node makes of the daemon's answer: which output it
// goes to, what msg.fusebox says, and the node's status. Pure functions of
// the answer and the time, so that a test can give both; the daemon is a
// peer like any other, so every header is read as untrusted text.
"use strict";

// The outputs of a fusebox call node, in order.
const ANSWERED = 0;
const STALE = 1;
const DOWN = 2;

// The daemon's headers (serve/call.go), as Node.js lowercases them.
const H = {
    source: "x-fusebox-source",
    answered: "x-fusebox-answered",
    attempts: "x-fusebox-attempts",
    staleAge: "x-fusebox-stale-age",
    shared: "x-fusebox-shared",
    age: "age",
    retryAfter: "retry-after",
};

// The longest endpoint name a status shows; a longer one is cut.
const STATUS_NAME_MAX = 40;

// seconds reads a header of whole seconds, as the daemon writes them, or
// returns undefined for anything else (absent, negative, a date, junk).
function seconds(v) {
    if (typeof v !== "string" || !/^[0-9]{1,10}$/.test(v)) {
        return undefined;
    }
    return Number(v);
}

// short cuts a peer's text for a status line.
function short(s) {
    return s.length > STATUS_NAME_MAX ? s.slice(0, STATUS_NAME_MAX - 1) + "…" : s;
}

// clock formats the local time of a Date as HH:MM, rounded up to the
// minute: a circuit open until 14:02:10 is shown "open until 14:03", never
// as a time before it may be probed. A time on another day than now gets
// its date: 2026-12-03 14:03.
function clock(d, now) {
    const up = new Date(Math.ceil(d.getTime() / 60000) * 60000);
    const two = (n) => String(n).padStart(2, "0");
    const time = two(up.getHours()) + ":" + two(up.getMinutes());
    if (up.getFullYear() === now.getFullYear() && up.getMonth() === now.getMonth() && up.getDate() === now.getDate()) {
        return time;
    }
    return up.getFullYear() + "-" + two(up.getMonth() + 1) + "-" + two(up.getDate()) + " " + time;
}

// ago formats a number of seconds as the largest whole unit: 45s, 5m, 3h, 2d.
function ago(s) {
    if (s < 60) return s + "s";
    if (s < 3600) return Math.floor(s / 60) + "m";
    if (s < 86400) return Math.floor(s / 3600) + "h";
    return Math.floor(s / 86400) + "d";
}

// fromResponse classifies an answer of the daemon's /call: status code,
// headers (Node.js's lowercased object) and body (a parsed JSON value when
// it was one). It returns {output, fusebox, status}, or {error, status}
// for a refusal of the daemon's own (a wrong token, an unknown name): a
// mistake to fix, not an outage, which the node reports as an error.
function fromResponse(statusCode, headers, body, now) {
    const source = headers[H.source];
    if (typeof source === "string" && source !== "") {
        const f = { source: source, statusCode: statusCode };
        const attempts = seconds(headers[H.attempts]);
        if (attempts !== undefined) f.attempts = attempts;
        if (headers[H.shared] === "true") f.shared = true;
        if (source === "fresh" || source === "stale") {
            if (typeof headers[H.answered] === "string") f.answered = headers[H.answered];
            const age = seconds(headers[H.age]);
            if (age !== undefined) f.age = age;
        }
        if (source === "stale") {
            const staleAge = seconds(headers[H.staleAge]);
            if (staleAge !== undefined) f.staleAge = staleAge;
            const from = f.answered ? " · " + short(f.answered) : "";
            const age = f.staleAge !== undefined ? " " + ago(f.staleAge) : "";
            return { output: STALE, fusebox: f, status: { fill: "yellow", shape: "ring", text: "stale" + age + from } };
        }
        if (source === "fresh") {
            const from = f.answered ? " · " + short(f.answered) : "";
            return { output: ANSWERED, fusebox: f, status: { fill: "green", shape: "ring", text: "fresh" + from } };
        }
        return { output: ANSWERED, fusebox: f, status: { fill: "green", shape: "dot", text: "closed · " + short(source) } };
    }
    const problem = body !== null && typeof body === "object" && !Buffer.isBuffer(body) ? body : {};
    const reason = typeof problem.error === "string" ? problem.error : "";
    if (statusCode === 503) {
        const f = { statusCode: 503, error: reason || "no endpoint could answer" };
        if (Array.isArray(problem.errors)) f.errors = problem.errors;
        const attempts = seconds(headers[H.attempts]);
        if (attempts !== undefined) f.attempts = attempts;
        const retryAfter = seconds(headers[H.retryAfter]);
        if (retryAfter === undefined) {
            return { output: DOWN, fusebox: f, status: { fill: "red", shape: "ring", text: "down" } };
        }
        f.retryAfter = retryAfter;
        const until = new Date(now.getTime() + retryAfter * 1000);
        f.openUntil = until.toISOString();
        return { output: DOWN, fusebox: f, status: { fill: "red", shape: "ring", text: "open until " + clock(until, now) } };
    }
    const text = "fusebox daemon answered " + statusCode + (reason ? ": " + reason : "");
    if (statusCode === 401) {
        // The daemon's token check: no outage, a setting to fix.
        return {
            error: text + " (give the fusebox-daemon node the daemon's token)",
            status: { fill: "red", shape: "ring", text: "wrong token" },
        };
    }
    return { error: text, status: { fill: "red", shape: "ring", text: short(statusCode + (reason ? " " + reason : "")) } };
}

// fromFailure classifies a call that got no answer: the daemon not
// listening, the connection lost, or no answer within the node's timeout
// (timedOut). It always goes to the down output.
function fromFailure(err, timedOut) {
    const f = { error: timedOut ? "no answer from the fusebox daemon in time" : String(err && err.message || err) };
    if (err && typeof err.code === "string" && !timedOut) f.code = err.code;
    if (timedOut) f.code = "ETIMEDOUT";
    const text = timedOut ? "daemon timed out" : "daemon unreachable";
    return { output: DOWN, fusebox: f, status: { fill: "red", shape: "ring", text: text } };
}

module.exports = { ANSWERED, STALE, DOWN, fromResponse, fromFailure };
