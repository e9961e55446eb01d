package packaging_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/fusebox-hq/fusebox/internal/fakeapis"
	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// nodePackage is the Node-RED node package's directory, and its name.
const (
	nodePackage     = "node-red-fusebox"
	nodePackageName = "@fusebox-hq/node-red-fusebox"
)

// installNodePackage installs the package into the Node-RED user dir user
// as its README says, offline (it has no dependencies, so nothing is
// fetched): `npm pack PATH` in the user dir, then `npm install` of the
// tarball it wrote, the name of which the README gives. What Node-RED
// loads is then a copy, not a link into the checkout.
func installNodePackage(t *testing.T, user string) {
	t.Helper()
	tarball := packNodePackage(t, user)
	readme, err := os.ReadFile(filepath.Join(nodePackage, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []string{"npm pack /path/to/fusebox/packaging/node-red-fusebox", "npm install ./" + tarball} {
		if !strings.Contains(string(readme), step) {
			t.Errorf("%s/README.md does not say %q: the install tested here is not the one it documents", nodePackage, step)
		}
	}
	npmIn(t, user, "install", "./"+tarball)
	installed := filepath.Join(user, "node_modules", nodePackageName)
	if fi, err := os.Lstat(installed); err != nil || !fi.IsDir() {
		t.Fatalf("%s after the install: %v, %v; want a dir of its own, not a link into the checkout", installed, fi, err)
	}
}

// packNodePackage runs `npm pack` of the package in dir and returns the
// name of the tarball it wrote there.
func packNodePackage(t *testing.T, dir string) string {
	t.Helper()
	pkgDir, err := filepath.Abs(nodePackage)
	if err != nil {
		t.Fatal(err)
	}
	var pkg struct {
		Version string `json:"version"`
	}
	readJSON(t, filepath.Join(nodePackage, "package.json"), &pkg)
	tarball := "fusebox-hq-node-red-fusebox-" + pkg.Version + ".tgz"
	if got := strings.TrimSpace(string(npmIn(t, dir, "pack", pkgDir))); got != tarball {
		t.Fatalf("npm pack wrote %q, want %s", got, tarball)
	}
	return tarball
}

// npmIn runs npm in dir, offline, with dir as its home, and returns what
// it printed.
func npmIn(t *testing.T, dir string, args ...string) []byte {
	t.Helper()
	npm, err := exec.LookPath("npm")
	if err != nil {
		testenv.Skip(t, "npm is not installed (apt-get install nodejs npm): %v", err)
	}
	cmd := exec.Command(npm, args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir,
		"npm_config_cache=" + filepath.Join(dir, ".npm"), "npm_config_offline=true",
		"npm_config_audit=false", "npm_config_fund=false", "npm_config_update_notifier=false"}
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("npm %s in %s: %v\n%s%s", strings.Join(args, " "), dir, err, out, stderr)
	}
	return out
}

// packageExample returns the package's example flow as Node-RED's editor
// lists it under Import → Examples, with only the daemon's address replaced
// by addr, the config node given token as its credential, and the flow's
// nodes on a tab of their own: what the editor deploys after the import, a
// token typed in, and Deploy.
func (n *nodeRED) packageExample(t *testing.T, addr, token string) []map[string]any {
	t.Helper()
	resp, err := http.Get("http://" + n.Addr + "/library/examples/flows/" + nodePackageName + "/weather")
	if err != nil {
		t.Fatalf("the package's example: %v", err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the package's example, from the editor's library: %s %v %s", resp.Status, err, b)
	}
	const documented = `"url": "http://127.0.0.1:8417"`
	if n := strings.Count(string(b), documented); n != 1 {
		t.Fatalf("the package's example names %s %d times, want once", documented, n)
	}
	b = []byte(strings.Replace(string(b), documented, `"url": "http://`+addr+`"`, 1))
	var nodes []map[string]any
	if err := json.Unmarshal(b, &nodes); err != nil {
		t.Fatalf("the package's example: %v", err)
	}
	for _, n := range nodes {
		if n["type"] == "fusebox-daemon" {
			n["credentials"] = map[string]any{"token": token}
		} else {
			n["z"] = "fusebox.tab"
		}
	}
	return append(nodes, map[string]any{"id": "fusebox.tab", "type": "tab", "label": "fusebox"})
}

// deploy replaces every flow with nodes, as the editor's full Deploy does,
// through the admin API, and waits until sb says the new flows started.
func (n *nodeRED) deploy(t *testing.T, sb *sidebar, nodes []map[string]any) {
	t.Helper()
	body, err := json.Marshal(map[string]any{"flows": nodes})
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, "http://"+n.Addr+"/flows", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Node-RED-Deployment-Type", "full")
	req.Header.Set("Node-RED-API-Version", "v2")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("deploy: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var deployed struct {
		Rev string `json:"rev"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &deployed) != nil || deployed.Rev == "" {
		t.Fatalf("deploy: %s %s\n%s", resp.Status, b, n.log.String())
	}
	// Node-RED answers once the flows are saved, and starts them after.
	for {
		select {
		case rev, ok := <-sb.deploys:
			if !ok {
				t.Fatal("Node-RED closed its comms websocket")
			}
			if rev == deployed.Rev {
				return
			}
		case <-time.After(time.Minute):
			t.Fatalf("the flows of revision %s did not start in a minute\n%s", deployed.Rev, n.log.String())
		}
	}
}

// startNodeREDWithPackage starts Node-RED in a fresh user dir the package
// was installed into, and checks that Node-RED loaded both its nodes.
func startNodeREDWithPackage(t *testing.T, node, red string) *nodeRED {
	t.Helper()
	user := t.TempDir()
	installNodePackage(t, user)
	n := startNodeREDIn(t, node, red, user)
	n.checkPackageLoaded(t)
	return n
}

// flows returns the flows Node-RED runs, as GET /flows lists them.
func (n *nodeRED) flows(t *testing.T) []map[string]any {
	t.Helper()
	var got struct {
		Flows []map[string]any `json:"flows"`
	}
	n.getJSON(t, "/flows", "Node-RED-API-Version", "v2", &got)
	return got.Flows
}

// getJSON decodes into v the answer to GET path of the admin API, sent
// with the header name: value.
func (n *nodeRED) getJSON(t *testing.T, path, name, value string, v any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+n.Addr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(name, value)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %v", path, resp.Status, err)
	}
}

// checkPackageLoaded checks that Node-RED loaded both the package's nodes.
func (n *nodeRED) checkPackageLoaded(t *testing.T) {
	t.Helper()
	var types []string
	for _, s := range n.nodeSets(t) {
		if s.Module == nodePackageName {
			if !s.Enabled || s.Err != nil {
				t.Fatalf("Node-RED did not load %s: %+v\n%s", nodePackageName, s, n.log.String())
			}
			types = append(types, s.Types...)
		}
	}
	slices.Sort(types)
	if !slices.Equal(types, []string{"fusebox call", "fusebox-daemon"}) {
		t.Fatalf("Node-RED loaded the types %q of %s, want fusebox call and fusebox-daemon\n%s", types, nodePackageName, n.log.String())
	}
}

// nodeSets returns what GET /nodes lists: each node set Node-RED found.
func (n *nodeRED) nodeSets(t *testing.T) []nodeSet {
	t.Helper()
	var sets []nodeSet
	n.getJSON(t, "/nodes", "Accept", "application/json", &sets)
	return sets
}

type nodeSet struct {
	Module  string   `json:"module"`
	Types   []string `json:"types"`
	Enabled bool     `json:"enabled"`
	Err     any      `json:"err"` // why it failed to load
}

// fuseboxMsg is a message a fusebox call node sent, as a debug node
// showing the whole message shows it.
type fuseboxMsg struct {
	Payload    any `json:"payload"`
	StatusCode int `json:"statusCode"`
	Fusebox    struct {
		Source     string `json:"source"`
		Answered   string `json:"answered"`
		Attempts   int    `json:"attempts"`
		StaleAge   *int   `json:"staleAge"`
		RetryAfter int    `json:"retryAfter"`
		OpenUntil  string `json:"openUntil"`
		Error      string `json:"error"`
		Code       string `json:"code"`
		Errors     []struct {
			Name string `json:"name"`
		} `json:"errors"`
	} `json:"fusebox"`
}

// shown reads the next debug message, which must be debug node id's, as a
// fusebox call node's message.
func shown(t *testing.T, sb *sidebar, id string) fuseboxMsg {
	t.Helper()
	m := sb.next(t)
	if m.ID != id {
		t.Fatalf("debug node %s showed %s, want %s", m.ID, m.Msg, id)
	}
	var msg fuseboxMsg
	if err := json.Unmarshal([]byte(m.Msg), &msg); err != nil {
		t.Fatalf("%s's msg %q: %v", id, m.Msg, err)
	}
	return msg
}

// wantStatus checks the call node's next settled status.
func wantStatus(t *testing.T, sb *sidebar, fill, shape, text string) {
	t.Helper()
	if st := sb.settled(t); st != (nodeStatus{Fill: fill, Shape: shape, Text: text}) {
		t.Errorf("the call node's status is %+v, want a %s %s %q", st, fill, shape, text)
	}
}

// TestNodeREDPackage installs the Node-RED node package from the checkout
// into a fresh user dir of a real Node-RED 4.1, deploys its example flow
// through the admin API with the daemon's token as the config node's
// credential, and checks each output and the call node's status against a
// real `fusebox serve` with the example config: down (the 503, with the
// time the circuit opens until), answered by OpenWeatherMap, then by
// wttr.in, stale when both are down, and down again once the daemon is
// stopped, which the node logs once however many calls fail.
func TestNodeREDPackage(t *testing.T) {
	t.Parallel()
	node, red := npmInstalled(t, NodeREDVar, "node-red/red.js", "npm install --prefix DIR node-red@4.1.15")
	up := startUpstream(t)
	up.Release() // the sidebar is open before the flow runs: nothing to hold
	const token = "packaging-serve-token"
	d := exampleDaemonWithToken(t, up, token)
	up.Down(fakeapis.OpenWeatherMap)
	up.Down(fakeapis.Wttr)

	n := startNodeREDWithPackage(t, node, red)
	t.Run("the editor's dialogs and help", func(t *testing.T) {
		checkEditorHTML(t, n, "fusebox-call", "fusebox call", []string{"Inputs", "Outputs", "Details", "References"}, 3)
		checkEditorHTML(t, n, "fusebox-daemon", "fusebox-daemon", []string{"Properties", "Details"}, 0)
	})

	sb := n.debugSidebar(t, "fusebox.call")
	n.deploy(t, sb, n.packageExample(t, d.Addr, token))

	// The inject node fires once on its own a second after the deploy.
	t.Run("every endpoint down, nothing stored: the 503 to down, open until its Retry-After", func(t *testing.T) {
		msg := shown(t, sb, "fusebox.down")
		f := msg.Fusebox
		if msg.StatusCode != 503 || len(f.Errors) != 2 || f.Errors[0].Name != "openweather" || f.Errors[1].Name != "wttr" {
			t.Errorf("msg = %+v; want statusCode 503 and fusebox.errors for openweather and wttr", msg)
		}
		if f.RetryAfter <= 0 || f.Error == "" {
			t.Fatalf("msg.fusebox = %+v, want an error and a retryAfter", f)
		}
		until, err := time.Parse(time.RFC3339, f.OpenUntil)
		if err != nil {
			t.Fatalf("msg.fusebox.openUntil %q: %v", f.OpenUntil, err)
		}
		// The node shows the time, in Node-RED's local time (UTC here),
		// rounded up to the minute, and its date when it is not today
		// (as may be near midnight).
		shownUntil := until.Truncate(time.Minute)
		if !shownUntil.Equal(until) {
			shownUntil = shownUntil.Add(time.Minute)
		}
		st := sb.settled(t)
		today, otherDay := "open until "+shownUntil.UTC().Format("15:04"), "open until "+shownUntil.UTC().Format("2006-01-02 15:04")
		if st.Fill != "red" || st.Shape != "ring" || (st.Text != today && st.Text != otherDay) {
			t.Errorf("the call node's status is %+v, want a red ring %q", st, today)
		}
	})

	answered := func(t *testing.T, source string, payload float64) fuseboxMsg {
		t.Helper()
		n.inject(t, "fusebox.every5m")
		msg := shown(t, sb, "fusebox.answered")
		if msg.Payload != payload || msg.StatusCode != 200 || msg.Fusebox.Source != source || msg.Fusebox.Attempts < 1 {
			t.Errorf("msg = %+v; want payload %v, statusCode 200, fusebox.source %s and its attempts", msg, payload, source)
		}
		wantStatus(t, sb, "green", "dot", "closed · "+source)
		return msg
	}
	t.Run("back up, circuits reset: answered by OpenWeatherMap in one attempt", func(t *testing.T) {
		up.Up(fakeapis.OpenWeatherMap)
		up.Up(fakeapis.Wttr)
		d.post(t, "/api/circuits/openweather/reset")
		d.post(t, "/api/circuits/wttr/reset")
		if msg := answered(t, "openweather", 21.5); msg.Fusebox.Attempts != 1 {
			t.Errorf("msg.fusebox.attempts = %d, want 1", msg.Fusebox.Attempts)
		}
	})
	t.Run("OpenWeatherMap down: answered by wttr.in, after its attempts", func(t *testing.T) {
		up.Down(fakeapis.OpenWeatherMap)
		if msg := answered(t, "wttr", 21); msg.Fusebox.Attempts < 2 {
			t.Errorf("msg.fusebox.attempts = %d, want OpenWeatherMap's and wttr.in's", msg.Fusebox.Attempts)
		}
	})
	t.Run("both down: wttr.in's stored answer to stale", func(t *testing.T) {
		up.Down(fakeapis.Wttr)
		n.inject(t, "fusebox.every5m")
		msg := shown(t, sb, "fusebox.stale")
		f := msg.Fusebox
		if msg.Payload != 21.0 || f.Source != "stale" || f.Answered != "wttr" || f.StaleAge == nil {
			t.Fatalf("msg = %+v; want payload 21, fusebox.source stale, answered wttr and a staleAge", msg)
		}
		// The age is the daemon's, in whole seconds: what the status shows.
		wantStatus(t, sb, "yellow", "ring", "stale "+shortAge(*f.StaleAge)+" · wttr")
	})

	// The same flow deployed with a wrong token: the daemon's 401 goes to
	// no output (it is no outage), and the node says why, in its status and
	// in its error.
	t.Run("a wrong token: the status says so, and the error where the token goes", func(t *testing.T) {
		n.deploy(t, sb, n.packageExample(t, d.Addr, "not-the-token")) // the inject fires once on its own
		logged := sb.next(t)
		if logged.ID != "fusebox.call" || !strings.Contains(logged.Msg, "401") || !strings.Contains(logged.Msg, "token") {
			t.Fatalf("debug message %+v, want the call node's error of the daemon's 401 and the token", logged)
		}
		st := sb.settled(t)
		for st == (nodeStatus{}) { // the old node's, cleared as it closed
			st = sb.settled(t)
		}
		if st != (nodeStatus{Fill: "red", Shape: "ring", Text: "wrong token"}) {
			t.Errorf("the call node's status is %+v, want a red ring \"wrong token\"", st)
		}
	})

	t.Run("the daemon stopped: down, with the connection's error, logged once", func(t *testing.T) {
		d.Stop()
		n.inject(t, "fusebox.every5m")
		warned := sb.next(t)
		if warned.ID != "fusebox.call" || !strings.Contains(warned.Msg, "ECONNREFUSED") {
			t.Fatalf("debug message %+v, want the call node's warning of ECONNREFUSED", warned)
		}
		for i := range 2 {
			if i > 0 {
				n.inject(t, "fusebox.every5m") // the next call finds it down too: no second warning
			}
			msg := shown(t, sb, "fusebox.down")
			if msg.Fusebox.Code != "ECONNREFUSED" || !strings.Contains(msg.Fusebox.Error, "ECONNREFUSED") {
				t.Errorf("msg.fusebox = %+v, want code ECONNREFUSED and its error", msg.Fusebox)
			}
			wantStatus(t, sb, "red", "ring", "daemon unreachable")
		}
	})
}

// TestNodeREDPackageUnits runs the package's own tests, `npm test`: what
// the call node makes of each answer the daemon can give, and of junk, at
// a given time.
func TestNodeREDPackageUnits(t *testing.T) {
	t.Parallel()
	testenv.Heavy(t) // npm and Node.js
	npm, err := exec.LookPath("npm")
	if err != nil {
		testenv.Skip(t, "npm is not installed (apt-get install nodejs npm): %v", err)
	}
	home := t.TempDir()
	cmd := exec.Command(npm, "test")
	cmd.Dir = nodePackage
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "npm_config_cache=" + filepath.Join(home, ".npm"),
		"npm_config_offline=true", "npm_config_update_notifier=false"}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm test in %s: %v\n%s", nodePackage, err, out)
	}
}

// shortAge is a stale age as the call node's status shows it: the largest
// whole unit, 45s, 5m, 3h, 2d.
func shortAge(s int) string {
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm", s/60)
	case s < 86400:
		return fmt.Sprintf("%dh", s/3600)
	}
	return fmt.Sprintf("%dd", s/86400)
}

// editorHTML returns what the editor loads of a node set of the package:
// its edit dialog, its help and the script that registers it.
func (n *nodeRED) editorHTML(t *testing.T, set string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+n.Addr+"/nodes/"+nodePackageName+"/"+set, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/html")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET the editor's HTML of %s: %v", set, err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET the editor's HTML of %s: %s %v %s", set, resp.Status, err, b)
	}
	return string(b)
}

// checkEditorHTML checks the editor's HTML of the node type typ, from set:
// a script registering it that Node.js parses, an edit dialog, and help in
// the sections of Node-RED's help style guide (a first paragraph, the
// palette's tooltip, then headings), with one entry per output.
func checkEditorHTML(t *testing.T, n *nodeRED, set, typ string, headings []string, outputs int) {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(n.editorHTML(t, set)))
	if err != nil {
		t.Fatalf("the editor's HTML of %s: %v", set, err)
	}
	var register, dialog, help *html.Node
	for s := range doc.Descendants() {
		if s.Type != html.ElementNode || s.DataAtom != atom.Script {
			continue
		}
		attr := map[string]string{}
		for _, a := range s.Attr {
			attr[a.Key] = a.Val
		}
		switch {
		case attr["type"] == "text/javascript" && strings.Contains(scriptText(s), "registerType(\""+typ+"\""):
			register = s
		case attr["data-template-name"] == typ:
			dialog = s
		case attr["data-help-name"] == typ:
			help = s
		}
	}
	if register == nil || dialog == nil || help == nil {
		t.Fatalf("the editor's HTML of %s: script registering %q %v, its dialog %v, its help %v; want all three",
			set, typ, register != nil, dialog != nil, help != nil)
	}
	js := filepath.Join(t.TempDir(), set+".js")
	if err := os.WriteFile(js, []byte(scriptText(register)), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("node", "--check", js).CombinedOutput(); err != nil {
		t.Errorf("the script registering %q does not parse: %v\n%s", typ, err, out)
	}
	// A script's text is raw: its HTML is parsed on its own, as the
	// editor does.
	body, err := html.Parse(strings.NewReader(scriptText(help)))
	if err != nil {
		t.Fatalf("%q's help: %v", typ, err)
	}
	var first string
	var got []string
	ports := 0
	for e := range body.Descendants() {
		if e.Type != html.ElementNode {
			continue
		}
		if first == "" {
			if e.DataAtom == atom.Html || e.DataAtom == atom.Head || e.DataAtom == atom.Body {
				continue
			}
			first = e.Data
		}
		switch {
		case e.DataAtom == atom.H3:
			got = append(got, strings.TrimSpace(nodeText(e)))
		case e.DataAtom == atom.Li && e.Parent != nil && e.Parent.DataAtom == atom.Ol && hasClass(e.Parent, "node-ports"):
			ports++
		}
	}
	if first != "p" || !slices.Equal(got, headings) || ports != outputs {
		t.Errorf("%q's help starts with <%s>, has the sections %q and %d outputs; want a <p>, %q and %d",
			typ, first, got, ports, headings, outputs)
	}
}

func scriptText(s *html.Node) string {
	var b strings.Builder
	for c := range s.ChildNodes() {
		b.WriteString(c.Data)
	}
	return b.String()
}

func nodeText(e *html.Node) string {
	var b strings.Builder
	for d := range e.Descendants() {
		if d.Type == html.TextNode {
			b.WriteString(d.Data)
		}
	}
	return b.String()
}

func hasClass(e *html.Node, class string) bool {
	for _, a := range e.Attr {
		if a.Key == "class" && slices.Contains(strings.Fields(a.Val), class) {
			return true
		}
	}
	return false
}

// TestNodeREDPackageUploadedInThePalette installs the package where no npm
// runs in the user dir, as in Node-RED's container or Home Assistant's
// Node-RED add-on: the tarball of npm pack uploaded in the editor (Manage
// palette → Install → the upload button), which is POST /nodes with the
// file as the multipart field "tarball". Node-RED installs it and loads
// both its nodes at once, without a restart.
func TestNodeREDPackageUploadedInThePalette(t *testing.T) {
	t.Parallel()
	node, red := npmInstalled(t, NodeREDVar, "node-red/red.js", "npm install --prefix DIR node-red@4.1.15")
	dir := t.TempDir()
	tarball := packNodePackage(t, dir)
	// The palette as Node-RED ships it, installs and uploads allowed.
	const locked = "palette: { allowInstall: false, allowUpdate: false }"
	if !strings.Contains(nodeREDSettings, locked) {
		t.Fatalf("nodeREDSettings no longer says %s", locked)
	}
	n := startNodeREDWith(t, node, red, t.TempDir(), strings.Replace(nodeREDSettings, locked, "palette: { allowInstall: true, allowUpload: true }", 1))

	var body bytes.Buffer
	form := multipart.NewWriter(&body)
	part, err := form.CreateFormFile("tarball", tarball)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, tarball))
	if err != nil {
		t.Fatal(err)
	}
	part.Write(b)
	form.Close()
	req, err := http.NewRequest(http.MethodPost, "http://"+n.Addr+"/nodes", &body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", form.FormDataContentType())
	req.Header.Set("Accept", "application/json")
	client := &http.Client{Timeout: 2 * time.Minute} // Node-RED runs npm install before it answers
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("POST /nodes: %v\n%s", err, n.log.String())
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /nodes of %s: %s %s\n%s", tarball, resp.Status, answer, n.log.String())
	}
	n.checkPackageLoaded(t)
}
