// The fusebox call node: calls an endpoint or chain of `fusebox serve` and
// sends the message to one of three outputs, answered, stale or down, with
// msg.fusebox saying what the daemon said, and the circuit's state as the
// node's status.
"use strict";

const answer = require("./lib/answer");

// The default time to wait for the daemon, above the example chain's 20s
// deadline: the daemon answers a chain within its deadline.
const DEFAULT_TIMEOUT_S = 30;
// The longest msg.path taken; the daemon's own URL limit is larger.
const MAX_SUBPATH = 2048;

module.exports = function (RED) {
    function FuseboxCallNode(config) {
        RED.nodes.createNode(this, config);
        const node = this;
        node.daemon = RED.nodes.getNode(config.daemon);
        node.target = (config.target || "").trim();
        node.method = config.method === "POST" ? "POST" : "GET";
        const t = Number(config.timeout);
        node.timeoutMs = (t > 0 ? t : DEFAULT_TIMEOUT_S) * 1000;
        let closed = false;

        if (!node.daemon) {
            node.status({ fill: "red", shape: "ring", text: "no daemon configured" });
        } else if (!node.target) {
            node.status({ fill: "red", shape: "ring", text: "no endpoint or chain named" });
        }

        node.on("input", function (msg, send, done) {
            if (!node.daemon) return done("no fusebox daemon configured");
            if (!node.target) return done("no endpoint or chain named");
            let subpath = "";
            if (msg.path !== undefined && msg.path !== null && msg.path !== "") {
                if (typeof msg.path !== "string" || msg.path.length > MAX_SUBPATH) {
                    return done("msg.path must be a string of at most " + MAX_SUBPATH + " characters");
                }
                subpath = msg.path.replace(/^\/+/, "");
            }
            let body, contentType;
            if (node.method === "POST" && msg.payload !== undefined && msg.payload !== null) {
                if (Buffer.isBuffer(msg.payload)) {
                    body = msg.payload;
                    contentType = "application/octet-stream";
                } else if (typeof msg.payload === "string") {
                    body = Buffer.from(msg.payload);
                    contentType = "text/plain; charset=utf-8";
                } else {
                    body = Buffer.from(JSON.stringify(msg.payload));
                    contentType = "application/json";
                }
            }
            node.status({ fill: "blue", shape: "dot", text: "calling" });
            node.daemon.request({
                target: node.target, subpath: subpath, method: node.method,
                body: body, contentType: contentType, timeoutMs: node.timeoutMs,
            }, function (err, res, raw) {
                if (closed) return done();
                if (err && err.tooLarge) { // a setting to change, not an outage
                    node.daemon.noteReachable(true);
                    node.status({ fill: "red", shape: "ring", text: "answer too large" });
                    return done(err.message);
                }
                if (err) {
                    const r = answer.fromFailure(err, err.timedOut === true);
                    if (node.daemon.noteReachable(false)) {
                        node.warn("fusebox daemon " + node.daemon.url + ": " + r.fusebox.error + "; sending to the down output until it answers");
                    }
                    node.status(r.status);
                    msg.fusebox = r.fusebox;
                    send([null, null, msg]);
                    return done();
                }
                if (node.daemon.noteReachable(true)) {
                    node.log("fusebox daemon " + node.daemon.url + " answers again");
                }
                const payload = decode(res.headers["content-type"], raw);
                const r = answer.fromResponse(res.statusCode, res.headers, payload, new Date());
                node.status(r.status);
                msg.statusCode = res.statusCode;
                msg.headers = res.headers;
                if (r.error) {
                    msg.payload = payload;
                    return done(r.error);
                }
                msg.fusebox = r.fusebox;
                if (r.output !== answer.DOWN) {
                    msg.payload = payload;
                }
                const out = [null, null, null];
                out[r.output] = msg;
                send(out);
                done();
            });
        });

        node.on("close", function () {
            closed = true;
            node.status({});
        });
    }

    // decode makes a body into what msg.payload holds: a parsed JSON value,
    // a string of text, or else the bytes.
    function decode(contentType, raw) {
        const ct = String(contentType || "").toLowerCase();
        if (ct.includes("json")) {
            try {
                return JSON.parse(raw.toString("utf8"));
            } catch (_) {
                return raw.toString("utf8");
            }
        }
        if (ct === "" || ct.startsWith("text/") || ct.includes("xml")) {
            return raw.toString("utf8");
        }
        return raw;
    }

    RED.nodes.registerType("fusebox call", FuseboxCallNode);
};
