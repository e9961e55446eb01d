package packaging_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/fusebox-hq/fusebox/internal/fakeapis"
	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// NodeREDVar names the npm prefix Node-RED is installed in, as by
// `npm install --prefix DIR node-red@4.1.15`; .ci/run installs it and sets it.
const NodeREDVar = "FUSEBOX_NODE_RED"

// nodeREDSettings is the settings file of the test's Node-RED: loopback only,
// no prompts (telemetry, tours), nothing installed at run time, and no
// credentials key (the flow has no credentials to encrypt).
const nodeREDSettings = `module.exports = {
	uiHost: "127.0.0.1",
	uiPort: %d,
	flowFile: "flows.json",
	credentialSecret: false,
	telemetry: { enabled: false, updateNotification: false },
	diagnostics: { enabled: false, ui: false },
	externalModules: { autoInstall: false, palette: { allowInstall: false, allowUpdate: false } },
	editorTheme: { tours: false },
	logging: { console: { level: "info", metrics: false, audit: false } },
};
`

// exampleFlow returns examples/node-red-flow.json, the nodes packaging/README.md
// tells users to import, with only the daemon's address replaced by addr.
func exampleFlow(t *testing.T, addr string) json.RawMessage {
	t.Helper()
	b, err := os.ReadFile("examples/node-red-flow.json")
	if err != nil {
		t.Fatal(err)
	}
	const documented = "http://127.0.0.1:8417/"
	if n := strings.Count(string(b), documented); n != 1 {
		t.Fatalf("examples/node-red-flow.json names %s %d times, want once", documented, n)
	}
	return json.RawMessage(strings.Replace(string(b), documented, "http://"+addr+"/", 1))
}

// nodeRED is a Node-RED process on a free loopback port.
type nodeRED struct {
	Addr string
	log  testenv.Buffer
}

// npmInstalled returns the node binary and the file rel (below
// node_modules) of what is installed in the npm prefix $envVar names, or
// skips the test through testenv.Skip, saying how to install it.
func npmInstalled(t *testing.T, envVar, rel, how string) (node, path string) {
	t.Helper()
	testenv.Heavy(t) // a real Node-RED or n8n: a minute of Node.js
	prefix := os.Getenv(envVar)
	if prefix == "" {
		testenv.Skip(t, "$%s is not set: %s and set it to DIR", envVar, how)
	}
	path = filepath.Join(prefix, "node_modules", rel)
	if _, err := os.Stat(path); err != nil {
		testenv.Skip(t, "nothing installed in $%s: %v (%s)", envVar, err, how)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		testenv.Skip(t, "Node.js is not installed (apt-get install nodejs npm): %v", err)
	}
	return node, path
}

// startNodeRED runs red.js with node, a temporary user dir and no flows, and
// waits until it serves. It is stopped by its PID when the test ends.
func startNodeRED(t *testing.T, node, red string) *nodeRED {
	t.Helper()
	return startNodeREDIn(t, node, red, t.TempDir())
}

// startNodeREDIn is startNodeRED with the user dir user, where nodes may
// have been installed. Node-RED's local time is UTC.
func startNodeREDIn(t *testing.T, node, red, user string) *nodeRED {
	t.Helper()
	return startNodeREDWith(t, node, red, user, nodeREDSettings)
}

// startNodeREDWith is startNodeREDIn with the settings file settingsJS,
// whose one %d is the port.
func startNodeREDWith(t *testing.T, node, red, user, settingsJS string) *nodeRED {
	t.Helper()
	port := testenv.FreePort(t)
	settings := filepath.Join(user, "settings.js")
	if err := os.WriteFile(settings, fmt.Appendf(nil, settingsJS, port), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(user, "flows.json"), []byte("[]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, red, "--userDir", user, "--settings", settings)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + user, "TZ=UTC"}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	n := &nodeRED{Addr: fmt.Sprintf("127.0.0.1:%d", port)}
	// Node-RED logs "Started flows" before its HTTP server listens: only
	// this line means requests can be made.
	startWatched(t, "Node-RED", cmd, out, &n.log, 60*time.Second, func(line string) (string, bool) {
		return "", strings.Contains(line, "Server now running at")
	})
	return n
}

// importFlow adds nodes as a new flow (tab) and starts it, as the editor's
// Import into a new flow followed by Deploy does, through the admin API:
// POST /flow gives every node the new tab, which a flat list of nodes like
// the example's needs (in a flows file, a node without a tab is taken for
// a config node, and never runs).
func (n *nodeRED) importFlow(t *testing.T, label string, nodes json.RawMessage) {
	t.Helper()
	body, err := json.Marshal(map[string]any{"label": label, "nodes": nodes})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post("http://"+n.Addr+"/flow", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatalf("import the flow: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("import the flow: %s %s\n%s", resp.Status, b, n.log.String())
	}
}

// inject presses the inject node id's button, through the admin API the
// editor uses.
func (n *nodeRED) inject(t *testing.T, id string) {
	t.Helper()
	resp, err := http.Post("http://"+n.Addr+"/inject/"+id, "", nil)
	if err != nil {
		t.Fatalf("inject %s: %v", id, err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("inject %s: %s %s", id, resp.Status, b)
	}
}

// debugMsg is what a debug node shows in the editor's sidebar.
type debugMsg struct {
	ID     string `json:"id"`     // the debug node's
	Msg    string `json:"msg"`    // what it shows, encoded
	Format string `json:"format"` // its type: "number", "Object", ...
}

// nodeStatus is a node's status, as the editor shows it under the node.
type nodeStatus struct {
	Fill  string `json:"fill"`
	Shape string `json:"shape"`
	Text  string `json:"text"`
}

// sidebar is the editor's view of the debug sidebar: the comms websocket,
// which every connected editor receives every debug message on, and every
// node's status.
type sidebar struct {
	conn     *websocket.Conn
	msgs     chan debugMsg
	statusOf string          // the node whose statuses go to statuses, if any
	statuses chan nodeStatus // that node's, in order
	deploys  chan string     // the revision of each deploy, once its flows have started
	stop     chan struct{}   // closed when the test ends
	done     chan struct{}   // closed when the reader has returned
}

// debugSidebar connects to Node-RED's comms websocket as the editor does.
// It receives every message published once the dial returns; with a node's
// id, that node's statuses too (which must then be read, as debug messages
// must).
func (n *nodeRED) debugSidebar(t *testing.T, statusOf ...string) *sidebar {
	t.Helper()
	conn, resp, err := websocket.DefaultDialer.Dial("ws://"+n.Addr+"/comms", nil)
	if err != nil {
		t.Fatalf("connect to Node-RED's comms: %v", err)
	}
	resp.Body.Close()
	s := &sidebar{conn: conn, msgs: make(chan debugMsg, 64), statuses: make(chan nodeStatus, 64),
		deploys: make(chan string, 16), stop: make(chan struct{}), done: make(chan struct{})}
	if len(statusOf) > 0 {
		s.statusOf = statusOf[0]
	}
	go func() {
		defer close(s.done)
		defer close(s.msgs)
		defer close(s.statuses)
		defer close(s.deploys)
		for {
			var batch []struct {
				Topic string          `json:"topic"`
				Data  json.RawMessage `json:"data"`
			}
			if err := conn.ReadJSON(&batch); err != nil {
				return
			}
			for _, m := range batch {
				if s.statusOf != "" && m.Topic == "status/"+s.statusOf {
					var st nodeStatus
					if json.Unmarshal(m.Data, &st) != nil {
						continue
					}
					select {
					case s.statuses <- st:
					case <-s.stop:
						return
					}
					continue
				}
				if m.Topic == "notification/runtime-deploy" {
					var dep struct {
						Revision string `json:"revision"`
					}
					if json.Unmarshal(m.Data, &dep) != nil {
						continue
					}
					select {
					case s.deploys <- dep.Revision:
					case <-s.stop:
						return
					}
					continue
				}
				var d debugMsg
				if m.Topic != "debug" || json.Unmarshal(m.Data, &d) != nil {
					continue
				}
				select {
				case s.msgs <- d:
				case <-s.stop:
					return
				}
			}
		}
	}()
	t.Cleanup(func() { close(s.stop); conn.Close(); <-s.done })
	return s
}

// next returns the next debug message, failing the test if none comes in a
// minute (a chain whose every endpoint is down takes seconds to give up).
func (s *sidebar) next(t *testing.T) debugMsg {
	t.Helper()
	select {
	case m, ok := <-s.msgs:
		if !ok {
			t.Fatal("Node-RED closed its comms websocket")
		}
		return m
	case <-time.After(time.Minute):
		t.Fatal("no debug message from the flow in a minute")
	}
	return debugMsg{}
}

// settled returns the next status of the sidebar's node other than the
// blue one a call shows while it waits, failing the test if none comes in
// a minute.
func (s *sidebar) settled(t *testing.T) nodeStatus {
	t.Helper()
	for {
		select {
		case st, ok := <-s.statuses:
			if !ok {
				t.Fatal("Node-RED closed its comms websocket")
			}
			if st.Fill != "blue" {
				return st
			}
		case <-time.After(time.Minute):
			t.Fatalf("no status of %s in a minute", s.statusOf)
		}
	}
}

// TestNodeREDFlow imports examples/node-red-flow.json into a real Node-RED
// (4.1: Node-RED 5 needs Node.js 22.9, newer than the test machines have)
// and runs it against a real `fusebox serve` with the example config: the
// switch sends the daemon's 503 to the "every endpoint down" debug node
// with payload.errors and a Retry-After header, a temperature to the
// temperature one, which shows where it came from — OpenWeatherMap, wttr.in
// when it is down, and the stored answer of wttr.in, with its age, when
// both are — a daemon with a token the flow does not send to the
// "refused by fusebox" one, the same daemon answering once the token is
// in the http request node's headers, and, once the daemon is stopped, the
// connection's error to the "fusebox itself unreachable" one. A recording
// proxy in the daemon's place checks that each request sends the flow's
// timeout as X-Fusebox-Wait.
func TestNodeREDFlow(t *testing.T) {
	t.Parallel()
	node, red := npmInstalled(t, NodeREDVar, "node-red/red.js", "npm install --prefix DIR node-red@4.1.15")
	up := startUpstream(t)
	d := exampleDaemon(t, up)
	tp := startTap(t, d)
	up.Down(fakeapis.OpenWeatherMap)
	up.Down(fakeapis.Wttr)
	n := startNodeRED(t, node, red)
	n.importFlow(t, "fusebox", exampleFlow(t, tp.Addr))

	// The inject node fires once on its own a second after the flow starts:
	// its request reaches the upstream through the daemon, and waits there
	// while the test opens the debug sidebar.
	select {
	case <-up.Arrived:
	case <-time.After(time.Minute):
		t.Fatalf("the flow's first run reached no upstream\n%s", n.log.String())
	}
	sb := n.debugSidebar(t)
	up.Release()

	t.Run("every endpoint down, nothing stored: 503 to the down node", func(t *testing.T) {
		m := sb.next(t)
		if m.ID != "fusebox-http.down" {
			t.Fatalf("debug node %s showed %s, want fusebox-http.down", m.ID, m.Msg)
		}
		var msg struct {
			StatusCode int               `json:"statusCode"`
			Headers    map[string]string `json:"headers"`
			Payload    struct {
				Error  string `json:"error"`
				Errors []struct {
					Name   string `json:"name"`
					Reason string `json:"reason"`
				} `json:"errors"`
			} `json:"payload"`
		}
		if err := json.Unmarshal([]byte(m.Msg), &msg); err != nil {
			t.Fatalf("fusebox-http.down's msg %q: %v", m.Msg, err)
		}
		if msg.StatusCode != 503 || len(msg.Payload.Errors) != 2 ||
			msg.Payload.Errors[0].Name != "openweather" || msg.Payload.Errors[1].Name != "wttr" {
			t.Errorf("msg = %+v; want statusCode 503 and payload.errors for openweather and wttr", msg)
		}
		if ra := msg.Headers["retry-after"]; ra == "" {
			t.Errorf("msg.headers has no retry-after: %v", msg.Headers)
		}
		if up.Failures(fakeapis.OpenWeatherMap) == 0 || up.Failures(fakeapis.Wttr) == 0 {
			t.Errorf("upstream failures: openweather %d, wttr %d; want both called",
				up.Failures(fakeapis.OpenWeatherMap), up.Failures(fakeapis.Wttr))
		}
	})

	// The temperature node shows the temperature and where it came from:
	// the endpoint that answered, or the stored answer's.
	type temp struct {
		Temperature float64 `json:"temperature"`
		Source      string  `json:"source"`
		Answered    string  `json:"answered"`
		StaleAge    *int    `json:"stale_age_s"`
	}
	temperature := func(t *testing.T, want temp) {
		t.Helper()
		n.inject(t, "fusebox-http.inject")
		m := sb.next(t)
		var got temp
		if m.ID != "fusebox-http.temperature" || m.Format != "Object" {
			t.Fatalf("debug node %s showed %s %q, want fusebox-http.temperature showing an object", m.ID, m.Format, m.Msg)
		}
		if err := json.Unmarshal([]byte(m.Msg), &got); err != nil {
			t.Fatalf("fusebox-http.temperature showed %q: %v", m.Msg, err)
		}
		if (got.StaleAge == nil) != (want.StaleAge == nil) {
			t.Errorf("fusebox-http.temperature showed %s; want a stale_age_s only on a stale answer", m.Msg)
		}
		got.StaleAge, want.StaleAge = nil, nil
		if got != want {
			t.Errorf("fusebox-http.temperature showed %s, want %+v", m.Msg, want)
		}
	}
	t.Run("back up, circuits reset: OpenWeatherMap's temperature", func(t *testing.T) {
		up.Up(fakeapis.OpenWeatherMap)
		up.Up(fakeapis.Wttr)
		d.post(t, "/api/circuits/openweather/reset")
		d.post(t, "/api/circuits/wttr/reset")
		hits := up.Hits(fakeapis.OpenWeatherMap)
		temperature(t, temp{Temperature: 21.5, Source: "openweather"})
		if up.Hits(fakeapis.OpenWeatherMap) != hits+1 {
			t.Errorf("OpenWeatherMap got %d requests, want 1", up.Hits(fakeapis.OpenWeatherMap)-hits)
		}
	})
	t.Run("OpenWeatherMap down: wttr.in's", func(t *testing.T) {
		up.Down(fakeapis.OpenWeatherMap)
		hits := up.Hits(fakeapis.Wttr)
		temperature(t, temp{Temperature: 21, Source: "wttr"})
		if up.Hits(fakeapis.Wttr) != hits+1 {
			t.Errorf("wttr.in got %d requests, want 1", up.Hits(fakeapis.Wttr)-hits)
		}
	})
	t.Run("both down: the stored answer", func(t *testing.T) {
		up.Down(fakeapis.Wttr)
		stale := d.metric(t, "fusebox_stale_answers_total")
		var age int
		temperature(t, temp{Temperature: 21, Source: "stale", Answered: "wttr", StaleAge: &age})
		if got := d.metric(t, "fusebox_stale_answers_total"); got != stale+1 {
			t.Errorf("fusebox_stale_answers_total went from %v to %v, want one more", stale, got)
		}
	})
	// Every run of the flow was one request to the daemon: the first on its
	// own, then one per press of the button.
	if got := d.metric(t, "fusebox_serve_requests_total"); got != 4 {
		t.Errorf("the daemon answered %v requests, want 4", got)
	}

	// The inject node sets msg.requestTimeout to 30 s, and the request
	// sends that as X-Fusebox-Wait: the daemon answers within it.
	if got := tp.Waits(); len(got) != 4 || slices.ContainsFunc(got, func(w string) bool { return w != "30" }) {
		t.Errorf("the flow's requests sent X-Fusebox-Wait %q, want 30 on each of 4", got)
	}

	// A daemon with a token, which the flow does not send: the 401 goes
	// to the refused node, not to the outage nor to the unreachable one.
	t.Run("a daemon with a token the flow lacks: the 401 to the refused node", func(t *testing.T) {
		tp.To(exampleDaemonWithToken(t, up, "packaging-serve-token"))
		n.inject(t, "fusebox-http.inject")
		m := sb.next(t)
		if m.ID != "fusebox-http.refused" {
			t.Fatalf("debug node %s showed %s, want fusebox-http.refused", m.ID, m.Msg)
		}
		var msg struct {
			StatusCode int `json:"statusCode"`
			Payload    struct {
				Error string `json:"error"`
			} `json:"payload"`
		}
		if err := json.Unmarshal([]byte(m.Msg), &msg); err != nil {
			t.Fatalf("fusebox-http.refused's msg %q: %v", m.Msg, err)
		}
		if msg.StatusCode != 401 || !strings.Contains(msg.Payload.Error, "token") {
			t.Errorf("msg = %+v, want statusCode 401 and the daemon's error about the token", msg)
		}
	})
	// The token where packaging/README.md says: a header Authorization in
	// the http request node's list, beside X-Fusebox-Wait. The daemon then
	// answers the call (a 200 or, every endpoint down, a 503), not a 401.
	t.Run("the token in the http request node's headers: the daemon answers", func(t *testing.T) {
		tp.To(exampleDaemonWithToken(t, up, "packaging-serve-token"))
		nodes := n.flows(t)
		found := false
		for _, node := range nodes {
			if node["id"] == "fusebox-http.weather" {
				headers, _ := node["headers"].([]any)
				node["headers"] = append(headers, map[string]any{"keyType": "other", "keyValue": "Authorization",
					"valueType": "other", "valueValue": "Bearer packaging-serve-token"})
				found = true
			}
		}
		if !found {
			t.Fatal("no fusebox-http.weather among the deployed flows")
		}
		n.deploy(t, sb, nodes) // the inject node fires once on its own a second after
		if m := sb.next(t); m.ID != "fusebox-http.temperature" && m.ID != "fusebox-http.down" {
			t.Errorf("debug node %s showed %s, want the temperature or every endpoint down", m.ID, m.Msg)
		}
		if got := tp.Authorizations(); len(got) == 0 || got[len(got)-1] != "Bearer packaging-serve-token" {
			t.Errorf("the requests sent Authorization %q, want the token's on the last", got)
		}
	})

	// The daemon itself down: the http request node sends the msg on, with
	// the connection error's code as msg.statusCode, and logs the error
	// (to the sidebar and to Catch nodes); the switch's otherwise branch
	// takes it.
	t.Run("the daemon down: ECONNREFUSED to the unreachable node, and an error logged", func(t *testing.T) {
		d.Stop()
		tp.Close()
		n.inject(t, "fusebox-http.inject")
		var shown, logged *debugMsg
		for shown == nil || logged == nil {
			m := sb.next(t)
			switch m.ID {
			case "fusebox-http.unreachable":
				shown = &m
			case "fusebox-http.weather": // the http request node's node.error
				logged = &m
			default:
				t.Fatalf("debug node %s showed %s, want fusebox-http.unreachable", m.ID, m.Msg)
			}
		}
		var msg struct {
			StatusCode string `json:"statusCode"`
			Payload    string `json:"payload"`
		}
		if err := json.Unmarshal([]byte(shown.Msg), &msg); err != nil {
			t.Fatalf("fusebox-http.unreachable's msg %q: %v", shown.Msg, err)
		}
		if msg.StatusCode != "ECONNREFUSED" || !strings.Contains(msg.Payload, "ECONNREFUSED") {
			t.Errorf("msg = %+v, want statusCode ECONNREFUSED and the error in payload", msg)
		}
		if !strings.Contains(logged.Msg, "ECONNREFUSED") {
			t.Errorf("the http request node logged %q, want the connection refused", logged.Msg)
		}
	})
}
