package serve_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/file"
	"github.com/fusebox-hq/fusebox/httpcall"
	"github.com/fusebox-hq/fusebox/internal/testenv"
	"github.com/fusebox-hq/fusebox/serve"
)

// floodChildEnv, set to "UPSTREAM-URL NOFILE" (NOFILE 0: the limit it was
// started with), makes the test binary a daemon for TestAFloodOfRefused
// CallersLeavesTheTokenCallerItsAnswer (see floodChild).
const floodChildEnv = "FUSEBOX_SERVE_TEST_FLOOD_CHILD"

// A flood of callers refused for want of the token, each with a body of
// 100 kB that never comes and none reading its answer, takes neither the
// daemon's descriptors nor its connections: each is closed once refused.
// Callers that connect and send nothing meet the connection cap (from the
// open-file limit), not EMFILE, which would fail the store's files and
// upstream calls of the callers in. A caller with the token is answered
// while they are all still connected. The daemon is a child process, its open-file limit
// lowered as a small board's or a unit's may be.
func TestAFloodOfRefusedCallersLeavesTheTokenCallerItsAnswer(t *testing.T) {
	u := newUpstream(t, "u")
	for _, tc := range []struct {
		name   string
		nofile int
		flood  func(maxConns int) int
	}{
		// More callers than descriptors: without the close, EMFILE.
		{"at 200 open files", 200, func(int) int { return 250 }},
		// More than the cap: without the close, every connection held.
		{"at the limit fusebox was started with", 0, func(maxConns int) int { return maxConns + 100 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr, maxConns, logged := startFloodChild(t, u.URL, tc.nofile)
			// The caller with the token is in already, on a kept-alive
			// connection.
			tr := &http.Transport{MaxConnsPerHost: 1, IdleConnTimeout: time.Hour}
			defer tr.CloseIdleConnections()
			caller := &http.Client{Transport: tr}
			call := func(when string) {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a safety net
				defer cancel()
				req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+addr+"/call/u", nil)
				req.Header.Set("Authorization", "Bearer s3cret")
				resp, err := caller.Do(req)
				if err != nil {
					t.Fatalf("the caller with the token, %s: %v (the daemon's log: %q)", when, err, logged.String())
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || !strings.Contains(string(body), `"from":"u"`) {
					t.Fatalf("the caller with the token, %s: %d %q", when, resp.StatusCode, body)
				}
			}
			call("before the flood")

			n := tc.flood(maxConns)
			t.Logf("the daemon's connection cap: %d; %d refused callers, and as many that send nothing", maxConns, n)
			refused := make([]net.Conn, 0, n)
			for i := range n {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatalf("dialing refused caller %d: %v", i, err)
				}
				defer c.Close()
				if _, err := fmt.Fprintf(c, "POST /call/u HTTP/1.1\r\nHost: %s\r\nContent-Length: 100000\r\n\r\nthe first bytes", addr); err != nil {
					t.Fatalf("refused caller %d: %v", i, err)
				}
				refused = append(refused, c)
				// One that sends nothing holds its connection for the
				// header's timeout: these meet the cap.
				silent, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatalf("dialing silent caller %d: %v", i, err)
				}
				defer silent.Close()
			}
			call(fmt.Sprintf("with %d refused callers and %d silent ones connected", n, n))
			for i, c := range refused {
				if err := refusedAndClosed(c, "HTTP/1.1 401 "); err != nil {
					t.Fatalf("refused caller %d of %d: %v", i, n, err)
				}
			}
			if strings.Contains(logged.String(), "too many open files") {
				t.Errorf("the daemon ran out of descriptors; its log: %q", logged.String())
			}
		})
	}
}

// startFloodChild starts this test binary as a daemon (floodChild) in front
// of upstream, with an open-file limit of nofile (0: this process's), and
// returns its address, its connection cap, and what it logs.
func startFloodChild(t *testing.T, upstream string, nofile int) (addr string, maxConns int, logged *testenv.Buffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), floodChildEnv+"="+upstream+" "+strconv.Itoa(nofile))
	stdin, err := cmd.StdinPipe() // its end is the child's: closing it stops the daemon
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	logged = &testenv.Buffer{}
	cmd.Stderr = logged
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("the daemon: %v (its log: %q)", err, logged.String())
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if _, err2 := fmt.Sscan(line, &addr, &maxConns); err != nil || err2 != nil {
		t.Fatalf("the daemon did not say where it listens: %q, %v, %v (its log: %q)", line, err, err2, logged.String())
	}
	return addr, maxConns, logged
}

// floodChild serves, as floodChildEnv says, until its stdin ends: the
// token s3cret, one endpoint u, and a read timeout of an hour, so that a
// connection kept for a body that never comes is never let go (a header's
// timeout of a second lets the silent callers go sooner).
func floodChild(spec string) int {
	upstream, n, _ := strings.Cut(spec, " ")
	var lim syscall.Rlimit
	if _, err := fmt.Sscan(n, &lim.Cur); err == nil && lim.Cur > 0 { // Cur is int64 on FreeBSD, uint64 elsewhere
		lim.Max = lim.Cur
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			fmt.Fprintln(os.Stderr, "setrlimit:", err)
			return 1
		}
	}
	dir, err := os.MkdirTemp("", "fusebox-flood-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	store, err := file.Open(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer store.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	srv, err := serve.New(serve.Targets{Endpoints: []*httpcall.Endpoint{endpoint("u", upstream)}}, serve.Options{
		Listen: ln.Addr().String(), Token: "s3cret", Store: store, ReadHeaderTimeout: time.Second, ReadTimeout: time.Hour,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(ln.Addr(), srv.MaxConns())
	ctx, stop := context.WithCancel(context.Background())
	go func() {
		io.Copy(io.Discard, os.Stdin)
		stop()
	}()
	if err := srv.Serve(ctx, ln); err != nil && err != http.ErrServerClosed {
		fmt.Fprintln(os.Stderr, "serve:", err)
		return 1
	}
	return 0
}

// A cap on connections above what the open-file limit holds is lowered to
// it, with one WARN; the default is DefaultMaxConns or what the limit holds.
func TestAConnectionCapAboveTheOpenFileLimitIsLowered(t *testing.T) {
	store, err := file.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var logged testenv.Buffer
	log := slog.New(slog.NewTextHandler(&logged, nil))
	srv, err := serve.New(serve.Targets{}, serve.Options{Store: store, Logger: log, MaxConns: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	if n := srv.MaxConns(); n >= 1<<30 || n < 8 {
		t.Errorf("MaxConns 1<<30 became %d; want it lowered to what the open-file limit holds", n)
	}
	if w := logged.Lines("level=WARN", "open-file limit"); len(w) != 1 {
		t.Errorf("want one WARN saying so, got %q", logged.String())
	}
	def, err := serve.New(serve.Targets{}, serve.Options{Store: store, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	if n := def.MaxConns(); n > serve.DefaultMaxConns || n < 8 {
		t.Errorf("the default cap is %d; want at most DefaultMaxConns (%d)", n, serve.DefaultMaxConns)
	}
	if w := logged.Lines("level=WARN"); len(w) != 1 {
		t.Errorf("the default cap warned: %q", logged.String())
	}
}

// A caller's request body is read within the daemon's body budget, as an
// upstream's body is, and stays counted until its call ends: with a
// budget of 3 MiB and an upstream slow to answer, two callers' 1 MiB bodies
// are held, and a third caller's is refused at once (503) instead of
// being read; once the calls end the budget is whole again. Before, each
// of the 1,024 connections could hold a 1 MiB body the budget never saw.
func TestCallersBodiesAreReadWithinTheBodyBudget(t *testing.T) {
	release := make(chan struct{})
	reached := make(chan struct{}, 3) // a body read in full by the upstream
	up := newRawUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		reached <- struct{}{}
		select {
		case <-release:
		case <-time.After(time.Minute): // a safety net for a failing test
		}
		w.Write([]byte(`{"bytes":` + strconv.FormatInt(n, 10) + `}`))
	})
	passBody := func(e *httpcall.Endpoint) { e.Method = "POST"; e.PassBody = true }
	d := start(t, serve.Targets{Endpoints: []*httpcall.Endpoint{endpoint("u", up, passBody)}}, serve.Options{BodyMemory: 3 << 20})
	body := bytes.Repeat([]byte("x"), 1<<20)
	post := func() (int, string, error) {
		resp, err := http.Post("http://"+d.addr+"/call/u", "application/octet-stream", bytes.NewReader(body))
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), nil
	}

	var wg sync.WaitGroup
	codes := make([]int, 2)
	for i := range codes {
		wg.Go(func() {
			code, answer, err := post()
			if err != nil || code != 200 || answer != `{"bytes":1048576}` {
				t.Errorf("caller %d, its body within the budget: %d %q %v", i, code, answer, err)
			}
		})
	}
	<-reached
	<-reached
	code, answer, err := post()
	if err != nil || code != http.StatusServiceUnavailable || !strings.Contains(answer, "no memory free for the body") {
		t.Errorf("a third caller's body, with two held: %d %q %v; want a 503 saying there is no room", code, answer, err)
	}
	close(release)
	wg.Wait()
	if code, answer, err := post(); err != nil || code != 200 || answer != `{"bytes":1048576}` {
		t.Errorf("a caller's body after the calls ended: %d %q %v; want it read, the budget whole again", code, answer, err)
	}
	if n := len(reached); n != 1 {
		t.Errorf("the upstream got %d bodies after the first two, want the one within the budget", n)
	}
}
