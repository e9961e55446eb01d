package packaging_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// envelope is what `fusebox call --json` prints.
type envelope struct {
	Source *string         `json:"source"`
	Status *int            `json:"status"`
	Body   json.RawMessage `json:"body"`
	Errors []struct {
		Name, Reason string
	} `json:"errors"`
}

func parseEnvelope(t *testing.T, out string) envelope {
	t.Helper()
	var e envelope
	if err := json.Unmarshal([]byte(out), &e); err != nil {
		t.Fatalf("call --json printed %q: %v", out, err)
	}
	return e
}

// daemonAnswer is the body of the daemon's 503.
type daemonAnswer struct {
	Error  string `json:"error"`
	Errors []struct {
		Name, Reason string
		Skipped      bool
	} `json:"errors"`
}

// standInConfig is the config of a stand-in for n8n or Node-RED: one
// endpoint at url, through the daemon, sending the token read from a file
// (as the compose secret is), with the daemon's 503 taken as an answer so
// that its body is printed.
func standInConfig(url, tokenFile string) string {
	headers := ""
	if tokenFile != "" {
		headers = `      headers: {Authorization: "Bearer ${file:` + tokenFile + `}"}` + "\n"
	}
	return "circuits:\n  daemon:\n    attempts: 1\n    http:\n      url: " + url + "\n" + headers +
		"      expect: {status: [200, 503]}\n      retry_on: [connect]\n"
}

// TestContainerCompose runs packaging/container/compose.yaml as written with
// podman-compose (the fusebox service; no n8n or Node-RED image can be
// pulled here), in a project dir holding its config and token file and with
// the state dir of a host group bound as /data. A stand-in for n8n on the
// compose network calls the daemon by its service name; fusebox on the host
// and the daemon in the container share one circuit through the bound dir.
func TestContainerCompose(t *testing.T) {
	t.Parallel()
	p := newPodman(t)
	if _, err := exec.LookPath("podman-compose"); err != nil {
		testenv.Skip(t, "podman-compose is not installed (apt-get install podman-compose)")
	}
	group, _ := testenv.Group(t, 0)
	g, err := user.LookupGroup(group)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	state, proj := filepath.Join(root, "state"), filepath.Join(root, "proj")
	if err := os.Mkdir(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	// The host's side, as packaging/README.md says: a state dir shared
	// with a group (the .deb's fusebox, here a group of the test's).
	if out, err := testenv.FuseboxCmd(fuseboxBin, state, nil, "state", "init", "--group", group, state).CombinedOutput(); err != nil {
		t.Fatalf("state init: %v\n%s", err, out)
	}
	compose, err := os.ReadFile("container/compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(proj, "compose.yaml"), string(compose))
	// The circuit's upstream refuses every connection (nothing listens on
	// port 9 in the container): each call fails fast.
	write(t, filepath.Join(proj, "config.yaml"), "circuits:\n  weather:\n    attempts: 3\n    backoff: 10ms\n    open_for: 10m\n    http: {url: \"http://127.0.0.1:9/\"}\n")
	token := "tok-" + randTag() + randTag()
	tokenFile := filepath.Join(proj, "fusebox_token")
	write(t, tokenFile, token+"\n")
	// Readable by the container's group, not by every user.
	if err := os.Chown(tokenFile, 0, mustAtoi(t, g.Gid)); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(tokenFile, 0o640); err != nil {
		t.Fatal(err)
	}

	project := "fbt" + randTag()
	composeCmd := func(args ...string) *exec.Cmd {
		cmd := exec.Command("podman-compose", append([]string{"-p", project}, args...)...)
		cmd.Dir = proj
		cmd.Env = append(p.env, "FUSEBOX_GID="+g.Gid, "FUSEBOX_STATE_DIR="+state, "FUSEBOX_IMAGE="+p.tag, "TZ="+containerTZ)
		return cmd
	}
	container, network := project+"_fusebox_1", project+"_homeauto"
	t.Cleanup(func() {
		composeCmd("down").Run()
		p.try("rm", "-f", "-t", "2", container)
		p.try("network", "rm", "-f", network)
	})
	if out, err := composeCmd("up", "-d", "fusebox").CombinedOutput(); err != nil {
		t.Fatalf("podman-compose up: %v\n%s", err, out)
	}
	p.waitServing(t, container)

	t.Run("runs as uid 8417 with the host group, nothing published", func(t *testing.T) {
		if got := p.run(t, "inspect", container, "--format", "{{.Config.User}}"); got != "8417:"+g.Gid {
			t.Errorf("user %q, want 8417:%s", got, g.Gid)
		}
		if got := p.run(t, "port", container); got != "" {
			t.Errorf("published ports: %q, want none", got)
		}
	})
	t.Run("the image's health check passes", func(t *testing.T) {
		if out, err := p.try("healthcheck", "run", container); err != nil {
			t.Fatalf("%v (%s)", err, out)
		}
	})
	t.Run("the image holds the build host's CA certificates", func(t *testing.T) {
		got := filepath.Join(t.TempDir(), "ca.crt")
		p.run(t, "cp", container+":/etc/ssl/certs/ca-certificates.crt", got)
		a, err := os.ReadFile(got)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile("/etc/ssl/certs/ca-certificates.crt")
		if err != nil {
			t.Fatal(err)
		}
		if len(a) == 0 || string(a) != string(b) {
			t.Errorf("the image's CA bundle (%d bytes) is not the host's (%d bytes)", len(a), len(b))
		}
	})
	t.Run("the image carries the licenses, as every archive does", func(t *testing.T) {
		dir := t.TempDir()
		p.run(t, "cp", container+":/usr/share/doc/fusebox", dir)
		p.run(t, "cp", container+":/usr/bin/fusebox", filepath.Join(dir, "bin"))
		for _, f := range []string{"LICENSE", "NOTICE"} {
			got, err := os.ReadFile(filepath.Join(dir, "fusebox", f))
			want, _ := os.ReadFile(filepath.Join("..", f))
			if err != nil || len(want) == 0 || string(got) != string(want) {
				t.Errorf("the image's /usr/share/doc/fusebox/%s is not the checkout's (%v)", f, err)
			}
		}
		bin, err := os.ReadFile(filepath.Join(dir, "bin"))
		if err != nil {
			t.Fatal(err)
		}
		third, err := os.ReadFile(filepath.Join(dir, "fusebox", "THIRD-PARTY-LICENSES"))
		if err != nil {
			t.Fatal(err)
		}
		checkThirdPartyLicenses(t, bin, string(third))
		if got := p.run(t, "image", "inspect", p.tag, "--format", `{{index .Labels "org.opencontainers.image.licenses"}}`); got != "Apache-2.0" {
			t.Errorf("label org.opencontainers.image.licenses %q, want Apache-2.0", got)
		}
	})

	t.Run("the health check fails where no daemon answers", func(t *testing.T) {
		// The image with its daemon elsewhere than the check looks.
		name := project + "_elsewhere"
		p.removeContainer(t, name)
		p.run(t, "run", "-d", "--name", name, "--network", network, p.tag, "serve", "--listen", "127.0.0.1:9417")
		p.waitServing(t, name)
		if out, err := p.try("healthcheck", "run", name); err == nil || !strings.Contains(out, "unhealthy") {
			t.Fatalf("health check of a container whose daemon is not on 8417: %v (%s), want unhealthy", err, out)
		}
	})

	t.Run("failures recorded at once from the host and the container add up", func(t *testing.T) {
		// Each failed run takes the circuit's lock and rewrites its state:
		// a lock that did not hold across the bind mount, or between the
		// host's root and the container's uid 8417, would lose updates.
		const each = 8
		var procs []*exec.Cmd
		for range each {
			procs = append(procs,
				testenv.FuseboxCmd(fuseboxBin, state, nil, "run", "--attempts", "1", "--trip-after", "1000", "shared", "--", "false"),
				exec.Command("podman", "exec", container, "/usr/bin/fusebox", "run", "--attempts", "1", "--trip-after", "1000",
					"shared", "--", "/usr/bin/fusebox", "--no-such-flag"))
		}
		for _, cmd := range procs {
			if cmd.Args[0] == "podman" {
				cmd.Env = p.env
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
		}
		for _, cmd := range procs {
			cmd.Wait() // each exits with its command's failure
		}
		out, err := testenv.FuseboxCmd(fuseboxBin, state, nil, "status", "--json").Output()
		if err != nil {
			t.Fatal(err)
		}
		var circuits []struct {
			Name                string `json:"name"`
			ConsecutiveFailures int    `json:"consecutive_failures"`
			TotalFailures       int    `json:"total_failures"`
		}
		if err := json.Unmarshal(out, &circuits); err != nil {
			t.Fatal(err)
		}
		for _, c := range circuits {
			if c.Name == "shared" {
				if c.ConsecutiveFailures != 2*each || c.TotalFailures != 2*each {
					t.Fatalf("shared: %d consecutive and %d failures in all, want %d of each", c.ConsecutiveFailures, c.TotalFailures, 2*each)
				}
				return
			}
		}
		t.Fatalf("no circuit shared in %s", out)
	})

	secret := map[string]string{tokenFile: "/run/secrets/fusebox_token"}
	inGroup := []string{"--user", "8417:" + g.Gid} // the token file is the group's
	url := "http://fusebox:8417/call/weather"
	t.Run("a stand-in without the token is refused", func(t *testing.T) {
		out, code := p.standIn(t, network, nil, nil, standInConfig(url, ""), nil, "daemon")
		if e := parseEnvelope(t, out); code == 0 || len(e.Errors) != 1 || !strings.Contains(e.Errors[0].Reason, "401") {
			t.Fatalf("exit %d, %s; want a 401", code, out)
		}
	})
	t.Run("the daemon's failures open the circuit the host's run skips", func(t *testing.T) {
		out, code := p.standIn(t, network, nil, inGroup, standInConfig(url, "/run/secrets/fusebox_token"), secret, "daemon")
		e := parseEnvelope(t, out)
		if code != 0 || e.Status == nil || *e.Status != http.StatusServiceUnavailable {
			t.Fatalf("exit %d, %s; want the daemon's 503", code, out)
		}
		cmd := testenv.FuseboxCmd(fuseboxBin, state, nil, "run", "weather", "--", "true")
		out2, err := cmd.CombinedOutput()
		if xe := (*exec.ExitError)(nil); !errorsAs(err, &xe) || xe.ExitCode() != 75 {
			t.Fatalf("host run: %v, want exit 75 (skipped, the circuit open)\n%s", err, out2)
		}
	})
	t.Run("a circuit the host's run opens is open in the daemon", func(t *testing.T) {
		reset := testenv.FuseboxCmd(fuseboxBin, state, nil, "reset", "weather")
		if out, err := reset.CombinedOutput(); err != nil {
			t.Fatalf("reset: %v\n%s", err, out)
		}
		run := testenv.FuseboxCmd(fuseboxBin, state, nil, "run", "--attempts", "1", "--trip-after", "1", "--open-for", "10m", "weather", "--", "false")
		run.CombinedOutput() // exits 1: the command's status; the circuit opens
		out, code := p.standIn(t, network, nil, inGroup, standInConfig(url, "/run/secrets/fusebox_token"), secret, "daemon")
		e := parseEnvelope(t, out)
		var body daemonAnswer
		if code != 0 || json.Unmarshal(e.Body, &body) != nil || len(body.Errors) != 1 || !body.Errors[0].Skipped {
			t.Fatalf("exit %d, %s; want the daemon's 503 skipping weather, open", code, out)
		}
		// And the files both wrote are the group's.
		entries, _ := os.ReadDir(state)
		for _, en := range entries {
			if info, err := en.Info(); err == nil && info.Mode().Perm()&0o007 != 0 {
				t.Errorf("%s is %v: open to every user", en.Name(), info.Mode())
			}
		}
	})
	t.Run("compose's TZ is the container's local time", func(t *testing.T) {
		in, err := p.try("exec", container, "/usr/bin/fusebox", "history", "weather")
		if err != nil {
			t.Fatal(err)
		}
		want, utc := historyStart(t, state, containerTZ), historyStart(t, state, "UTC")
		if got := firstStart(in); got != want || want == utc {
			t.Errorf("the outage began at %q in the container, %q on the host with TZ=%s (%q in UTC)\n%s", got, want, containerTZ, utc, in)
		}
	})
}

// containerTZ is a zone whose offset from UTC is never zero, so that a
// binary without the time zone database (UTC) shows.
const containerTZ = "Asia/Kolkata"

// historyStart returns the START of the first row of fusebox history
// weather, run on the host with TZ=tz.
func historyStart(t *testing.T, state, tz string) string {
	t.Helper()
	out, err := testenv.FuseboxCmd(fuseboxBin, state, []string{"TZ=" + tz}, "history", "weather").Output()
	if err != nil {
		t.Fatalf("history with TZ=%s: %v", tz, err)
	}
	return firstStart(string(out))
}

// firstStart returns the START (date and time) of a history table's first
// row, or "" when it has none.
func firstStart(table string) string {
	lines := strings.Split(strings.TrimSpace(table), "\n")
	if len(lines) < 2 {
		return ""
	}
	if f := strings.Fields(lines[1]); len(f) >= 3 {
		return f[1] + " " + f[2]
	}
	return ""
}

// TestContainerHostDaemon follows the host-daemon recipe of
// packaging/README.md: the daemon on the host, started with the ExecStart of
// container/fusebox-containers.conf (on a free port), listens on every address
// (0.0.0.0) with a token and the name host.docker.internal, started before
// the container network exists, so that a bridge made later (docker0, a
// compose network, podman's) reaches it. A container on a new bridge
// network calls it through host.docker.internal mapped to the network's
// gateway, which is the address Docker's host-gateway gives (podman 4.3
// has no host-gateway keyword: the test maps the name to the gateway
// itself), and through host.containers.internal, which podman maps there.
func TestContainerHostDaemon(t *testing.T) {
	t.Parallel()
	p := newPodman(t)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"temp": 21}`))
	}))
	t.Cleanup(upstream.Close)
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	write(t, filepath.Join(dir, "config.yaml"), "circuits:\n  hello:\n    http: {url: \""+upstream.URL+"\"}\n")
	token := "tok-" + randTag() + randTag()
	tokenFile := filepath.Join(dir, "token")
	write(t, tokenFile, token+"\n")
	args := dropInArgs(t, tokenFile)
	port := startWildcardDaemon(t, testenv.FuseboxCmd(fuseboxBin, state, []string{"FUSEBOX_CONFIG=" + filepath.Join(dir, "config.yaml")}, args...))

	network := "fbt" + randTag()
	gateway := p.network(t, network) // after the daemon: the bridge comes later
	hosts := []string{"host.docker.internal:" + gateway}
	url := "http://host.docker.internal:" + port + "/call/hello"
	files := map[string]string{tokenFile: "/run/secrets/fusebox_token"}

	out, code := p.standIn(t, network, hosts, nil, standInConfig(url, "/run/secrets/fusebox_token"), files, "daemon")
	if e := parseEnvelope(t, out); code != 0 || e.Status == nil || *e.Status != 200 || string(e.Body) != `{"temp":21}` {
		t.Fatalf("exit %d, %s; want the upstream's answer through the host daemon", code, out)
	}
	out, code = p.standIn(t, network, hosts, nil, standInConfig(url, ""), nil, "daemon")
	if e := parseEnvelope(t, out); code == 0 || len(e.Errors) != 1 || !strings.Contains(e.Errors[0].Reason, "401") {
		t.Fatalf("without the token: exit %d, %s; want a 401", code, out)
	}
	// podman's own name for the host, which it maps to the gateway itself.
	podmanURL := "http://host.containers.internal:" + port + "/call/hello"
	out, code = p.standIn(t, network, nil, nil, standInConfig(podmanURL, "/run/secrets/fusebox_token"), files, "daemon")
	if e := parseEnvelope(t, out); code != 0 || e.Status == nil || *e.Status != 200 {
		t.Fatalf("through host.containers.internal: exit %d, %s; want the upstream's answer", code, out)
	}
}

// startWildcardDaemon starts cmd, a `fusebox serve --listen 0.0.0.0:0`,
// returns the port it logs once it serves, and stops it, by its PID, when
// the test ends.
func startWildcardDaemon(t *testing.T, cmd *exec.Cmd) (port string) {
	t.Helper()
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { cmd.Process.Kill(); <-done })
	found := make(chan string, 1)
	var log strings.Builder
	go func() {
		defer close(done)
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			log.WriteString(sc.Text() + "\n")
			if m := wildcardRE.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
		cmd.Wait()
	}()
	select {
	case port = <-found:
		return port
	case <-done:
		t.Fatalf("fusebox serve exited: %s", log.String())
	}
	return ""
}

var wildcardRE = regexp.MustCompile(`serving on http://\[::\]:(\d+)`)

// dropInArgs returns the arguments of the last ExecStart= of the systemd
// drop-in container/fusebox-containers.conf, with tokenFile for its token
// file and port 0 for 8417.
func dropInArgs(t *testing.T, tokenFile string) []string {
	t.Helper()
	b, err := os.ReadFile("container/fusebox-containers.conf")
	if err != nil {
		t.Fatal(err)
	}
	var last string
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "ExecStart="); ok && v != "" {
			last = v
		}
	}
	fields := strings.Fields(last)
	if len(fields) < 2 || fields[0] != "/usr/bin/fusebox" {
		t.Fatalf("ExecStart=%s: want /usr/bin/fusebox serve ...", last)
	}
	args := fields[1:]
	for i, a := range args {
		switch a {
		case "/etc/fusebox/token":
			args[i] = tokenFile
		case "0.0.0.0:8417":
			args[i] = "0.0.0.0:0"
		}
	}
	return args
}

// TestContainersDropInVerify has systemd-analyze verify fusebox.service with
// the drop-in beside it, as systemd would read them.
func TestContainersDropInVerify(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		testenv.Skip(t, "no systemd-analyze (apt-get install systemd): %v", err)
	}
	dir := t.TempDir()
	unit, err := os.ReadFile("systemd/fusebox.service")
	if err != nil {
		t.Fatal(err)
	}
	dropIn, err := os.ReadFile("container/fusebox-containers.conf")
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/usr/local/bin/fusebox", "/usr/bin/fusebox"} {
		unit = []byte(strings.ReplaceAll(string(unit), path, fuseboxBin))
		dropIn = []byte(strings.ReplaceAll(string(dropIn), path, fuseboxBin))
	}
	write(t, filepath.Join(dir, "fusebox.service"), string(unit))
	if err := os.Mkdir(filepath.Join(dir, "fusebox.service.d"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "fusebox.service.d", "containers.conf"), string(dropIn))
	out, err := exec.Command(analyze, "verify", "--man=no", filepath.Join(dir, "fusebox.service")).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "" {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}
