package packaging_test

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/internal/fakeapis"
	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// The credentials the stand-in APIs accept, written to the key files the
// example config reads.
const (
	owmKey  = "packaging-owm-key"
	haToken = "packaging-ha-token"
)

// exampleConfig writes examples/config.yaml into dir with the real APIs'
// base URLs replaced by upstream's, its key files beside it, and returns
// its path. The chain's fresh: is dropped, so that every call reaches the
// upstream and a test can watch the fallbacks (fresh answers are fusebox
// call's, tested with the examples of docs/call.md). Every replaced text must be
// there exactly once: an example config that changed under the test fails
// it rather than passing untested.
func exampleConfig(t *testing.T, dir, upstream string) string {
	t.Helper()
	b, err := os.ReadFile("examples/config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	for _, r := range [][2]string{
		{"https://api.openweathermap.org", upstream},
		{"https://wttr.in", upstream},
		{"http://127.0.0.1:8123", upstream},
		{"    fresh: 10m\n", ""},
	} {
		if n := strings.Count(text, r[0]); n != 1 {
			t.Fatalf("examples/config.yaml has %q %d times, want once", r[0], n)
		}
		text = strings.Replace(text, r[0], r[1], 1)
	}
	path := filepath.Join(dir, "config.yaml")
	for name, content := range map[string]string{
		path:                              text,
		filepath.Join(dir, "owm_api_key"): owmKey + "\n",
		filepath.Join(dir, "ha_token"):    haToken + "\n",
	} {
		if err := os.WriteFile(name, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// upstream is the stand-in APIs on a loopback port. Until Release is called
// the first request to reach it waits, after saying so on Arrived: a test
// sees that a caller's request went through the daemon before it lets the
// answer come back.
type upstream struct {
	*fakeapis.Server
	URL     string
	Arrived chan struct{} // closed when the first request arrives
	release chan struct{}
	once    sync.Once
}

func startUpstream(t *testing.T) *upstream {
	u := &upstream{Server: fakeapis.New(owmKey, haToken),
		Arrived: make(chan struct{}), release: make(chan struct{})}
	var first sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		first.Do(func() {
			close(u.Arrived)
			select {
			case <-u.release:
			case <-r.Context().Done():
			}
		})
		u.Server.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { u.Release(); srv.Close() })
	u.URL = srv.URL
	return u
}

// Release lets the first request go on (and every later one at once).
func (u *upstream) Release() { u.once.Do(func() { close(u.release) }) }

// daemon is a `fusebox serve` process on a free loopback port.
type daemon struct {
	Addr   string
	token  string // every request's, when the daemon has one
	stderr testenv.Buffer
	stop   func()
}

// Stop stops the daemon now, by its PID, and waits until it has exited: its
// port then refuses connections, as a daemon that is down does.
func (d *daemon) Stop() { d.stop() }

var addrRE = regexp.MustCompile(`addr=(127\.0\.0\.1:\d+)`)

// startDaemon runs `fusebox serve --listen 127.0.0.1:0` with the config at
// cfg and state in dir/state, and waits until it says where it listens.
// It is stopped by its PID (SIGTERM, then SIGKILL) when the test ends.
// exampleDaemon starts a daemon with the example config in front of up's
// stand-in APIs, its config and state in a dir of its own.
func exampleDaemon(t *testing.T, up *upstream) *daemon {
	t.Helper()
	dir := t.TempDir()
	return startDaemon(t, dir, exampleConfig(t, dir, up.URL), "")
}

// exampleDaemonWithToken is exampleDaemon with a token every request must
// send ($FUSEBOX_SERVE_TOKEN), as off loopback.
func exampleDaemonWithToken(t *testing.T, up *upstream, token string) *daemon {
	t.Helper()
	dir := t.TempDir()
	return startDaemon(t, dir, exampleConfig(t, dir, up.URL), token)
}

func startDaemon(t *testing.T, dir, cfg, token string) *daemon {
	t.Helper()
	env := []string{"FUSEBOX_CONFIG=" + cfg}
	if token != "" {
		env = append(env, "FUSEBOX_SERVE_TOKEN="+token)
	}
	cmd := testenv.FuseboxCmd(fuseboxBin, filepath.Join(dir, "state"), env,
		"serve", "--listen", "127.0.0.1:0")
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	d := &daemon{token: token}
	d.Addr, d.stop = startWatched(t, "fusebox serve", cmd, pipe, &d.stderr, 30*time.Second, func(line string) (string, bool) {
		if m := addrRE.FindStringSubmatch(line); m != nil {
			return m[1], true
		}
		return "", false
	})
	return d
}

// startWatched starts cmd, whose output comes on out, copies each line of it
// to log, and waits up to wait for the first line ready accepts, returning
// what ready made of it, and a function that stops the process now, by its
// PID (stopProcess). When the test ends the process is stopped if it still
// runs, and its log shown if the test failed.
func startWatched(t *testing.T, name string, cmd *exec.Cmd, out io.Reader, log *testenv.Buffer,
	wait time.Duration, ready func(line string) (string, bool)) (string, func()) {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	found := make(chan string, 1)
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			fmt.Fprintln(log, sc.Text())
			if v, ok := ready(sc.Text()); ok {
				select {
				case found <- v:
				default:
				}
			}
		}
		cmd.Wait()
	}()
	stop := func() { stopProcess(t, name, cmd.Process, exited) }
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("%s's log:\n%s", name, log.String())
		}
	})
	select {
	case v := <-found:
		return v, stop
	case <-exited:
		t.Fatalf("%s exited:\n%s", name, log.String())
	case <-time.After(wait):
		t.Fatalf("%s was not ready within %s:\n%s", name, wait, log.String())
	}
	return "", stop
}

// post sends an empty POST to the daemon's path and fails the test unless
// it is answered 200.
func (d *daemon) post(t *testing.T, path string) {
	t.Helper()
	resp, err := d.do(http.MethodPost, path)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %s %s", path, resp.Status, b)
	}
}

// do sends an empty request to the daemon's path, with its token if it has one.
func (d *daemon) do(method, path string) (*http.Response, error) {
	req, err := http.NewRequest(method, "http://"+d.Addr+path, nil)
	if err != nil {
		return nil, err
	}
	if d.token != "" {
		req.Header.Set("Authorization", "Bearer "+d.token)
	}
	return http.DefaultClient.Do(req)
}

// metric returns the sum of the samples of the daemon's /metrics whose
// line starts with prefix (a name and, optionally, labels).
func (d *daemon) metric(t *testing.T, prefix string) float64 {
	t.Helper()
	resp, err := d.do(http.MethodGet, "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var sum float64
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		var v float64
		if _, err := fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &v); err == nil {
			sum += v
		}
	}
	return sum
}

// stopProcess stops p, which started as name, by its PID: SIGTERM, then
// SIGKILL if it has not exited (exited is closed when it has) after 20s.
func stopProcess(t *testing.T, name string, p *os.Process, exited <-chan struct{}) {
	select {
	case <-exited:
		return
	default:
	}
	p.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(20 * time.Second):
		t.Errorf("%s (pid %d) did not stop on SIGTERM; killing it", name, p.Pid)
		p.Kill()
		<-exited
	}
}

// tap is a reverse proxy on a loopback port in front of a daemon, the
// address a caller under test is given: it records the X-Fusebox-Wait
// and Authorization headers of each request, can be pointed at another daemon (one with a
// token), and, once closed, refuses connections as a stopped daemon does.
type tap struct {
	Addr   string
	srv    *httptest.Server
	mu     sync.Mutex
	target string   // the daemon's address
	waits  []string // each request's X-Fusebox-Wait, in order
	auths  []string // and its Authorization
}

func startTap(t *testing.T, d *daemon) *tap {
	t.Helper()
	p := &tap{target: d.Addr}
	rp := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		p.mu.Lock()
		target := p.target
		p.waits = append(p.waits, r.In.Header.Get("X-Fusebox-Wait"))
		p.auths = append(p.auths, r.In.Header.Get("Authorization"))
		p.mu.Unlock()
		r.SetURL(&url.URL{Scheme: "http", Host: target})
	}}
	p.srv = httptest.NewServer(rp)
	t.Cleanup(p.srv.Close)
	p.Addr = p.srv.Listener.Addr().String()
	return p
}

// To sends the requests that come after to d.
func (p *tap) To(d *daemon) {
	p.mu.Lock()
	p.target = d.Addr
	p.mu.Unlock()
}

// Close closes the tap's port: a caller's connection is then refused.
func (p *tap) Close() { p.srv.Close() }

// Waits returns the X-Fusebox-Wait of each request so far.
func (p *tap) Waits() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.waits)
}

// Authorizations returns the Authorization of each request so far.
func (p *tap) Authorizations() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.auths)
}
