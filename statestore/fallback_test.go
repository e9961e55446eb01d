package statestore_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/file"
	"github.com/fusebox-hq/fusebox/internal/redistest"
	"github.com/fusebox-hq/fusebox/internal/testenv"
	"github.com/fusebox-hq/fusebox/redis"
	"github.com/fusebox-hq/fusebox/statestore"
	"github.com/fusebox-hq/fusebox/storetest"
)

var ctx = context.Background()

// logBuf collects a logger's lines; Do may log from more than one goroutine.
type logBuf struct{ testenv.Buffer }

func (l *logBuf) count(s string) int { return strings.Count(l.String(), s) }

func (l *logBuf) logger() *slog.Logger { return slog.New(slog.NewTextHandler(l, nil)) }

const (
	warning = "shared state store unreachable"
	back    = "shared state store is back"
)

// host is one machine's local state dir, shared by the processes it opens.
type host struct {
	t     *testing.T
	srv   *redistest.Server
	local string
	log   *logBuf
	clock fusebox.Clock
	// budget bounds each command, 0 for the default; a test whose subject
	// is not the bound widens it, as a loaded machine can miss any bound.
	budget time.Duration
}

func newHost(t *testing.T, srv *redistest.Server, budget time.Duration) *host {
	return &host{t: t, srv: srv, local: filepath.Join(t.TempDir(), "state"), log: &logBuf{}, clock: fusebox.WallClock{}, budget: budget}
}

// open is a new process on h: a store opened through statestore.Open.
func (h *host) open() *statestore.Fallback {
	h.t.Helper()
	s := statestore.Open(statestore.Options{Dir: h.srv.URL(), LocalDir: h.local, Logger: h.log.logger(), Clock: h.clock,
		DialTimeout: h.budget, CommandTimeout: h.budget})
	if err := statestore.Reason(s); err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { s.Close() })
	return s.(*statestore.Fallback)
}

func (h *host) circuits(s fusebox.Admin) *fusebox.Circuits {
	return fusebox.New(s, fusebox.WithClock(h.clock), fusebox.WithLogger(h.log.logger()),
		fusebox.WithPolicy(fusebox.Policy{Retry: fusebox.RetryPolicy{Attempts: 1}, Breaker: breaker.Policy{TripAfter: 2, OpenFor: time.Hour}}))
}

// run is one call of name in a new process on h; it reports whether the
// call ran.
func (h *host) run(name string, fail bool) bool {
	h.t.Helper()
	ran := false
	err := h.circuits(h.open()).Do(ctx, name, func(context.Context) error {
		ran = true
		if fail {
			return errors.New("down")
		}
		return nil
	})
	if ran == errors.Is(err, breaker.ErrOpen) {
		h.t.Fatalf("Do = %v, ran %v", err, ran)
	}
	return ran
}

// replica is h's replica of its Redis store.
func (h *host) replica() string { return statestore.ReplicaDir(h.local, h.srv.URL(), "") }

func (h *host) localStore() *file.Store {
	h.t.Helper()
	s, err := file.Open(h.replica())
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { s.Close() })
	return s
}

func openRedis(t *testing.T, srv *redistest.Server) *redis.Store {
	s, err := redis.Open(srv.URL(), redis.WithTimeouts(10*time.Second, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestFallbackOnAHealthyPrimaryPassesTheContract(t *testing.T) {
	srv := redistest.Start(t)
	n := 0
	storetest.Run(t, func(t *testing.T) fusebox.Admin {
		n++
		primary, err := redis.Open(srv.URL(), redis.WithPrefix(strings.Repeat("p", n)+":"), redis.WithTimeouts(10*time.Second, 10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		var log logBuf
		dir := t.TempDir()
		f := statestore.NewFallback(primary, func(bool) (statestore.Local, error) {
			s, err := file.Open(dir)
			return statestore.Local{Store: s}, err
		}, statestore.FallbackOptions{Logger: log.logger(), Answered: redis.Answered})
		t.Cleanup(func() {
			if f.Down() != nil || log.count(warning) != 0 {
				t.Errorf("a healthy primary fell back:\n%s", log.String())
			}
		})
		return f
	})
}

// Peek is what fusebox explain reads: a damaged record in Redis is
// reported and left there (the primary answered: no fallback), and with
// Redis down the replica answers without the outage being recorded: no
// warning, no availability circuit written, the process not moved.
func TestPeekChangesNothingOnRedisOrTheReplica(t *testing.T) {
	srv := redistest.Start(t)
	h := newHost(t, srv, 10*time.Second)
	h.run("bridge", true)
	h.run("bridge", true) // open for an hour, in Redis and its replica
	srv.Do("HSET", "fusebox:s:nas", "v", "1", "state", "{garbage")

	s := h.open()
	if st, _, err := s.Peek(ctx, "nas"); !errors.Is(err, fusebox.ErrDamaged) || st.Name != "nas" {
		t.Errorf("Peek of a damaged key = %+v, %v; want a fresh state and ErrDamaged", st, err)
	}
	if got := srv.Do("EXISTS", "fusebox:s:nas"); got != ":1" {
		t.Errorf("after Peek the damaged key exists: %s, want it in place", got)
	}

	srv.Kill()
	s = h.open()
	st, _, err := s.Peek(ctx, "bridge")
	if err != nil || st.Phase != breaker.Open {
		t.Errorf("Peek with Redis down = %+v, %v; want the replica's open state", st, err)
	}
	if s.Down() != nil || h.log.count(warning) != 0 {
		t.Errorf("Peek recorded the outage: down %v\n%s", s.Down(), h.log.String())
	}
	if _, err := os.Stat(filepath.Join(h.replica(), statestore.HealthDir, "primary.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Peek wrote the availability circuit: %v", err)
	}
}

// With Redis down on a host that never had a replica, Peek and PeekNames
// read an empty one and create nothing: not the replica, not the
// availability circuit, not the local state dir.
func TestPeekWithRedisDownCreatesNoReplica(t *testing.T) {
	srv := redistest.Start(t)
	h := newHost(t, srv, 10*time.Second)
	srv.Kill()
	s := h.open()
	if st, c, err := s.Peek(ctx, "nas"); err != nil || st.Name != "nas" || st.Phase != "" || st.Generation != 0 || c != (fusebox.Counts{}) {
		t.Errorf("Peek with Redis down and no replica = %+v, %+v, %v; want a fresh state and no counts", st, c, err)
	}
	if n, err := s.PeekNames(ctx); err != nil || len(n) != 0 {
		t.Errorf("PeekNames with Redis down and no replica = %q, %v; want none", n, err)
	}
	if _, err := os.Lstat(h.local); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the peeks created the local state dir %s: %v", h.local, err)
	}
	if s.Down() != nil || h.log.count(warning) != 0 {
		t.Errorf("the peeks recorded the outage: down %v\n%s", s.Down(), h.log.String())
	}
}

// A hundred cron runs while Redis is down: the first finds it refused and
// opens the availability circuit with the one warning; the others go to the
// replica without asking Redis.
func TestRedisDownOneWarningPerHostAcrossAHundredRuns(t *testing.T) {
	srv := redistest.Start(t)
	h := newHost(t, srv, 10*time.Second)
	h.run("api", false)
	srv.Kill()
	for range 100 {
		h.run("api", false)
	}
	if n := h.log.count(warning); n != 1 {
		t.Errorf("%d warnings over 100 runs with Redis down, want 1:\n%s", n, h.log.String())
	}
	if n := h.log.count("running without circuit protection"); n != 0 {
		t.Errorf("the local replica failed too:\n%s", h.log.String())
	}
	if c, err := h.localStore().Counts(ctx, "api"); err != nil || c.Successes != 100 {
		t.Errorf("the replica counted %+v, %v; want the 100 successes made while Redis was down", c, err)
	}
}

// While Redis is away, a trip and an open circuit held in Redis stay in
// force from the replica; when it is back (after the availability circuit's
// open period), the probe merges what the host recorded meanwhile, with one
// notice, and every count reaches Redis.
func TestRedisOutageKeepsTripsAndLosesNoCount(t *testing.T) {
	srv := redistest.Start(t)
	h := newHost(t, srv, 10*time.Second)
	clk := testenv.NewClock(breaker.Instant{Wall: time.Now()})
	h.clock = clk
	if _, err := h.circuits(h.open()).Trip(ctx, "nas", 0, ""); err != nil {
		t.Fatal(err)
	}
	h.run("bridge", true)
	h.run("bridge", true) // open for an hour, in Redis
	h.run("api", false)
	srv.Kill()
	for range 3 {
		if h.run("nas", false) || h.run("bridge", false) {
			t.Fatal("with Redis down, a circuit tripped or open in Redis ran its call")
		}
		h.run("api", false)
		h.run("api", true)
	}
	h.run("cam", true)
	h.run("cam", true) // opened during the outage, on the replica
	srv.Restart()      // empty: every shared circuit is gone
	h.run("api", false)
	if h.log.count(back) != 0 {
		t.Error("the availability circuit was probed before its open period ended")
	}
	clk.Advance(statestore.DefaultHealthPolicy.OpenFor)
	// The trip by hand from before the outage is not restored into the
	// empty Redis (another host may have reset it meanwhile): one WARN
	// names it.
	if !h.run("nas", false) {
		t.Error("a trip by hand from before Redis lost its data was restored")
	}
	if n, b := h.log.count(warning), h.log.count(back); n != 1 || b != 1 {
		t.Errorf("%d warnings and %d notices for one outage, want 1 and 1:\n%s", n, b, h.log.String())
	}
	if h.log.count(notRestored) != 1 || !strings.Contains(h.log.String(), "circuits=nas ") {
		t.Errorf("want one WARN naming the trip not restored:\n%s", h.log.String())
	}
	// What the host recorded during the outage is merged (cam opened);
	// what it held from before the loss is not restored (bridge: another
	// host may have closed it since).
	r := openRedis(t, srv)
	for name, want := range map[string]breaker.Phase{"bridge": "", "cam": breaker.Open} {
		if st, err := r.Load(ctx, name); err != nil || st.Phase != want {
			t.Errorf("Redis after the outage: %s is %q (%v), want %q", name, st.Phase, err, want)
		}
	}
	c, err := r.Counts(ctx, "api")
	// Redis restarted empty: what it holds is the 4 successes and 3
	// failures recorded on the replica.
	if err != nil || c.Successes != 4 || c.Failures != 3 {
		t.Errorf("Redis counted %+v, %v for api; want 4 successes and 3 failures from the outage (counts lost in the merge)", c, err)
	}
	evs, err := r.Events(ctx, "cam", time.Time{})
	if err != nil || len(evs) < 3 {
		t.Errorf("Redis has %d events of cam (%v), want its 2 failures and its opening from the outage", len(evs), err)
	}
	// A second probe merges nothing twice.
	h.run("api", false)
	if c, _ := r.Counts(ctx, "api"); c.Successes != 5 {
		t.Errorf("Redis counted %d successes of api after one more run, want 5 (merged once)", c.Successes)
	}
}

const (
	lostData    = "the shared state store lost its data"
	notRestored = "tripped circuits not restored from this host's replica"
)

// Redis restarted with an empty dataset between two runs, which this host
// never saw fail: the first run to read it says so once, and restores
// nothing from the replica, open circuit or trip (any host may have closed
// or reset it since), with one WARN naming the trip; the replica follows,
// so that an outage after the loss brings neither back.
func TestRedisRestartedEmptyRestoresNothing(t *testing.T) {
	srv := redistest.Start(t)
	h := newHost(t, srv, 10*time.Second)
	if _, err := h.circuits(h.open()).Trip(ctx, "nas", 0, ""); err != nil {
		t.Fatal(err)
	}
	h.run("bridge", true)
	h.run("bridge", true) // open for an hour
	// The host's own state dir, where a config without Redis keeps its
	// circuits, is not the replica: nothing of it is touched.
	own, err := file.Open(h.local)
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close()
	if _, err := own.Update(ctx, "cam", func(st *breaker.State) ([]breaker.Event, bool) {
		return st.Trip(breaker.Instant{Wall: time.Now()}, 0, ""), true
	}); err != nil {
		t.Fatal(err)
	}
	srv.Restart()
	if !h.run("bridge", true) {
		t.Error("an open circuit was restored after Redis restarted empty")
	}
	if !h.run("nas", false) {
		t.Error("a trip by hand was restored after Redis restarted empty")
	}
	h.run("nas", false)
	for msg, want := range map[string]int{lostData: 1, notRestored: 1, warning: 0} {
		if n := h.log.count(msg); n != want {
			t.Errorf("%d lines %q, want %d:\n%s", n, msg, want, h.log.String())
		}
	}
	if host, _ := os.Hostname(); !strings.Contains(h.log.String(), "host="+host) || !strings.Contains(h.log.String(), "circuits=nas ") {
		t.Errorf("the lines do not name the host %s and the trip:\n%s", host, h.log.String())
	}
	if st, err := openRedis(t, srv).Load(ctx, "nas"); err != nil || st.Phase != "" {
		t.Errorf("Redis holds nas %q, %v; want nothing restored", st.Phase, err)
	}
	if st, err := own.Load(ctx, "cam"); err != nil || st.Phase != breaker.ForcedOpen {
		t.Errorf("the host's own state dir holds cam %q, %v; want its trip untouched", st.Phase, err)
	}
	// Redis down after the loss: the replica followed it, nas runs.
	srv.Kill()
	if !h.run("nas", false) {
		t.Errorf("with Redis down after the loss, the replica brought the trip back:\n%s", h.log.String())
	}
}

// Host A trips a circuit and sees another open, host B resets both, and
// Redis loses its data (a restart without persistence, or FLUSHALL): A's
// replica, which never saw the resets, must not undo them, whether A read
// Redis after them (seeing a later change somewhere) or not at all (before,
// A restored the open circuit then: it was the latest change A had seen).
func TestAResetIsNeverUndoneByAnotherHostsReplica(t *testing.T) {
	for _, lose := range []struct {
		name  string
		fn    func(*redistest.Server)
		reads bool
	}{
		{"restarted empty", func(srv *redistest.Server) { srv.Restart() }, true},
		{"flushed", func(srv *redistest.Server) { srv.Do("FLUSHALL") }, true},
		{"flushed, A reading nothing after the resets", func(srv *redistest.Server) { srv.Do("FLUSHALL") }, false},
		{"restarted empty, A reading nothing after the resets", func(srv *redistest.Server) { srv.Restart() }, false},
	} {
		reads := lose.reads
		t.Run(lose.name, func(t *testing.T) {
			srv := redistest.Start(t)
			a, b := newHost(t, srv, 10*time.Second), newHost(t, srv, 10*time.Second)
			if _, err := a.circuits(a.open()).Trip(ctx, "nas", 0, ""); err != nil {
				t.Fatal(err)
			}
			a.run("bridge", true)
			a.run("bridge", true) // open, on A
			if b.run("nas", false) || b.run("bridge", false) {
				t.Fatal("B ran a circuit A tripped or opened")
			}
			for _, name := range []string{"nas", "bridge"} {
				if _, err := b.circuits(b.open()).Reset(ctx, name, ""); err != nil {
					t.Fatal(err)
				}
			}
			if reads {
				a.run("api", false) // A reads Redis after the resets, without seeing them
			}
			lose.fn(srv)
			if !a.run("nas", false) || !a.run("bridge", false) {
				t.Errorf("A's replica undid B's reset after Redis lost its data:\n%s", a.log.String())
			}
			if !b.run("nas", false) || !b.run("bridge", false) {
				t.Errorf("B skipped a circuit it had reset:\n%s", b.log.String())
			}
			if a.log.count(lostData) != 1 || b.log.count(lostData) != 1 {
				t.Errorf("want one WARN of the loss on each host:\nA:\n%s\nB:\n%s", a.log.String(), b.log.String())
			}
		})
	}
}

// Slow is not down: a Redis paused for less than the bound is waited for.
func TestRedisSlowerThanTheOldBudgetIsWaitedFor(t *testing.T) {
	srv := redistest.Start(t)
	h := newHost(t, srv, 0) // the default bound
	s := h.open()
	h.circuits(s).Do(ctx, "api", func(context.Context) error { return nil }) // connected
	if got := srv.Do("CLIENT", "PAUSE", "300", "ALL"); got != "+OK" {
		t.Fatalf("CLIENT PAUSE = %s", got)
	}
	h.circuits(s).Do(ctx, "api", func(context.Context) error { return nil })
	if s.Down() != nil || h.log.count(warning) != 0 {
		t.Errorf("a Redis paused for 300 ms, within the bound, was left:\n%s", h.log.String())
	}
}

// A pause longer than the bound: each call gives up at the bound instead of
// waiting for Redis to wake, and the third in a row opens the availability
// circuit, with the host's one warning; the next goes straight to the
// replica.
func TestClientPauseLongerThanTheBound(t *testing.T) {
	const bound, pause = 300 * time.Millisecond, 20 * time.Second
	srv := redistest.Start(t)
	h := newHost(t, srv, bound)
	h.run("api", false)
	if got := srv.Do("CLIENT", "PAUSE", strconv.FormatInt(pause.Milliseconds(), 10), "ALL"); got != "+OK" {
		t.Fatalf("CLIENT PAUSE = %s", got)
	}
	slowRuns(t, h, pause)
}

func TestDebugSleepLongerThanTheBound(t *testing.T) {
	const bound, pause = 300 * time.Millisecond, 8 * time.Second
	srv := redistest.Start(t)
	h := newHost(t, srv, bound)
	h.run("api", false)
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
	slowRuns(t, h, pause)
	// Wait for the sleep to end, so that the server is killed awake.
	conn.SetReadDeadline(time.Now().Add(2 * pause))
	conn.Read(make([]byte, 16))
}

// slowRuns makes runs on h while Redis does not answer for pause: the first
// three give up at the bound, the third warns, the fourth does not ask Redis.
func slowRuns(t *testing.T, h *host, pause time.Duration) {
	t.Helper()
	start := time.Now()
	for i := range 3 {
		h.run("api", false)
		if n := h.log.count(warning); n != i/2 {
			t.Errorf("%d warnings after %d timeouts, want %d (the third opens the availability circuit):\n%s", n, i+1, i/2, h.log.String())
		}
	}
	h.run("api", false)
	if d := time.Since(start); d >= pause/2 {
		t.Errorf("four runs on an unanswering Redis took %s: they waited for it (%s) instead of giving up at the bound (%s)", d, pause, h.budget)
	}
	if n := h.log.count(warning); n != 1 {
		t.Errorf("%d warnings, want 1:\n%s", n, h.log.String())
	}
	if c, err := h.localStore().Counts(ctx, "api"); err != nil || c.Successes != 4 {
		t.Errorf("the replica counted %+v, %v; want the 4 successes made while Redis did not answer", c, err)
	}
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

// One damaged key takes one circuit aside, not the process off Redis: the
// key is moved aside with one ERROR, the circuit starts afresh, and another
// circuit's trip stays in force.
func TestADamagedKeyIsThatCircuitsProblemOnly(t *testing.T) {
	srv := redistest.Start(t)
	h := newHost(t, srv, 10*time.Second)
	s := h.open()
	c := h.circuits(s)
	if _, err := c.Trip(ctx, "nas", 0, ""); err != nil {
		t.Fatal(err)
	}
	srv.Do("SET", "fusebox:s:api", "not a hash")
	srv.Do("SET", "fusebox:c:api", "not a hash either")
	for range 3 {
		if err := c.Do(ctx, "api", func(context.Context) error { return nil }); err != nil {
			t.Fatalf("a call of the damaged circuit: %v", err)
		}
		if err := c.Do(ctx, "nas", func(context.Context) error { return nil }); !errors.Is(err, breaker.ErrOpen) {
			t.Fatalf("the other circuit's trip after a damaged key: %v, want it skipped", err)
		}
	}
	if s.Down() != nil || h.log.count(warning) != 0 {
		t.Errorf("a damaged key took the process off Redis:\n%s", h.log.String())
	}
	if n := h.log.count("level=ERROR"); n != 2 || h.log.count("circuit=api") != 2 {
		t.Errorf("%d ERRORs, want 2 naming circuit api (one a key):\n%s", n, h.log.String())
	}
	if got, err := openRedis(t, srv).Counts(ctx, "api"); err != nil || got.Successes != 3 {
		t.Errorf("Redis counted %+v, %v for the damaged circuit; want its 3 successes since", got, err)
	}
}

// One process that timed out on a busy host runs on the replica alone,
// silently, while the others stay on Redis; the next process that finds
// Redis answering merges what it recorded, so no count is left behind.
func TestOneTimeoutIsMergedByTheNextProcess(t *testing.T) {
	srv := redistest.Start(t)
	h := newHost(t, srv, 300*time.Millisecond)
	h.run("api", false)
	srv.Do("CLIENT", "PAUSE", "1500", "ALL")
	h.run("api", true)
	h.run("api", false)
	srv.Do("PING") // answered once the pause is over
	h.run("api", false)
	if n := h.log.count(warning); n != 0 {
		t.Errorf("two timeouts warned:\n%s", h.log.String())
	}
	if c, err := openRedis(t, srv).Counts(ctx, "api"); err != nil || c.Successes != 3 || c.Failures != 1 {
		t.Errorf("Redis counted %+v, %v; want 3 successes and 1 failure, the two runs on the replica merged", c, err)
	}
	st, err := file.Open(filepath.Join(h.replica(), statestore.HealthDir))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if got, err := st.Load(ctx, "primary"); err != nil || got.ConsecutiveFailures != 0 {
		t.Errorf("the availability circuit after the merge: %d failures, %v; want them cleared", got.ConsecutiveFailures, err)
	}
}

// Any client that writes fusebox:epoch with another type, or a value
// fusebox never writes, damages the epoch only: it is moved aside with one
// ERROR, and on both hosts a trip stays in force and failures still open a
// circuit, and no host takes the new epoch for a dataset that lost its
// data (before, every run of every host ran without circuit protection
// until someone deleted the key).
func TestADamagedEpochLeavesEveryCircuitProtected(t *testing.T) {
	srv := redistest.Start(t)
	for _, damage := range [][]string{
		{"SET", "fusebox:epoch", "written by someone else"},
		{"RPUSH", "fusebox:epoch", "x"},
		{"HSET", "fusebox:epoch", "id", "not a token", "changed", "soon"},
	} {
		t.Run(damage[0], func(t *testing.T) {
			srv.Do("FLUSHALL")
			a, b := newHost(t, srv, 10*time.Second), newHost(t, srv, 10*time.Second)
			if _, err := a.circuits(a.open()).Trip(ctx, "nas", 0, ""); err != nil {
				t.Fatal(err)
			}
			b.run("api", false) // b knows the epoch too
			srv.Do("DEL", "fusebox:epoch")
			srv.Do(damage...)
			for _, h := range []*host{a, b, a, b} {
				if h.run("nas", false) {
					t.Fatal("the trip was ignored after the epoch was damaged")
				}
			}
			a.run("api", true)
			b.run("api", true)
			if a.run("api", false) || b.run("api", false) {
				t.Error("two failures did not open the circuit after the epoch was damaged")
			}
			logs := a.log.String() + b.log.String()
			if n := strings.Count(logs, "level=ERROR"); n != 1 || !strings.Contains(logs, "redis=fusebox:epoch") {
				t.Errorf("%d ERRORs, want 1 naming the epoch:\n%s", n, logs)
			}
			if strings.Contains(logs, "without circuit protection") || strings.Contains(logs, "lost its data") {
				t.Errorf("a run went unprotected, or a host took the damage for lost data:\n%s", logs)
			}
		})
	}
}

// A replica belongs to one Redis: a host pointed at another store (another
// database, another prefix, another server: a second config, a new NAS)
// keeps another replica beside the first. Its first failure there, with
// trip_after 1, opens the circuit; nothing of the first store comes into
// the other; no host says a store lost its data; and the first store and
// its replica keep their trip and open circuit. Before, the host took the
// other store for a Redis that lost its data, restored the first store's
// circuits into it, and lost the failure it recorded meanwhile.
func TestAReplicaBelongsToOneRedis(t *testing.T) {
	srv, srv2 := redistest.Start(t), redistest.Start(t)
	for _, other := range []struct{ name, url, prefix string }{
		{"another database", strings.TrimSuffix(srv.URL(), "/0") + "/1", ""},
		{"another prefix", srv.URL(), "other:"},
		{"another server", srv2.URL(), ""},
	} {
		t.Run(other.name, func(t *testing.T) {
			srv.Do("FLUSHALL")
			h := newHost(t, srv, 10*time.Second)
			if _, err := h.circuits(h.open()).Trip(ctx, "nas", 0, ""); err != nil {
				t.Fatal(err)
			}
			h.run("bridge", true)
			h.run("bridge", true) // open, in the first store and its replica
			open := func() *fusebox.Circuits {
				s := statestore.Open(statestore.Options{Dir: other.url, Prefix: other.prefix, LocalDir: h.local, Logger: h.log.logger(),
					DialTimeout: h.budget, CommandTimeout: h.budget})
				t.Cleanup(func() { s.Close() })
				return fusebox.New(s, fusebox.WithLogger(h.log.logger()),
					fusebox.WithPolicy(fusebox.Policy{Retry: fusebox.RetryPolicy{Attempts: 1}, Breaker: breaker.Policy{TripAfter: 1, OpenFor: time.Hour}}))
			}
			if err := open().Do(ctx, "api", func(context.Context) error { return errors.New("down") }); err == nil || errors.Is(err, breaker.ErrOpen) {
				t.Fatalf("the first call on the other store: %v, want it run and failed", err)
			}
			ran := false
			if err := open().Do(ctx, "api", func(context.Context) error { ran = true; return nil }); !errors.Is(err, breaker.ErrOpen) || ran {
				t.Errorf("after one failure with trip_after 1 on the other store: %v (ran %v); want it open", err, ran)
			}
			for _, name := range []string{"nas", "bridge"} {
				if err := open().Do(ctx, name, func(context.Context) error { return nil }); err != nil {
					t.Errorf("the other store skipped %s, a circuit of the first: %v", name, err)
				}
			}
			if h.run("nas", false) || h.run("bridge", false) {
				t.Error("the first store lost its trip or open circuit")
			}
			if n := h.log.count(lostData); n != 0 {
				t.Errorf("%d lines %q, want none: no store lost its data:\n%s", n, lostData, h.log.String())
			}
			first := statestore.ReplicaDir(h.local, srv.URL(), "")
			second := statestore.ReplicaDir(h.local, other.url, other.prefix)
			if first == second {
				t.Fatalf("one replica dir %s for two stores", first)
			}
			rep, err := file.Open(first)
			if err != nil {
				t.Fatal(err)
			}
			defer rep.Close()
			if st, err := rep.Load(ctx, "nas"); err != nil || st.Phase != breaker.ForcedOpen {
				t.Errorf("the first store's replica holds nas %q, %v; want it tripped", st.Phase, err)
			}
		})
	}
}
