// The fusebox-daemon config node: where `fusebox serve` listens, its token,
// and the one HTTP agent every fusebox call node using it shares.
"use strict";

const http = require("http");

// The daemon's defaults (packaging/README.md): its address, and the
// largest body it takes from an upstream (max_body), which is the largest
// answer it can give.
const DEFAULT_URL = "http://127.0.0.1:8417";
const DEFAULT_MAX_KIB = 10 * 1024;
// Connections kept to the daemon: calls beyond it wait for one.
const MAX_SOCKETS = 8;

// waitValue is a timeout as X-Fusebox-Wait says it: whole seconds ("30"),
// or milliseconds for a fraction of one ("2500ms").
function waitValue(ms) {
    return ms % 1000 === 0 ? String(ms / 1000) : Math.ceil(ms) + "ms";
}

module.exports = function (RED) {
    function FuseboxDaemonNode(config) {
        RED.nodes.createNode(this, config);
        const node = this;
        node.url = (config.url || DEFAULT_URL).trim();
        const kib = Number(config.maxKiB);
        node.maxBytes = (Number.isInteger(kib) && kib > 0 ? kib : DEFAULT_MAX_KIB) * 1024;
        let base;
        try {
            base = new URL(node.url);
            if (base.protocol !== "http:" || base.search || base.hash || base.username || base.password) {
                throw new Error("want http://HOST:PORT, as fusebox serve listens");
            }
        } catch (err) {
            node.invalid = "fusebox daemon URL " + JSON.stringify(node.url) + ": " + err.message;
            node.error(node.invalid);
        }
        // The prefix of every call's path: a daemon behind a reverse proxy
        // may sit below a path.
        const prefix = base ? base.pathname.replace(/\/+$/, "") : "";
        const agent = new http.Agent({ keepAlive: true, maxSockets: MAX_SOCKETS });
        const inFlight = new Set();
        let reachable = true;

        // request calls the daemon's /call/NAME[/SUBPATH] and calls back
        // once, with (err) or (null, res, body): res an IncomingMessage
        // whose body (a Buffer of at most maxBytes) was read in full.
        // timeoutMs bounds the whole call, body included; err.timedOut
        // says when it ran out, err.tooLarge that the answer was too long.
        node.request = function (opts, done) {
            if (node.invalid) {
                return done(new Error(node.invalid));
            }
            const path = prefix + "/call/" + encodeURIComponent(opts.target) + (opts.subpath ? "/" + opts.subpath : "");
            // The caller's own timeout: the daemon answers within it (the
            // best answer by then, or a 503) rather than after it gave up.
            const headers = { Accept: "application/json, */*", "X-Fusebox-Wait": waitValue(opts.timeoutMs) };
            const token = node.credentials && node.credentials.token;
            if (token) {
                headers.Authorization = "Bearer " + token;
            }
            if (opts.body !== undefined) {
                headers["Content-Type"] = opts.contentType;
                headers["Content-Length"] = opts.body.length;
            }
            const ac = new AbortController();
            let finished = false;
            let timedOut = false;
            const timer = setTimeout(() => { timedOut = true; ac.abort(); }, opts.timeoutMs);
            const finish = (err, res, body) => {
                if (finished) return;
                finished = true;
                clearTimeout(timer);
                inFlight.delete(ac);
                if (err && timedOut) err.timedOut = true;
                done(err, res, body);
            };
            let req;
            try {
                req = http.request({
                    host: base.hostname, port: base.port || 80, path: path, method: opts.method,
                    headers: headers, agent: agent, signal: ac.signal,
                });
            } catch (err) { // a path Node.js refuses (a space, a control character)
                return finish(err);
            }
            inFlight.add(ac);
            req.on("error", (err) => finish(err));
            // An answer over maxBytes is cut off, the connection closed:
            // err.tooLarge, an answer the daemon did give.
            const tooLarge = (res, what) => {
                res.destroy();
                const err = new Error("the daemon's answer is " + what + ", over the " + node.maxBytes + " bytes this node takes");
                err.tooLarge = true;
                finish(err);
            };
            req.on("response", (res) => {
                const declared = Number(res.headers["content-length"]);
                if (declared > node.maxBytes) {
                    return tooLarge(res, declared + " bytes");
                }
                const chunks = [];
                let size = 0;
                res.on("data", (c) => {
                    size += c.length;
                    if (size > node.maxBytes) {
                        return tooLarge(res, "longer");
                    }
                    chunks.push(c);
                });
                res.on("error", (err) => finish(err));
                res.on("end", () => finish(null, res, Buffer.concat(chunks)));
                // A connection lost mid-answer may end with neither.
                res.on("close", () => finish(new Error("the daemon's connection closed before its answer was complete")));
            });
            req.end(opts.body);
        };

        // noteReachable records whether the last call reached the daemon and
        // reports whether that changed: a call node logs the change, once,
        // rather than every failed call of an outage.
        node.noteReachable = function (ok) {
            const changed = ok !== reachable;
            reachable = ok;
            return changed;
        };

        node.on("close", function () {
            for (const ac of inFlight) ac.abort();
            inFlight.clear();
            agent.destroy();
        });
    }

    RED.nodes.registerType("fusebox-daemon", FuseboxDaemonNode, {
        credentials: { token: { type: "password" } },
    });
};
