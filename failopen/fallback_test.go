package failopen_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/failopen"
	"github.com/fusebox-hq/fusebox/file"
	"github.com/fusebox-hq/fusebox/internal/redistest"
	"github.com/fusebox-hq/fusebox/internal/testenv"
	"github.com/fusebox-hq/fusebox/redis"
	"github.com/fusebox-hq/fusebox/storetest"
)

var ctx = context.Background()

// logBuf collects a logger's lines; Do may log from more than one goroutine.
type logBuf struct{ testenv.Buffer }

func (l *logBuf) count(s string) int { return strings.Count(l.String(), s) }

const warning = "shared state store unreachable"

// openRedis opens srv's store through failopen.Open with budget, 0 for the
// default; a test whose subject is not the budget widens it, as a loaded
// machine can miss the default on any command.
func openRedis(t *testing.T, srv *redistest.Server, log *logBuf, budget time.Duration) (fusebox.Store, string) {
	t.Helper()
	local := filepath.Join(t.TempDir(), "state")
	s := failopen.Open(failopen.Options{Dir: srv.URL(), LocalDir: local, Logger: slog.New(slog.NewTextHandler(log, nil)),
		DialTimeout: budget, CommandTimeout: budget})
	if err := failopen.Reason(s); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, local
}

func run(t *testing.T, c *fusebox.Circuits) {
	t.Helper()
	ran := 0
	if err := c.Do(ctx, "api", func(context.Context) error { ran++; return nil }); err != nil || ran != 1 {
		t.Fatalf("Do = %v, ran %d times; want the call run once", err, ran)
	}
}

func localCounts(t *testing.T, dir string) fusebox.Counts {
	t.Helper()
	s, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, err := s.Counts(ctx, "api")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestFallbackOnAHealthyPrimaryPassesTheContract(t *testing.T) {
	srv := redistest.Start(t)
	n := 0
	storetest.Run(t, func(t *testing.T) fusebox.Store {
		n++
		primary, err := redis.Open(srv.URL(), redis.WithPrefix(strings.Repeat("p", n)+":"), redis.WithTimeouts(2*time.Second, 2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(t.TempDir(), "state")
		return failopen.NewFallback(primary, func() (fusebox.Store, error) {
			t.Error("a healthy primary fell back")
			return file.Open(dir)
		}, failopen.FallbackOptions{})
	})
}

func TestRedisKilledMidRunFallsBackWithOneWarning(t *testing.T) {
	srv := redistest.Start(t)
	var log logBuf
	store, local := openRedis(t, srv, &log, 10*time.Second)
	c := fusebox.New(store, fusebox.WithLogger(slog.New(slog.NewTextHandler(&log, nil))))
	run(t, c)
	srv.Kill()
	run(t, c)
	run(t, c)
	if n := log.count(warning); n != 1 {
		t.Errorf("%d warnings after Redis died, want 1:\n%s", n, log.String())
	}
	if n := log.count("running without circuit protection"); n != 0 {
		t.Errorf("the local store failed too:\n%s", log.String())
	}
	if got := localCounts(t, local).Successes; got != 2 {
		t.Errorf("local store counted %d successes, want the 2 made while Redis was down", got)
	}
}

func TestFallbackResumesWhenRedisIsBack(t *testing.T) {
	srv := redistest.Start(t)
	primary, err := redis.Open(srv.URL(), redis.WithTimeouts(10*time.Second, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var log logBuf
	now := time.Now()
	clock := func() time.Time { return now }
	f := failopen.NewFallback(primary, func() (fusebox.Store, error) { return file.Open(filepath.Join(t.TempDir(), "state")) },
		failopen.FallbackOptions{Logger: slog.New(slog.NewTextHandler(&log, nil)), Now: clock, RetryAfter: time.Minute})
	defer f.Close()
	c := fusebox.New(f)
	srv.Kill()
	run(t, c)
	if !f.OnLocal() {
		t.Fatal("a dead Redis did not move the store to the local one")
	}
	srv.Restart()
	run(t, c)
	if !f.OnLocal() {
		t.Error("the primary was tried again before RetryAfter")
	}
	now = now.Add(time.Minute)
	run(t, c)
	if f.OnLocal() {
		t.Fatal("the store did not resume on Redis after RetryAfter")
	}
	if got, err := primary.Counts(ctx, "api"); err != nil || got.Successes != 1 {
		t.Errorf("Redis counted %+v, %v after resuming; want the 1 success made since", got, err)
	}
	if n := log.count(warning); n != 1 {
		t.Errorf("%d warnings, want 1:\n%s", n, log.String())
	}
}

// A generous bound: the budget is 150 ms to connect and answer; a call that
// waited for Redis to wake would take the whole pause.
const pause, bound = 4 * time.Second, 2 * time.Second

func TestClientPauseLongerThanTheBudget(t *testing.T) {
	srv := redistest.Start(t)
	var log logBuf
	store, _ := openRedis(t, srv, &log, 0)
	c := fusebox.New(store)
	run(t, c) // connected, so the pause hits a command, not the dial
	if got := srv.Do("CLIENT", "PAUSE", strconv.FormatInt(pause.Milliseconds(), 10), "ALL"); got != "+OK" {
		t.Fatalf("CLIENT PAUSE = %s", got)
	}
	start := time.Now()
	run(t, c)
	if d := time.Since(start); d > bound {
		t.Errorf("a call on a paused Redis took %s, want it to give up within the budget (bound %s)", d, bound)
	}
	if n := log.count(warning); n != 1 {
		t.Errorf("%d warnings on a paused Redis, want 1:\n%s", n, log.String())
	}
}

func TestDebugSleepLongerThanTheBudget(t *testing.T) {
	srv := redistest.Start(t)
	var log logBuf
	store, _ := openRedis(t, srv, &log, 0)
	c := fusebox.New(store)
	run(t, c)
	conn, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	secs := strconv.Itoa(int(pause.Seconds()))
	if _, err := fmt.Fprintf(conn, "*3\r\n$5\r\nDEBUG\r\n$5\r\nSLEEP\r\n$%d\r\n%s\r\n", len(secs), secs); err != nil {
		t.Fatal(err)
	}
	waitAsleep(t, srv)
	start := time.Now()
	run(t, c)
	if d := time.Since(start); d > bound {
		t.Errorf("a call on a sleeping Redis took %s, want it to give up within the budget (bound %s)", d, bound)
	}
	if n := log.count(warning); n != 1 {
		t.Errorf("%d warnings on a sleeping Redis, want 1:\n%s", n, log.String())
	}
	// Wait for the sleep to end, so that the server is killed awake.
	conn.SetReadDeadline(time.Now().Add(2 * pause))
	conn.Read(make([]byte, 16))
}

// waitAsleep returns once a PING goes unanswered for 200 ms.
func waitAsleep(t *testing.T, srv *redistest.Server) {
	t.Helper()
	for range 100 {
		c, err := net.Dial("tcp", srv.Addr())
		if err != nil {
			t.Fatal(err)
		}
		c.Write([]byte("*1\r\n$4\r\nPING\r\n"))
		c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		_, err = c.Read(make([]byte, 16))
		c.Close()
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			return
		}
	}
	t.Fatal("DEBUG SLEEP did not put redis-server to sleep")
}

func TestRedisRestartedEmpty(t *testing.T) {
	srv := redistest.Start(t)
	var log logBuf
	store, _ := openRedis(t, srv, &log, 10*time.Second)
	c := fusebox.New(store)
	if _, err := c.Trip(ctx, "api", time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := c.Do(ctx, "api", func(context.Context) error { return nil }); err == nil {
		t.Fatal("a tripped circuit ran the call")
	}
	srv.Restart()
	// The same process, whose connections died with the server, and a new
	// one: both find the circuit closed (Redis forgot the trip) and run.
	run(t, c)
	fresh, _ := openRedis(t, srv, &log, 10*time.Second)
	run(t, fusebox.New(fresh))
	if n := log.count(warning); n > 1 {
		t.Errorf("%d warnings after a restart, want at most 1 (the dead connection):\n%s", n, log.String())
	}
	if f := fresh.(*failopen.Fallback); f.OnLocal() {
		t.Error("a new process on the restarted Redis fell back to the local store")
	}
}
