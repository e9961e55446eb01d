package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/fusebox-hq/fusebox/config"
	"github.com/fusebox-hq/fusebox/internal/doctext"
	"github.com/fusebox-hq/fusebox/internal/fakeapis"
	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// bridgeHealth is a stand-in for Zigbee2MQTT's health URL at
// http://zigbee.lan:8080, down while down is set; hits counts its requests.
type bridgeHealth struct {
	down atomic.Bool
	hits atomic.Int32
	srv  *httptest.Server
}

func newBridgeHealth(t *testing.T) *bridgeHealth {
	b := &bridgeHealth{}
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.hits.Add(1)
		if b.down.Load() {
			http.Error(w, "bridge offline", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, `{"status":"ok"}`)
	}))
	t.Cleanup(b.srv.Close)
	return b
}

// aimed returns a recipe's command aimed at the stand-in instead of the
// bridge, otherwise as written.
func (b *bridgeHealth) aimed(t *testing.T, command string) string {
	t.Helper()
	if !strings.Contains(command, "http://zigbee.lan:8080") {
		t.Fatalf("the command %q of docs/schedulers.md no longer asks http://zigbee.lan:8080", command)
	}
	return strings.ReplaceAll(command, "http://zigbee.lan:8080", b.srv.URL)
}

// recipeEnv is the environment a recipe of docs/schedulers.md runs in:
// fusebox on PATH, state in state, and a config that keeps the recipe's
// circuit's policy but cuts its waits from seconds to milliseconds (as
// cronPolicy does), so that an outage of several probes takes seconds.
func recipeEnv(t *testing.T, state string) []string {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	os.WriteFile(cfg, []byte(recipePolicy), 0o600)
	return append(fbCmd(state, nil).Env,
		"PATH="+filepath.Dir(fuseboxBin)+string(os.PathListSeparator)+os.Getenv("PATH"), "FUSEBOX_CONFIG="+cfg)
}

// recipePolicy is the config of recipeEnv.
const recipePolicy = "circuits:\n  zigbee2mqtt: {backoff: 20ms, max_delay: 100ms, open_for: 300ms, open_max: 5m}\n"

// outage drives a scheduler's jobs through a healthy spell, an outage of
// at least three failed probes, the recovery (until the circuit closes)
// and a healthy spell again, one job per tick, and returns every job with
// the phase it ran in. Ticks are counted by what the stand-in saw and by
// the circuit's state, not by the clock.
func outage(t *testing.T, b *bridgeHealth, state string, run func() testenv.Proc) (phases []string, jobs []testenv.Proc) {
	t.Helper()
	tick := func(phase string) {
		phases, jobs = append(phases, phase), append(jobs, run())
	}
	for range 3 {
		tick("healthy")
	}
	b.down.Store(true)
	tick("outage")
	first := b.hits.Load()
	for i := 0; b.hits.Load()-first < 3; i++ { // every later request is a probe
		if i == 4000 {
			t.Fatalf("after %d ticks only %d probes reached the bridge", i, b.hits.Load()-first)
		}
		tick("outage")
	}
	b.down.Store(false)
	for i := 0; statusOf(t, state, "zigbee2mqtt")["state"] != "closed"; i++ {
		if i == 4000 {
			t.Fatalf("the circuit never closed in %d ticks", i)
		}
		tick("recovery")
	}
	for range 3 {
		tick("healthy again")
	}
	return phases, jobs
}

// cronEnv is the environment Debian's cron (the cron package) gives a job
// of root's crontab before the crontab's own NAME=value lines.
var cronEnv = []string{"PATH=/usr/bin:/bin", "SHELL=/bin/sh", "LOGNAME=root", "HOME=/root"}

// crontab is a crontab block of the docs: its NAME=value lines and its one
// job's command.
type crontab struct {
	vars    []string
	command string
}

func parseCrontab(t *testing.T, block string) crontab {
	t.Helper()
	var c crontab
	job := regexp.MustCompile(`^(\S+\s+){5}(.+)$`)
	assign := regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$`)
	for line := range strings.Lines(block) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if m := assign.FindStringSubmatch(line); m != nil {
			c.vars = append(c.vars, m[1]+"="+m[2])
			continue
		}
		m := job.FindStringSubmatch(line)
		if m == nil || c.command != "" {
			t.Fatalf("the crontab %q has a line %q that is neither NAME=value nor a (single) job", block, line)
		}
		c.command = m[2]
	}
	if c.command == "" {
		t.Fatalf("the crontab %q has no job", block)
	}
	return c
}

// installedCron returns a function that runs command as cron runs a job
// of the crontab c: by /bin/sh -c, in cron's environment with the
// crontab's lines over it (and env, the test's state dir and config),
// with fusebox installed in /usr/local/bin, as the release archive and
// go install put it (README.md, Install). So that the test touches no
// /usr/local/bin of the machine's, each job runs in a mount namespace of
// its own, where /usr/local/bin holds fusebox alone.
func installedCron(t *testing.T, c crontab, env []string) func(command string) testenv.Proc {
	t.Helper()
	if os.Geteuid() != 0 {
		testenv.Skip(t, "installing fusebox in /usr/local/bin, in a mount namespace, needs root")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		testenv.Skip(t, "unshare is not installed (util-linux): %v", err)
	}
	bin := t.TempDir()
	b, err := os.ReadFile(fuseboxBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "fusebox"), b, 0o755); err != nil {
		t.Fatal(err)
	}
	vars := append(append(slices.Clone(cronEnv), c.vars...), env...)
	return func(command string) testenv.Proc {
		args := append([]string{"--mount", "--propagation", "private", "sh", "-c",
			`mount --bind "$0" /usr/local/bin && exec env -i "$@"`, bin}, vars...)
		return testenv.Run(t, exec.Command("unshare", append(args, "/bin/sh", "-c", command)...))
	}
}

// cronLine is a crontab line that runs fusebox, wherever a page shows one:
// five schedule fields (or an @-shortcut), then fusebox.
var cronLine = regexp.MustCompile(`(?m)(^|` + "`" + `)(@(reboot|yearly|annually|monthly|weekly|daily|midnight|hourly)|([0-9*/,-]+ ){5})fusebox `)

// TestDocsCrontabsFindFuseboxWhereverItIsInstalled checks every crontab of
// README.md and docs/*.md that runs fusebox: each is a crontab block
// (never a line in the prose, which a reader copies without its PATH=),
// and its PATH= holds each dir README.md's Install puts fusebox in. cron's
// own PATH, /usr/bin:/bin, misses /usr/local/bin: without the line every
// run of a release archive's or go install's fusebox mails "fusebox: not
// found" (TestDocsCrontabLineMailsTwicePerOutage runs that).
func TestDocsCrontabsFindFuseboxWhereverItIsInstalled(t *testing.T) {
	readme := strings.Join(strings.Fields(doctext.Read(t, "README.md")), " ") // as wrapped anywhere
	installs := []struct{ says, dir string }{
		{"/usr/local/bin/fusebox ```", "/usr/local/bin"},       // the release archive
		{"installs `/usr/bin/fusebox`", "/usr/bin"},            // the .deb
		{"GOBIN=/usr/local/bin go install ", "/usr/local/bin"}, // go install
	}
	for _, install := range installs {
		if !strings.Contains(readme, install.says) {
			t.Errorf("README.md's Install no longer says %q: check where it puts fusebox, and this test", install.says)
		}
	}
	n := 0
	for _, page := range doctext.Pages(t) {
		blocks := doctext.Fenced(t, page, "crontab")
		shown := len(cronLine.FindAllString(doctext.Read(t, page), -1))
		for _, block := range blocks {
			shown -= len(cronLine.FindAllString(block, -1))
			c := parseCrontab(t, block)
			if !strings.Contains(c.command, "fusebox ") {
				continue
			}
			n++
			var path string
			for _, v := range c.vars {
				if p, ok := strings.CutPrefix(v, "PATH="); ok {
					path = p
				}
			}
			for _, install := range installs {
				if !slices.Contains(filepath.SplitList(path), install.dir) {
					t.Errorf("%s: the crontab %q has PATH %q, without %s, where README.md's Install puts fusebox", page, block, path, install.dir)
				}
			}
		}
		if shown != 0 {
			t.Errorf("%s shows %d crontab lines running fusebox outside a ```crontab block with its PATH= line: %q", page, shown, cronLine.FindAllString(doctext.Read(t, page), -1))
		}
	}
	if n < 2 {
		t.Fatalf("found %d crontabs running fusebox in the docs, want docs/schedulers.md's and docs/status.md's at least", n)
	}
}

// TestDocsTextfileCrontabWritesTheMetricsWithoutAMail runs the crontab of
// docs/status.md, as written, as cron does (see installedCron), with the
// textfile collector's dir below the test's: the job writes the metrics
// file and mails nothing.
func TestDocsTextfileCrontabWritesTheMetricsWithoutAMail(t *testing.T) {
	t.Parallel()
	c := parseCrontab(t, doctext.Block(t, "docs/status.md", "crontab", "fusebox status"))
	const shipped = "/var/lib/prometheus/node-exporter/fusebox.prom"
	if !strings.Contains(c.command, shipped) {
		t.Fatalf("the crontab of docs/status.md, %q, no longer writes %s: change this test with it", c.command, shipped)
	}
	dir := t.TempDir()
	prom := filepath.Join(dir, "node-exporter", "fusebox.prom")
	if err := os.MkdirAll(filepath.Dir(prom), 0o755); err != nil {
		t.Fatal(err)
	}
	run := installedCron(t, c, []string{"FUSEBOX_STATE_DIR=" + filepath.Join(dir, "state")})
	if j := run("fusebox run zigbee2mqtt -- true"); j.Code != 0 {
		t.Fatalf("a run to make a circuit: exit %d: %s", j.Code, j.Stderr)
	}
	if j := run(strings.Replace(c.command, shipped, prom, 1)); j.Code != 0 || j.Stdout != "" || j.Stderr != "" {
		t.Errorf("the job: exit %d, stdout %q, stderr %q; want exit 0 and nothing to mail", j.Code, j.Stdout, j.Stderr)
	}
	b, err := os.ReadFile(prom)
	if err != nil || !strings.Contains(string(b), `fusebox_circuitbreaker_state{name="zigbee2mqtt",state="closed"} 1`) {
		t.Errorf("the textfile: %v\n%s", err, b)
	}
}

// TestDocsCrontabLineMailsTwicePerOutage runs the crontab of
// docs/schedulers.md, as written, as cron does (see installedCron): any
// byte on stdout or stderr is a mail. None while the bridge works, at most
// two per outage, and those say what happened. The crontab's PATH finds
// fusebox wherever README.md's Install puts it; without it, cron's own
// does not, and every run mails "not found".
func TestDocsCrontabLineMailsTwicePerOutage(t *testing.T) {
	t.Parallel() // waits on processes and timers: it runs beside the others
	if _, err := exec.LookPath("curl"); err != nil {
		testenv.Skip(t, "curl is not installed") // the recipe is a curl command
	}
	block := doctext.Block(t, "docs/schedulers.md", "crontab", "fusebox run")
	if shown := doctext.Block(t, "README.md", "crontab", "fusebox run"); shown != block {
		t.Errorf("README.md shows the crontab %q, docs/schedulers.md %q: one crontab, tested here", shown, block)
	}
	c := parseCrontab(t, block)

	b := newBridgeHealth(t)
	command := b.aimed(t, c.command)
	state := filepath.Join(t.TempDir(), "state")
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	os.WriteFile(cfg, []byte(recipePolicy), 0o600)
	env := []string{"FUSEBOX_STATE_DIR=" + state, "FUSEBOX_CONFIG=" + cfg}

	t.Run("cron's own PATH: fusebox not found", func(t *testing.T) {
		run := installedCron(t, crontab{command: command}, env)
		if j := run(command); j.Code != 127 || !strings.Contains(j.Stderr, "fusebox: not found") {
			t.Errorf("exit %d, stderr %q; want sh's 127, fusebox: not found", j.Code, j.Stderr)
		}
	})

	run := installedCron(t, c, env)
	phases, jobs := outage(t, b, state, func() testenv.Proc { return run(command) })
	var mails []string
	report := fmt.Sprintf("%d jobs of %q", len(jobs), command)
	for i, j := range jobs {
		if j.Stdout == "" && j.Stderr == "" {
			continue
		}
		mail := fmt.Sprintf("job %d (%s, exit %d): stdout %q, stderr %q", i, phases[i], j.Code, j.Stdout, j.Stderr)
		mails = append(mails, mail)
		if strings.HasPrefix(phases[i], "healthy") {
			t.Errorf("a job mailed while the bridge worked: %s", mail)
		}
	}
	report += fmt.Sprintf(", %d mails:\n%s", len(mails), strings.Join(mails, "\n"))
	t.Log(report)
	if len(mails) > 2 {
		t.Errorf("want at most 2 mails for the outage: %s", report)
	}
	all := strings.Join(mails, "\n")
	for _, want := range []string{"circuit opened", "curl: (22)", "circuit closed"} {
		if !strings.Contains(all, want) {
			t.Errorf("no mail says %q: the news is lost: %s", want, report)
		}
	}
}

// TestDocsMigrationSnippetIsQuietUnderCron runs the fusebox line that
// replaces a bash retry function in docs/run.md, as a job of the crontab
// of docs/schedulers.md, through an outage: no mail while the bridge
// works, so its curl keeps -o /dev/null. The same line without it mails
// each healthy run's body, as the page says.
func TestDocsMigrationSnippetIsQuietUnderCron(t *testing.T) {
	t.Parallel() // waits on processes and timers: it runs beside the others
	if _, err := exec.LookPath("curl"); err != nil {
		testenv.Skip(t, "curl is not installed") // the recipe is a curl command
	}
	line := strings.TrimSpace(doctext.Block(t, "docs/run.md", "bash", "fusebox run"))
	if !strings.HasPrefix(line, "fusebox run ") || strings.Contains(line, "\n") {
		t.Fatalf("docs/run.md's migrated line is %q, want one fusebox run line", line)
	}
	c := parseCrontab(t, doctext.Block(t, "docs/schedulers.md", "crontab", "fusebox run"))
	for _, v := range []struct {
		name    string
		command string
		healthy func(mails int) bool
	}{
		{"as written: no mail while the bridge works", line, func(mails int) bool { return mails == 0 }},
		{"without -o /dev/null: a mail for each healthy run", strings.Replace(line, " -o /dev/null", "", 1),
			func(mails int) bool { return mails > 2 }},
	} {
		t.Run(v.name, func(t *testing.T) {
			if !strings.Contains(line, " -o /dev/null") {
				t.Fatalf("docs/run.md's migrated line %q has no -o /dev/null", line)
			}
			b := newBridgeHealth(t)
			command := b.aimed(t, v.command)
			state := filepath.Join(t.TempDir(), "state")
			cfg := filepath.Join(t.TempDir(), "config.yaml")
			os.WriteFile(cfg, []byte(recipePolicy), 0o600)
			run := installedCron(t, c, []string{"FUSEBOX_STATE_DIR=" + state, "FUSEBOX_CONFIG=" + cfg})
			phases, jobs := outage(t, b, state, func() testenv.Proc { return run(command) })
			healthy, mails := 0, 0
			for i, j := range jobs {
				if strings.HasPrefix(phases[i], "healthy") {
					healthy++
					if j.Stdout != "" || j.Stderr != "" {
						mails++
					}
				}
			}
			t.Logf("%q: %d mails in %d healthy ticks", command, mails, healthy)
			if !v.healthy(mails) {
				t.Errorf("%q: %d mails in %d healthy ticks", command, mails, healthy)
			}
		})
	}
}

// cronicleFailed applies Cronicle's rule for a Shell Script plugin's job
// (bin/shell-plugin.js and lib/job.js): a stdout line that is a JSON
// object with complete set ends the job with its code when "Interpret
// JSON in Output" is on; otherwise the script's exit status does. A job
// fails, and mails, when that code is not 0.
func cronicleFailed(j testenv.Proc, interpretJSON bool) bool {
	if interpretJSON {
		for _, line := range strings.Split(j.Stdout, "\n") {
			if !regexp.MustCompile(`^\s*\{.+\}\s*$`).MatchString(line) {
				continue
			}
			var status struct {
				Complete any `json:"complete"`
				Code     any `json:"code"`
			}
			if json.Unmarshal([]byte(line), &status) == nil && status.Complete != nil && status.Complete != false && status.Complete != 0.0 {
				return status.Code != nil && status.Code != 0.0 && status.Code != false && status.Code != ""
			}
		}
	}
	return j.Code != 0
}

// TestDocsCronicleScriptFailsOneJobPerOutage runs the Cronicle script of
// docs/schedulers.md as the Shell Script plugin does (written to a file of
// mode 0775 and executed) through an outage of several failed probes, and
// counts the jobs Cronicle would fail, with "Interpret JSON in Output" off
// and on.
func TestDocsCronicleScriptFailsOneJobPerOutage(t *testing.T) {
	t.Parallel() // waits on processes and timers: it runs beside the others
	if _, err := exec.LookPath("curl"); err != nil {
		testenv.Skip(t, "curl is not installed") // the recipe is a curl command
	}
	b := newBridgeHealth(t)
	script := filepath.Join(t.TempDir(), "cronicle-script-temp.sh")
	os.WriteFile(script, []byte(b.aimed(t, doctext.Block(t, "docs/schedulers.md", "sh", "--skip-told"))), 0o775)
	state := filepath.Join(t.TempDir(), "state")
	env := recipeEnv(t, state)
	phases, jobs := outage(t, b, state, func() testenv.Proc {
		cmd := exec.Command(script)
		cmd.Env = env
		return testenv.Run(t, cmd)
	})
	for _, interpretJSON := range []bool{false, true} {
		var failed []string
		for i, j := range jobs {
			if cronicleFailed(j, interpretJSON) {
				failed = append(failed, fmt.Sprintf("job %d (%s): exit %d, stderr %q", i, phases[i], j.Code, j.Stderr))
			}
		}
		report := fmt.Sprintf("interpret JSON %v: %d jobs, %d failed:\n%s", interpretJSON, len(jobs), len(failed), strings.Join(failed, "\n"))
		t.Log(report)
		if len(failed) > 2 || len(failed) == 0 {
			t.Errorf("want the outage to fail one or two jobs: %s", report)
		}
		for _, f := range failed {
			if strings.Contains(f, "healthy") || strings.Contains(f, "recovery") {
				t.Errorf("a job failed outside the outage: %s", report)
			}
		}
	}
}

// haSensor is the command_line sensor of docs/schedulers.md.
type haSensor struct {
	CommandLine []struct {
		Sensor haSensorConfig `yaml:"sensor"`
	} `yaml:"command_line"`
}

type haSensorConfig struct {
	Command        string   `yaml:"command"`
	CommandTimeout int      `yaml:"command_timeout"`
	ValueTemplate  string   `yaml:"value_template"`
	Availability   string   `yaml:"availability"`
	JSONAttributes []string `yaml:"json_attributes"`
}

// docsSensor reads the command_line sensor of docs/schedulers.md.
func docsSensor(t *testing.T) haSensorConfig {
	t.Helper()
	var ha haSensor
	if err := yaml.Unmarshal([]byte(doctext.Block(t, "docs/schedulers.md", "yaml home-assistant", "command_line:")), &ha); err != nil || len(ha.CommandLine) != 1 {
		t.Fatalf("the command_line block of docs/schedulers.md: %v, %d sensors", err, len(ha.CommandLine))
	}
	return ha.CommandLine[0].Sensor
}

// haScan is what Home Assistant makes of one scan of a command_line
// sensor (homeassistant/components/command_line: utils.py
// async_check_output_or_log, sensor.py _async_update).
type haScan struct {
	errorLogged string // "Command failed", "Timeout for command", a template's ERROR or WARNING; "" when none
	available   bool
	state       any // the value_template's output; nil when not rendered
	attributes  map[string]any
}

// renderAsHomeAssistant renders sensor's templates over one scan's stdout
// (nil: the command failed) with Jinja2, in order, as Home Assistant does
// (testenv.RenderAsHomeAssistant).
func renderAsHomeAssistant(t *testing.T, sensor haSensorConfig, stdout *string, order string) haScan {
	t.Helper()
	r := testenv.RenderAsHomeAssistant(t, testenv.HATemplates{Value: stdout, ValueTemplate: sensor.ValueTemplate,
		Availability: sensor.Availability, JSONAttributes: sensor.JSONAttributes, Order: order})
	return haScan{available: r.Available, state: r.State, attributes: r.Attributes,
		errorLogged: strings.Join(append(r.Errors, r.Warnings...), "; ")}
}

// scanAsHomeAssistant runs command through /bin/sh with HA's timeout and
// reads it as HA does: an exit status other than 0 or the timeout logs an
// ERROR and leaves no value; else the value is stdout, stripped, over
// which the sensor's templates are rendered in each of testenv.HAOrders.
func scanAsHomeAssistant(t *testing.T, sensor haSensorConfig, timeout time.Duration, env []string) map[string]haScan {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", sensor.Command)
	cmd.Env = env
	var stdout strings.Builder
	cmd.Stdout = &stdout
	err := cmd.Run()
	failed := ""
	var value *string
	switch {
	case ctx.Err() != nil:
		failed = "Timeout for command"
	case err != nil:
		failed = "Command failed: " + err.Error()
	default:
		v := strings.TrimSpace(stdout.String())
		value = &v
	}
	scans := map[string]haScan{}
	for _, order := range testenv.HAOrders {
		s := renderAsHomeAssistant(t, sensor, value, order)
		if failed != "" {
			s.errorLogged = strings.Trim(failed+"; "+s.errorLogged, "; ")
		}
		scans[order] = s
	}
	return scans
}

// The templates of docs/schedulers.md show every answer, a number or a
// string, whichever order Home Assistant renders them in, and only
// `"source":null` (nothing to show) unavailable; never an ERROR or a
// WARNING. The templates the page had before read value_json over the
// value_template's output in the older order, so a string answer showed
// unavailable: the check catches that.
func TestDocsHomeAssistantTemplatesShowEveryAnswer(t *testing.T) {
	t.Parallel() // waits on processes and timers: it runs beside the others
	sensor := docsSensor(t)
	stdout := func(source, body any) *string {
		b, _ := json.Marshal(map[string]any{"source": source, "status": 200, "attempts": 1, "body": body, "errors": []any{}})
		s := string(b)
		return &s
	}
	for _, tc := range []struct {
		name   string
		stdout *string
		want   any // the state; nil: unavailable
	}{
		{"a number", stdout("openweather", 21.5), "21.5"},
		{"a string", stdout("wttr", "Partly cloudy"), "Partly cloudy"},
		{"zero", stdout("openweather", 0), "0"},
		{"a stale string", stdout("stale", "Sunny"), "Sunny"},
		{"nothing to show", stdout(nil, nil), nil},
	} {
		for _, order := range testenv.HAOrders {
			s := renderAsHomeAssistant(t, sensor, tc.stdout, order)
			if s.errorLogged != "" {
				t.Errorf("%s, %s: Home Assistant logs %s", tc.name, order, s.errorLogged)
			}
			if tc.want == nil {
				if s.available {
					t.Errorf("%s, %s: available (%+v), want unavailable", tc.name, order, s)
				}
				continue
			}
			if !s.available || s.state != tc.want {
				t.Errorf("%s, %s: %+v, want available showing %q", tc.name, order, s, tc.want)
			}
		}
	}
	old := sensor
	old.ValueTemplate, old.Availability = "{{ value_json.body }}", "{{ value_json is defined and value_json.source is not none }}"
	if s := renderAsHomeAssistant(t, old, stdout("wttr", "Partly cloudy"), "value_first"); s.available {
		t.Errorf("the old templates show a string answer available (%+v): the rendering does not read availability over the value_template's output", s)
	}
}

// TestDocsHomeAssistantCommandLineSensor runs the command_line sensor of
// docs/schedulers.md, its command as Home Assistant does, on the example
// config: a value while the chain answers, the stale value through an
// outage, and with nothing to show unavailable, never an ERROR, in either
// order of rendering; the chain's deadline is inside the sensor's
// command_timeout.
func TestDocsHomeAssistantCommandLineSensor(t *testing.T) {
	t.Parallel() // waits on processes and timers: it runs beside the others
	sensor := docsSensor(t)
	testenv.JinjaPython(t)
	timeout := time.Duration(sensor.CommandTimeout) * time.Second
	if sensor.CommandTimeout == 0 {
		timeout = 15 * time.Second // HA's DEFAULT_TIMEOUT
	}
	const examplePath = "../../examples/weather.yaml"
	data, err := os.ReadFile(examplePath)
	if err != nil {
		t.Fatal(err)
	}
	example, err := config.Parse(examplePath, data, config.Env{
		Lookup:   func(k string) (string, bool) { return "demo-key", k == "OWM_API_KEY" }, // the example's ${OWM_API_KEY}
		ReadFile: func(p string) ([]byte, error) { return config.ReadRegularFile(p, config.MaxFileValue) },
	})
	if err != nil {
		t.Fatal(err)
	}
	chain := strings.Fields(sensor.Command)[len(strings.Fields(sensor.Command))-1]
	var deadline time.Duration
	_, chains := example.Callables()
	for _, ch := range chains {
		if ch.Name == chain {
			deadline = ch.TotalDeadline(example.Policy)
		}
	}
	if deadline == 0 || deadline+2*time.Second > timeout {
		t.Errorf("chain %s's deadline %s is not inside the sensor's command_timeout %s (with 2s to start)", chain, deadline, timeout)
	}

	apis, state, env := weatherExample(t)
	// The example keeps an answer fresh for 10m: asked again in the test's
	// seconds, the chain would answer from it and never meet the outage.
	cfgPath := strings.TrimPrefix(env[len(env)-1], "FUSEBOX_CONFIG=")
	cfgText, _ := os.ReadFile(cfgPath)
	os.WriteFile(cfgPath, []byte(strings.Replace(string(cfgText), "fresh: 10m", "fresh: 1ms", 1)), 0o600)
	env = append(fbCmd(state, nil).Env, append(env, "PATH="+filepath.Dir(fuseboxBin)+string(os.PathListSeparator)+os.Getenv("PATH"))...)
	scan := func(what string, check func(s haScan) bool, want string) {
		t.Helper()
		for order, s := range scanAsHomeAssistant(t, sensor, timeout, env) {
			t.Logf("%s, %s: %+v", what, order, s)
			if s.errorLogged != "" {
				t.Errorf("%s, %s: Home Assistant logs %s", what, order, s.errorLogged)
			}
			if !check(s) {
				t.Errorf("%s, %s: %+v, want %s", what, order, s, want)
			}
		}
	}

	scan("healthy", func(s haScan) bool {
		return s.available && s.state == "21.5" && s.attributes["source"] == "openweather"
	}, "21.5 from openweather")
	for _, api := range []string{fakeapis.OpenWeatherMap, fakeapis.Wttr, fakeapis.OpenMeteo} {
		apis.Down(api)
	}
	for i := range 3 {
		scan(fmt.Sprintf("outage, scan %d", i), func(s haScan) bool {
			return s.available && s.state == "21.5" && s.attributes["source"] == "stale" && s.attributes["age_seconds"] != nil
		}, "the stale 21.5 with its age")
	}

	// Nothing to show: no answer was ever kept in this state dir.
	env = append(env, "FUSEBOX_STATE_DIR="+filepath.Join(t.TempDir(), "empty"))
	for i := range 3 {
		scan(fmt.Sprintf("nothing kept, scan %d", i), func(s haScan) bool { return !s.available }, "unavailable")
	}
}

// TestDocsPrometheusScrapesEachFamilyOnce applies the
// scrape_configs of docs/status.md to what each target serves: the node job's
// metric_relabel_configs drop every family status --format prometheus
// writes into the textfile (as Prometheus matches a regex: anchored at
// both ends) and none of node_exporter's own, so no family is scraped from
// both jobs.
func TestDocsPrometheusScrapesEachFamilyOnce(t *testing.T) {
	var prom struct {
		ScrapeConfigs []struct {
			JobName        string `yaml:"job_name"`
			MetricRelabels []struct {
				SourceLabels []string `yaml:"source_labels"`
				Regex        string   `yaml:"regex"`
				Action       string   `yaml:"action"`
			} `yaml:"metric_relabel_configs"`
		} `yaml:"scrape_configs"`
	}
	if err := yaml.Unmarshal([]byte(doctext.Block(t, "docs/status.md", "yaml prometheus", "scrape_configs:")), &prom); err != nil {
		t.Fatalf("the prometheus.yml of docs/status.md: %v", err)
	}
	dropped := func(job, family string) bool {
		for _, sc := range prom.ScrapeConfigs {
			if sc.JobName != job {
				continue
			}
			for _, r := range sc.MetricRelabels {
				if r.Action == "drop" && len(r.SourceLabels) == 1 && r.SourceLabels[0] == "__name__" &&
					regexp.MustCompile("^(?:"+r.Regex+")$").MatchString(family) {
					return true
				}
			}
		}
		return false
	}

	state := t.TempDir()
	inproc(t, state, "run", "nas", "--", "true")
	inproc(t, state, "run", "--attempts", "1", "--trip-after", "1", "garage", "--", "false")
	p := inproc(t, state, "status", "--format", "prometheus")
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(p.Stdout))
	if p.Code != 0 || err != nil || len(fams) == 0 {
		t.Fatalf("status --format prometheus: exit %d, %v:\n%s", p.Code, err, p.Stdout)
	}
	for name := range fams {
		if dropped("fusebox", name) {
			t.Errorf("the fusebox job drops %s: the daemon's own families are lost", name)
		}
		if !dropped("node", name) {
			t.Errorf("the node job keeps the textfile's %s: scraped from both jobs", name)
		}
	}
	for _, own := range []string{"node_textfile_mtime_seconds", "node_cpu_seconds_total", "up"} {
		if dropped("node", own) {
			t.Errorf("the node job drops node_exporter's own %s", own)
		}
	}
}
