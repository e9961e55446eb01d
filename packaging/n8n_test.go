package packaging_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/internal/fakeapis"
	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// N8nVar names the npm prefix n8n is installed in, as by .ci/run (n8n 2.8.4
// with an npm override of xlsx to 0.18.5); .ci/run installs it and sets it.
const N8nVar = "FUSEBOX_N8N"

// n8nCommandTimeout bounds one n8n command. n8n loads some 2,000 packages
// at each start: on an idle machine a command takes seconds, on a busy one
// a minute; past this it is taken for hung.
const n8nCommandTimeout = 10 * time.Minute

// exampleWorkflowID is the id examples/n8n-workflow.json carries, which
// `n8n import:workflow` keeps and `n8n execute --id` names.
const exampleWorkflowID = "fuseboxWeather01"

// n8nCLI runs n8n commands with a user folder of its own (its SQLite
// database, settings and key), on a free port for its task broker.
type n8nCLI struct {
	node, bin string
	env       []string
}

func newN8n(t *testing.T, node, bin string) *n8nCLI {
	user := t.TempDir()
	return &n8nCLI{node: node, bin: bin, env: []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + user, "N8N_USER_FOLDER=" + user,
		fmt.Sprintf("N8N_RUNNERS_BROKER_PORT=%d", testenv.FreePort(t)),
		"N8N_DIAGNOSTICS_ENABLED=false", "N8N_VERSION_NOTIFICATIONS_ENABLED=false", "N8N_TEMPLATES_ENABLED=false",
		"N8N_LOG_FORMAT=json", // one JSON object a line on stdout, the execution's data among them
	}}
}

// run runs `n8n args...` and returns its stdout and how it exited. A command
// that outlives n8nCommandTimeout is killed, with its process group (the
// task runner n8n starts), and fails the test.
func (n *n8nCLI) run(t *testing.T, args ...string) (stdout []byte, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), n8nCommandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, n.node, append([]string{n.bin}, args...)...)
	cmd.Env = n.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	start := time.Now()
	err = cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("n8n %s timed out after %s (killed; the machine may be too busy):\n%s%s", strings.Join(args, " "), n8nCommandTimeout, out.Bytes(), stderr.Bytes())
	}
	t.Logf("n8n %s: %s, %v", strings.Join(args, " "), time.Since(start).Round(100*time.Millisecond), err)
	if stderr.Len() > 0 {
		t.Logf("its stderr:\n%s", stderr.Bytes())
	}
	return out.Bytes(), err
}

// importWorkflows imports every workflow file of dir, as
// `n8n import:workflow --separate --input=DIR`.
func (n *n8nCLI) importWorkflows(t *testing.T, dir string) {
	t.Helper()
	if out, err := n.run(t, "import:workflow", "--separate", "--input="+dir); err != nil {
		t.Fatalf("n8n import:workflow: %v\n%s", err, out)
	}
}

// n8nExecution is what `n8n execute --rawOutput` prints of a run: each
// node's runs, with the items of each of its outputs, and the error that
// ended the run, if any.
type n8nExecution struct {
	Status string `json:"status"`
	Data   struct {
		ResultData struct {
			Error *struct {
				Message  string `json:"message"`
				HTTPCode string `json:"httpCode"`
			} `json:"error"`
			LastNodeExecuted string `json:"lastNodeExecuted"`
			RunData          map[string][]struct {
				ExecutionStatus string `json:"executionStatus"`
				Data            struct {
					Main [][]struct {
						JSON map[string]any `json:"json"`
					} `json:"main"`
				} `json:"data"`
			} `json:"runData"`
		} `json:"resultData"`
	} `json:"data"`
	exitErr error // how the command exited
}

// execute runs the workflow id, as `n8n execute --id ID --rawOutput`, and
// returns the run it prints, whether it succeeded or not.
func (n *n8nCLI) execute(t *testing.T, id string) n8nExecution {
	t.Helper()
	out, err := n.run(t, "execute", "--id", id, "--rawOutput")
	for line := range bytes.Lines(out) {
		var l struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(line, &l) != nil || !strings.HasPrefix(l.Message, "{") || !strings.Contains(l.Message, `"resultData"`) {
			continue
		}
		var e n8nExecution
		if err := json.Unmarshal([]byte(l.Message), &e); err != nil {
			t.Fatalf("n8n execute printed a run that does not decode: %v\n%s", err, l.Message)
		}
		e.exitErr = err
		return e
	}
	t.Fatalf("n8n execute --id %s printed no run (%v):\n%s", id, err, out)
	return n8nExecution{}
}

// items returns the items node put out on its output, from its first run,
// or nil when it did not run.
func (e n8nExecution) items(node string, output int) []map[string]any {
	runs := e.Data.ResultData.RunData[node]
	if len(runs) == 0 || len(runs[0].Data.Main) <= output {
		return nil
	}
	var out []map[string]any
	for _, it := range runs[0].Data.Main[output] {
		out = append(out, it.JSON)
	}
	return out
}

// ran lists the nodes that ran.
func (e n8nExecution) ran() []string {
	var names []string
	for name := range e.Data.ResultData.RunData {
		names = append(names, name)
	}
	return names
}

// exampleWorkflows writes into a new dir examples/n8n-workflow.json with
// only the daemon's address replaced by addr, and beside it two variants
// of it, under the ids returned: one without its HTTP Request node's error
// output (On Error left at its default, Stop Workflow), and one whose HTTP
// Request node sends a wrong token, as its Authorization header.
func exampleWorkflows(t *testing.T, addr string) (dir, noFallbackID, wrongTokenID string) {
	t.Helper()
	b, err := os.ReadFile("examples/n8n-workflow.json")
	if err != nil {
		t.Fatal(err)
	}
	const documented = "http://127.0.0.1:8417/"
	if n := bytes.Count(b, []byte(documented)); n != 1 {
		t.Fatalf("examples/n8n-workflow.json names %s %d times, want once", documented, n)
	}
	b = bytes.Replace(b, []byte(documented), []byte("http://"+addr+"/"), 1)
	var w map[string]any
	if err := json.Unmarshal(b, &w); err != nil {
		t.Fatalf("examples/n8n-workflow.json: %v", err)
	}
	if w["id"] != exampleWorkflowID || w["name"] == "" {
		t.Fatalf("examples/n8n-workflow.json has id %v and name %v; want id %s and a name", w["id"], w["name"], exampleWorkflowID)
	}
	// variant is the workflow under another id and name, its HTTP Request
	// node changed by change, which reports whether it found what to change.
	variant := func(id, name string, change func(node map[string]any) bool) []byte {
		var v map[string]any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		v["id"], v["name"] = id, name
		found := false
		for _, node := range v["nodes"].([]any) {
			if n := node.(map[string]any); n["name"] == "Weather via fusebox" {
				found = change(n)
			}
		}
		if !found {
			t.Fatalf("examples/n8n-workflow.json: the \"Weather via fusebox\" node is not as %s expects", id)
		}
		out, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	noFallbackID, wrongTokenID = "fuseboxNoFallback", "fuseboxWrongToken"
	noFallback := variant(noFallbackID, "Weather via fusebox, no fallback", func(n map[string]any) bool {
		if n["onError"] != "continueErrorOutput" {
			return false
		}
		delete(n, "onError")
		return true
	})
	// The header an off-loopback setup adds beside X-Fusebox-Wait.
	wrongToken := variant(wrongTokenID, "Weather via fusebox, wrong token", func(n map[string]any) bool {
		params, _ := n["parameters"].(map[string]any)
		headers, _ := params["headerParameters"].(map[string]any)
		list, ok := headers["parameters"].([]any)
		if params["sendHeaders"] != true || !ok {
			return false
		}
		headers["parameters"] = append(list, map[string]any{"name": "Authorization", "value": "Bearer not-the-token"})
		return true
	})
	dir = t.TempDir()
	for name, content := range map[string][]byte{"example.json": b, "no-fallback.json": noFallback, "wrong-token.json": wrongToken} {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir, noFallbackID, wrongTokenID
}

// exampleWait returns the X-Fusebox-Wait header examples/n8n-workflow.json
// sends, after checking that it is its HTTP Request node's timeout.
func exampleWait(t *testing.T) string {
	t.Helper()
	var w struct {
		Nodes []struct {
			Name       string `json:"name"`
			Parameters struct {
				HeaderParameters struct {
					Parameters []struct{ Name, Value string } `json:"parameters"`
				} `json:"headerParameters"`
				Options struct {
					Timeout int `json:"timeout"` // ms
				} `json:"options"`
			} `json:"parameters"`
		} `json:"nodes"`
	}
	readJSON(t, "examples/n8n-workflow.json", &w)
	for _, n := range w.Nodes {
		if n.Name != "Weather via fusebox" {
			continue
		}
		for _, h := range n.Parameters.HeaderParameters.Parameters {
			if h.Name == "X-Fusebox-Wait" {
				if want := fmt.Sprint(n.Parameters.Options.Timeout / 1000); h.Value != want {
					t.Errorf("the HTTP Request node sends X-Fusebox-Wait %q; its timeout is %d ms, so want %s", h.Value, n.Parameters.Options.Timeout, want)
				}
				return h.Value
			}
		}
	}
	t.Fatal(`examples/n8n-workflow.json: the "Weather via fusebox" node sends no X-Fusebox-Wait`)
	return ""
}

// TestN8nWorkflow imports examples/n8n-workflow.json into a real n8n (2.8:
// the newest that runs on the test machines' Node.js 20) and executes it
// with `n8n execute`, against a real `fusebox serve` with the example
// config: the daemon's 503 goes to "Every endpoint down" with the errors and
// Retry-After, a temperature to "Temperature" with its source, and, once
// the daemon is stopped, the connection's error to "fusebox unreachable"
// through the HTTP Request node's error output; without that output, the
// node fails the execution. A daemon with a token, sent a wrong one, lands
// on "Token wrong or call not allowed", not on the outage's branch, and
// fails the execution with the fix (a mistake that never heals, listed
// among the failed executions and given to an error workflow); and
// every request sends the node's timeout as X-Fusebox-Wait.
func TestN8nWorkflow(t *testing.T) {
	t.Parallel()
	node, bin := npmInstalled(t, N8nVar, "n8n/bin/n8n",
		"install n8n as .ci/run does (npm install --prefix DIR n8n@2.8.4, with xlsx overridden to 0.18.5 in DIR/package.json)")
	start := time.Now()
	up := startUpstream(t)
	up.Release()
	d := exampleDaemon(t, up)
	tp := startTap(t, d)
	wait := exampleWait(t)
	n := newN8n(t, node, bin)
	dir, noFallback, wrongToken := exampleWorkflows(t, tp.Addr)
	n.importWorkflows(t, dir)

	t.Run("every endpoint down, nothing stored: the 503 to Every endpoint down", func(t *testing.T) {
		up.Down(fakeapis.OpenWeatherMap)
		up.Down(fakeapis.Wttr)
		e := n.execute(t, exampleWorkflowID)
		got := e.items("Every endpoint down", 0)
		if e.exitErr != nil || e.Status != "success" || len(got) != 1 || e.items("Temperature", 0) != nil ||
			e.items("Token wrong or call not allowed", 0) != nil {
			t.Fatalf("execution %s (%v), nodes run %v; want success through Every endpoint down only", e.Status, e.exitErr, e.ran())
		}
		errs, _ := got[0]["errors"].([]any)
		if got[0]["status"] != 503.0 || len(errs) != 2 || got[0]["retry_after"] == "" || got[0]["retry_after"] == nil {
			t.Errorf("Every endpoint down = %v; want status 503, errors for both endpoints and a retry_after", got[0])
		}
	})
	t.Run("back up, circuits reset: OpenWeatherMap's temperature", func(t *testing.T) {
		up.Up(fakeapis.OpenWeatherMap)
		up.Up(fakeapis.Wttr)
		d.post(t, "/api/circuits/openweather/reset")
		d.post(t, "/api/circuits/wttr/reset")
		e := n.execute(t, exampleWorkflowID)
		got := e.items("Temperature", 0)
		if e.exitErr != nil || e.Status != "success" || len(got) != 1 {
			t.Fatalf("execution %s (%v), nodes run %v; want success through Temperature", e.Status, e.exitErr, e.ran())
		}
		if got[0]["temperature"] != 21.5 || got[0]["source"] != "openweather" {
			t.Errorf("Temperature = %v, want 21.5 from openweather", got[0])
		}
	})
	if got := d.metric(t, "fusebox_serve_requests_total"); got != 2 {
		t.Errorf("the daemon answered %v requests, want one per execution, 2", got)
	}

	t.Run("a daemon with a token, sent a wrong one: the 401 to Token wrong or call not allowed, and the execution fails", func(t *testing.T) {
		tp.To(exampleDaemonWithToken(t, up, "packaging-serve-token"))
		e := n.execute(t, wrongToken)
		got := e.items("Token wrong or call not allowed", 0)
		if e.Status != "error" || len(got) != 1 || e.items("Every endpoint down", 0) != nil || e.Data.ResultData.LastNodeExecuted != "Fail: fix the token" {
			t.Fatalf("execution %s (%v), nodes run %v, last %q; want it failed by Fail: fix the token, after Token wrong or call not allowed only",
				e.Status, e.exitErr, e.ran(), e.Data.ResultData.LastNodeExecuted)
		}
		if fix, _ := got[0]["fix"].(string); got[0]["status"] != 401.0 || !strings.Contains(fix, "token is wrong") {
			t.Errorf("Token wrong or call not allowed = %v; want status 401 and that the token is wrong", got[0])
		}
		if err := e.Data.ResultData.Error; err == nil || !strings.Contains(err.Message, "(401, ") || !strings.Contains(err.Message, "token is wrong") {
			t.Errorf("the execution's error %+v; want the 401 and that the token is wrong", err)
		}
	})
	if got := tp.Waits(); len(got) != 3 || slices.ContainsFunc(got, func(w string) bool { return w != wait }) {
		t.Errorf("the workflow's requests sent X-Fusebox-Wait %q, want %s on each of 3", got, wait)
	}
	// The 401 alone would come of a header n8n left out too: the header
	// the README has n8n send is on the request.
	if got := tp.Authorizations(); len(got) != 3 || !slices.Equal(got, []string{"", "", "Bearer not-the-token"}) {
		t.Errorf("the workflow's requests sent Authorization %q, want none, none and the wrong token's", got)
	}

	d.Stop()
	tp.Close()
	t.Run("the daemon down: the error output to fusebox unreachable", func(t *testing.T) {
		e := n.execute(t, exampleWorkflowID)
		errOut := e.items("Weather via fusebox", 1)
		got := e.items("fusebox unreachable", 0)
		if e.exitErr != nil || e.Status != "success" || len(got) != 1 || len(errOut) != 1 || e.items("Answered?", 0) != nil {
			t.Fatalf("execution %s (%v), nodes run %v; want success through the error output to fusebox unreachable", e.Status, e.exitErr, e.ran())
		}
		if msg, _ := got[0]["error"].(string); !strings.Contains(msg, "ECONNREFUSED") {
			t.Errorf("fusebox unreachable = %v, want the connection refused", got[0])
		}
		if cause, _ := errOut[0]["error"].(map[string]any); cause["code"] != "ECONNREFUSED" {
			t.Errorf("the error output's item = %v, want error.code ECONNREFUSED", errOut[0])
		}
	})
	t.Run("the daemon down, no error output: the node fails the execution", func(t *testing.T) {
		e := n.execute(t, noFallback)
		var exit *exec.ExitError
		if !errors.As(e.exitErr, &exit) || e.Status != "error" || e.Data.ResultData.LastNodeExecuted != "Weather via fusebox" || len(e.ran()) != 2 {
			t.Fatalf("execution %s (%v), last node %s, nodes run %v; want a failed execution that stopped at the HTTP Request node",
				e.Status, e.exitErr, e.Data.ResultData.LastNodeExecuted, e.ran())
		}
		if err := e.Data.ResultData.Error; err == nil || err.HTTPCode != "ECONNREFUSED" || !strings.Contains(err.Message, "refused the connection") {
			t.Errorf("the execution's error = %+v, want n8n's \"refused the connection\" with code ECONNREFUSED", err)
		}
	})
	t.Logf("n8n's test took %s in all", time.Since(start).Round(time.Second))
}
