package packaging_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// hostileDaemon is a raw TCP server on loopback in the place of `fusebox
// serve`, answering each /call/NAME as no daemon should (see serve).
type hostileDaemon struct {
	Addr    string
	Arrived chan string // the NAME of each call that will get no answer, once its request is read
	HungUp  chan string // the NAME of each call whose caller closed the connection
}

// hostileAnswers are the answers of a hostileDaemon, by NAME: each a whole
// answer, written and the connection closed; the other NAMEs are handled
// by serve.
var hostileAnswers = map[string]string{
	// Headers a daemon never sends, and a body that is not the JSON its
	// type says.
	"junk": rawAnswer("200 OK", "X-Fusebox-Source: junk\r\nX-Fusebox-Attempts: lots\r\nX-Fusebox-Stale-Age: -5\r\n", "{"),
	// A 503 with a Retry-After date (the daemon sends seconds) and errors
	// that are not a list.
	"junk503": rawAnswer("503 Service Unavailable", "Retry-After: Wed, 21 Oct 2015 07:28:00 GMT\r\n",
		`{"error": "x", "errors": "not one"}`),
	// The daemon's own refusal of a name not in its config.
	"nosuch": rawAnswer("404 Not Found", "", `{"error": "no such endpoint or chain in the config", "name": "nosuch"}`),
}

// rawAnswer is a whole HTTP/1.1 answer with a JSON body, after which the
// connection closes.
func rawAnswer(status, headers, body string) string {
	return fmt.Sprintf("HTTP/1.1 %s\r\n%sContent-Type: application/json\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s",
		status, headers, len(body), body)
}

// echoed is what /call/echo answers: the request it got.
type echoed struct {
	Method      string `json:"method"`
	Path        string `json:"path"`
	ContentType string `json:"content_type"`
	Body        string `json:"body"`
	Wait        string `json:"wait"` // the X-Fusebox-Wait header
}

func startHostileDaemon(t *testing.T) *hostileDaemon {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &hostileDaemon{Addr: ln.Addr().String(), Arrived: make(chan string, 16), HungUp: make(chan string, 16)}
	var wg sync.WaitGroup
	var mu sync.Mutex
	conns := map[net.Conn]bool{}
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns[c] = true
			mu.Unlock()
			wg.Go(func() {
				defer c.Close()
				h.serve(c)
			})
		}
	})
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return h
}

func (h *hostileDaemon) serve(c net.Conn) {
	br := bufio.NewReader(c)
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	name, _, _ := strings.Cut(strings.TrimPrefix(req.URL.Path, "/call/"), "/")
	if a, ok := hostileAnswers[name]; ok {
		io.WriteString(c, a)
		return
	}
	switch name {
	case "echo":
		body, _ := io.ReadAll(io.LimitReader(req.Body, 1<<20))
		b, _ := json.Marshal(echoed{Method: req.Method, Path: req.URL.Path,
			ContentType: req.Header.Get("Content-Type"), Body: string(body), Wait: req.Header.Get("X-Fusebox-Wait")})
		io.WriteString(c, rawAnswer("200 OK", "X-Fusebox-Source: echo\r\n", string(b)))
		return
	case "declared": // an answer longer than any node takes, said up front
		io.WriteString(c, "HTTP/1.1 200 OK\r\nX-Fusebox-Source: declared\r\nContent-Length: 1000000000000\r\n\r\n[1,")
		io.Copy(io.Discard, br) // until the caller hangs up
	case "endless": // an answer that never ends
		io.WriteString(c, "HTTP/1.1 200 OK\r\nX-Fusebox-Source: endless\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
		chunk := fmt.Sprintf("%x\r\n%s\r\n", 64<<10, strings.Repeat("1", 64<<10))
		for {
			if _, err := io.WriteString(c, chunk); err != nil {
				break
			}
		}
	case "silent": // no answer at all
		h.Arrived <- name
		io.Copy(io.Discard, br)
	default:
		return
	}
	h.HungUp <- name
}

// waitHungUp waits until the caller of /call/name has closed its
// connection.
func (h *hostileDaemon) waitHungUp(t *testing.T, name string) {
	t.Helper()
	select {
	case got := <-h.HungUp:
		if got != name {
			t.Fatalf("the caller of %s hung up, want %s", got, name)
		}
	case <-time.After(time.Minute):
		t.Fatalf("the node still holds the connection of %s after a minute: it reads an answer without bound", name)
	}
}

// rawCall is a call node of hostileFlow, pressed by the inject node
// hostile.inject.ID, which sends the message props sets (the inject node's
// props: msg.path, msg.payload).
type rawCall struct {
	ID, Target, Method string
	Timeout            float64 // seconds; 60 if 0
	Props              []map[string]string
}

// waitArrived waits until a call that gets no answer has been received.
func (h *hostileDaemon) waitArrived(t *testing.T) {
	t.Helper()
	select {
	case <-h.Arrived:
	case <-time.After(time.Minute):
		t.Fatal("no call to silent arrived in a minute")
	}
}

// hostileFlow is a flow of call nodes hostile.call.ID, each calling the
// daemon at addr, the three outputs of all to the debug nodes
// hostile.answered, .stale and .down, and every error to the debug node
// hostile.caught, through a catch node.
func hostileFlow(addr string, calls []rawCall) []map[string]any {
	const tab = "hostile.tab"
	full := func(id string) map[string]any {
		return map[string]any{"id": id, "type": "debug", "z": tab, "active": true, "tosidebar": true,
			"complete": "true", "targetType": "full", "wires": []any{}}
	}
	nodes := []map[string]any{
		{"id": tab, "type": "tab", "label": "hostile"},
		{"id": "hostile.daemon", "type": "fusebox-daemon", "url": "http://" + addr, "maxKiB": 64},
		full("hostile.answered"), full("hostile.stale"), full("hostile.down"), full("hostile.caught"),
		{"id": "hostile.catch", "type": "catch", "z": tab, "scope": nil, "uncaught": false,
			"wires": []any{[]any{"hostile.caught"}}},
	}
	for _, c := range calls {
		if c.Method == "" {
			c.Method = "GET"
		}
		if c.Timeout == 0 {
			c.Timeout = 60
		}
		props := []any{}
		for _, p := range c.Props {
			props = append(props, p)
		}
		nodes = append(nodes,
			map[string]any{"id": "hostile.inject." + c.ID, "type": "inject", "z": tab, "props": props,
				"repeat": "", "once": false, "wires": []any{[]any{"hostile.call." + c.ID}}},
			map[string]any{"id": "hostile.call." + c.ID, "type": "fusebox call", "z": tab, "daemon": "hostile.daemon",
				"target": c.Target, "method": c.Method, "timeout": c.Timeout,
				"wires": []any{[]any{"hostile.answered"}, []any{"hostile.stale"}, []any{"hostile.down"}}})
	}
	return nodes
}

// caught reads the error the call node id reports, as the catch node
// passes it on (Node-RED logs an error a catch node handles no further).
func caught(t *testing.T, sb *sidebar, id string) string {
	t.Helper()
	m := sb.next(t)
	if m.ID != "hostile.caught" {
		t.Fatalf("debug node %s showed %s, want hostile.caught with %s's error", m.ID, m.Msg, id)
	}
	var msg struct {
		Error struct {
			Message string `json:"message"`
			Source  struct {
				ID string `json:"id"`
			} `json:"source"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(m.Msg), &msg); err != nil {
		t.Fatalf("hostile.caught's msg %q: %v", m.Msg, err)
	}
	if msg.Error.Source.ID != id {
		t.Fatalf("the catch node caught an error of %s (%s), want %s's", msg.Error.Source.ID, msg.Error.Message, id)
	}
	return msg.Error.Message
}

// TestNodeREDPackageHostileDaemon points the package's nodes, in a real
// Node-RED, at a raw TCP server in the daemon's place: msg.path and
// msg.payload reach it as the daemon takes them (a subpath, a POST's body
// as JSON or text); headers and bodies
// no daemon sends are read as nothing; a refusal is the node's error, for
// a catch node; an answer over the config node's size is cut off by
// hanging up, as is an answer that never comes, after the call node's
// timeout, which sends the message to the down output.
func TestNodeREDPackageHostileDaemon(t *testing.T) {
	t.Parallel()
	node, red := npmInstalled(t, NodeREDVar, "node-red/red.js", "npm install --prefix DIR node-red@4.1.15")
	h := startHostileDaemon(t)
	n := startNodeREDWithPackage(t, node, red)
	sb := n.debugSidebar(t)
	var calls []rawCall
	for _, name := range []string{"junk", "junk503", "nosuch", "declared", "endless"} {
		calls = append(calls, rawCall{ID: name, Target: name})
	}
	calls = append(calls,
		rawCall{ID: "silent", Target: "silent", Timeout: 1},
		rawCall{ID: "waiting", Target: "silent"},
		rawCall{ID: "subpath", Target: "echo", Props: []map[string]string{
			{"p": "path", "v": "/api/states/sensor.garden_temp", "vt": "str"},
			{"p": "payload", "v": "not sent", "vt": "str"}}},
		rawCall{ID: "post-json", Target: "echo", Method: "POST", Props: []map[string]string{
			{"p": "payload", "v": `{"message": "door open"}`, "vt": "json"}}},
		rawCall{ID: "post-text", Target: "echo", Method: "POST", Props: []map[string]string{
			{"p": "payload", "v": "door open", "vt": "str"}}},
		rawCall{ID: "wait-fraction", Target: "echo", Timeout: 2.5},
	)
	flow := hostileFlow(h.Addr, calls)
	n.deploy(t, sb, flow)

	// echo answers with the request it got, as the daemon passes one on,
	// and the node's timeout it was sent as X-Fusebox-Wait.
	for _, c := range []struct {
		id                string
		method, path      string
		contentType, body string
		wait              string
	}{
		{"subpath", "GET", "/call/echo/api/states/sensor.garden_temp", "", "", "60"},
		{"post-json", "POST", "/call/echo", "application/json", `{"message":"door open"}`, "60"},
		{"post-text", "POST", "/call/echo", "text/plain; charset=utf-8", "door open", "60"},
		{"wait-fraction", "GET", "/call/echo", "", "", "2500ms"},
	} {
		t.Run("msg.path, msg.payload and the timeout sent: "+c.id, func(t *testing.T) {
			n.inject(t, "hostile.inject."+c.id)
			m := sb.next(t)
			if m.ID != "hostile.answered" {
				t.Fatalf("debug node %s showed %s, want hostile.answered", m.ID, m.Msg)
			}
			var msg struct {
				Payload echoed `json:"payload"`
			}
			if err := json.Unmarshal([]byte(m.Msg), &msg); err != nil {
				t.Fatalf("hostile.answered's msg %q: %v", m.Msg, err)
			}
			want := echoed{Method: c.method, Path: c.path, ContentType: c.contentType, Body: c.body, Wait: c.wait}
			if msg.Payload != want {
				t.Errorf("the daemon got %+v, want %+v", msg.Payload, want)
			}
		})
	}

	t.Run("junk headers and a body that is not its JSON: answered, the junk left out", func(t *testing.T) {
		n.inject(t, "hostile.inject.junk")
		msg := shown(t, sb, "hostile.answered")
		if msg.Payload != "{" || msg.Fusebox.Source != "junk" || msg.Fusebox.Attempts != 0 || msg.Fusebox.StaleAge != nil {
			t.Errorf("msg = %+v; want the body as text, source junk, and no attempts or stale age", msg)
		}
	})
	t.Run("a 503 with a Retry-After date and errors not a list: down, without either", func(t *testing.T) {
		n.inject(t, "hostile.inject.junk503")
		msg := shown(t, sb, "hostile.down")
		f := msg.Fusebox
		if msg.StatusCode != 503 || f.Error != "x" || f.RetryAfter != 0 || f.OpenUntil != "" || f.Errors != nil {
			t.Errorf("msg = %+v; want statusCode 503, error x, and no retryAfter, openUntil or errors", msg)
		}
	})
	t.Run("the daemon's own refusal: the node's error, to a catch node", func(t *testing.T) {
		n.inject(t, "hostile.inject.nosuch")
		if err := caught(t, sb, "hostile.call.nosuch"); err != "fusebox daemon answered 404: no such endpoint or chain in the config" {
			t.Errorf("error %q, want the daemon's 404 and its reason", err)
		}
	})
	t.Run("an answer declared over the largest taken: an error, and hung up on", func(t *testing.T) {
		n.inject(t, "hostile.inject.declared")
		if err := caught(t, sb, "hostile.call.declared"); !strings.Contains(err, "over the 65536 bytes") {
			t.Errorf("error %q, want the answer over the 65536 bytes taken", err)
		}
		h.waitHungUp(t, "declared")
	})
	t.Run("an answer that never ends: an error, and hung up on", func(t *testing.T) {
		n.inject(t, "hostile.inject.endless")
		if err := caught(t, sb, "hostile.call.endless"); !strings.Contains(err, "over the 65536 bytes") {
			t.Errorf("error %q, want the answer over the 65536 bytes taken", err)
		}
		h.waitHungUp(t, "endless")
	})
	t.Run("no answer: down after the timeout, logged once, and hung up on", func(t *testing.T) {
		n.inject(t, "hostile.inject.silent")
		if m := sb.next(t); m.ID != "hostile.call.silent" || !strings.Contains(m.Msg, "no answer from the fusebox daemon in time") {
			t.Fatalf("debug message %+v, want the call node's warning that the daemon did not answer in time", m)
		}
		msg := shown(t, sb, "hostile.down")
		if msg.Fusebox.Code != "ETIMEDOUT" {
			t.Errorf("msg.fusebox = %+v, want code ETIMEDOUT", msg.Fusebox)
		}
		h.waitHungUp(t, "silent")
	})
	// Node-RED stops a flow's nodes before its config nodes: the call node
	// knows it is stopping when the daemon node cuts its call short.
	t.Run("a call in flight when the flows are redeployed: dropped, not sent down", func(t *testing.T) {
		h.waitArrived(t) // the timed-out call's
		n.inject(t, "hostile.inject.waiting")
		h.waitArrived(t)
		n.deploy(t, sb, flow)
		h.waitHungUp(t, "silent")
		n.inject(t, "hostile.inject.junk") // the next message is junk's answer: none came before it
		shown(t, sb, "hostile.answered")
	})
}
