// lib/answer.js: what a fusebox call node makes of each answer of the
// daemon, at a given time. Run with `npm test` (node --test) with TZ=UTC:
// statuses show the local time.
"use strict";

const test = require("node:test");
const assert = require("node:assert");
const answer = require("../lib/answer");

const now = new Date(Date.UTC(2026, 11, 2, 14, 1, 10));

test("an endpoint's answer: answered, a green dot naming it", () => {
    const r = answer.fromResponse(200, { "x-fusebox-source": "openweather", "x-fusebox-attempts": "1" }, 21.5, now);
    assert.deepStrictEqual(r, {
        output: answer.ANSWERED,
        fusebox: { source: "openweather", statusCode: 200, attempts: 1 },
        status: { fill: "green", shape: "dot", text: "closed · openweather" },
    });
});

test("a shared answer says so", () => {
    const r = answer.fromResponse(200, { "x-fusebox-source": "wttr", "x-fusebox-attempts": "1", "x-fusebox-shared": "true" }, 21, now);
    assert.strictEqual(r.fusebox.shared, true);
});

test("a fresh stored answer: answered, a green ring naming its endpoint", () => {
    const h = { "x-fusebox-source": "fresh", "x-fusebox-answered": "openweather", "x-fusebox-attempts": "0", age: "120" };
    const r = answer.fromResponse(200, h, 21.5, now);
    assert.deepStrictEqual(r, {
        output: answer.ANSWERED,
        fusebox: { source: "fresh", statusCode: 200, attempts: 0, answered: "openweather", age: 120 },
        status: { fill: "green", shape: "ring", text: "fresh · openweather" },
    });
});

test("a stale answer: stale, a yellow ring with its age in the largest whole unit", () => {
    for (const [age, text] of [["45", "45s"], ["300", "5m"], ["7199", "1h"], ["172800", "2d"]]) {
        const h = { "x-fusebox-source": "stale", "x-fusebox-answered": "wttr", "x-fusebox-stale-age": age, age: age };
        const r = answer.fromResponse(200, h, 21, now);
        assert.strictEqual(r.output, answer.STALE);
        assert.strictEqual(r.fusebox.staleAge, Number(age));
        assert.deepStrictEqual(r.status, { fill: "yellow", shape: "ring", text: "stale " + text + " · wttr" });
    }
});

test("a 503 with Retry-After: down, open until that time rounded up to the minute, with its date when not today", () => {
    for (const [after, until, shown] of [
        ["60", "2026-12-02T14:02:10.000Z", "open until 14:03"],
        ["50", "2026-12-02T14:02:00.000Z", "open until 14:02"],
        ["86400", "2026-12-03T14:01:10.000Z", "open until 2026-12-03 14:02"],
        ["35929", "2026-12-02T23:59:59.000Z", "open until 2026-12-03 00:00"],
    ]) {
        const body = { error: "every endpoint failed", errors: [{ name: "openweather", reason: "circuit open" }] };
        const r = answer.fromResponse(503, { "retry-after": after, "x-fusebox-attempts": "0" }, body, now);
        assert.deepStrictEqual(r, {
            output: answer.DOWN,
            fusebox: { statusCode: 503, error: "every endpoint failed", errors: body.errors, attempts: 0, retryAfter: Number(after), openUntil: until },
            status: { fill: "red", shape: "ring", text: shown },
        });
    }
});

test("a 503 without Retry-After, or with what the daemon never sends: down, no time", () => {
    for (const h of [{}, { "retry-after": "Wed, 21 Oct 2015 07:28:00 GMT" }, { "retry-after": "-1" }, { "retry-after": "99999999999" }]) {
        const r = answer.fromResponse(503, h, "not json", now);
        assert.deepStrictEqual(r, {
            output: answer.DOWN,
            fusebox: { statusCode: 503, error: "no endpoint could answer" },
            status: { fill: "red", shape: "ring", text: "down" },
        });
    }
});

test("the daemon's own refusal: an error naming its status and reason", () => {
    const r = answer.fromResponse(404, {}, { error: "no such endpoint or chain in the config", name: "nosuch" }, now);
    assert.deepStrictEqual(r, {
        error: "fusebox daemon answered 404: no such endpoint or chain in the config",
        status: { fill: "red", shape: "ring", text: "404 no such endpoint or chain in the co…" },
    });
});

test("a refused token: an error saying where the token goes, and the status says the token is wrong", () => {
    const r = answer.fromResponse(401, { "www-authenticate": "Bearer" }, { error: "missing or wrong token" }, now);
    assert.deepStrictEqual(r, {
        error: "fusebox daemon answered 401: missing or wrong token (give the fusebox-daemon node the daemon's token)",
        status: { fill: "red", shape: "ring", text: "wrong token" },
    });
});

test("junk headers are left out, a long name cut in the status", () => {
    const long = "x".repeat(1000);
    const r = answer.fromResponse(200, { "x-fusebox-source": long, "x-fusebox-attempts": "1e3", "x-fusebox-shared": "yes" }, "", now);
    assert.deepStrictEqual(r.fusebox, { source: long, statusCode: 200 });
    assert.strictEqual(r.status.text, "closed · " + "x".repeat(39) + "…");
});

test("no answer: down, with the connection's code, or ETIMEDOUT", () => {
    const refused = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:8417"), { code: "ECONNREFUSED" });
    assert.deepStrictEqual(answer.fromFailure(refused, false), {
        output: answer.DOWN,
        fusebox: { error: "connect ECONNREFUSED 127.0.0.1:8417", code: "ECONNREFUSED" },
        status: { fill: "red", shape: "ring", text: "daemon unreachable" },
    });
    const aborted = Object.assign(new Error("This operation was aborted"), { code: "ABORT_ERR" });
    assert.deepStrictEqual(answer.fromFailure(aborted, true), {
        output: answer.DOWN,
        fusebox: { error: "no answer from the fusebox daemon in time", code: "ETIMEDOUT" },
        status: { fill: "red", shape: "ring", text: "daemon timed out" },
    });
});
