package reliability

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// killsEnv sets how many runs the kill loop kills (default 500 in the
// heavy suite, 100 with -short or in the quick run).
const killsEnv = "FUSEBOX_RELIABILITY_KILLS"

// tally counts the runs of one circuit in the kill loop by what they were
// asked to do and how they ended.
type tally struct {
	ok, failed, skipped int // finished: exit 0, exit 1 (the command failed), exit 75
	killedOK, killedBad int // killed with SIGKILL while running `true` / `false`
}

// TestSIGKILLLoop runs fusebox processes back to back, several at a time, on
// four counting circuits and one circuit that trips at every failure and is
// probed every 20ms, and kills most of them with SIGKILL at a random moment
// of their few milliseconds of life, so that kills land before, inside and
// after the locked state update. Afterwards every file must parse, every
// count must lie between what the finished runs did and that plus what the
// killed ones might have done, temporary files left by the kills go at the
// next gc, and no circuit is wedged: a dead probe's lease expires.
func TestSIGKILLLoop(t *testing.T) {
	kills := 500
	if testing.Short() || !testenv.HeavyOn() {
		// The quick run's, and the loaded one's.
		kills = 100
	}
	kills = envInt(t, killsEnv, kills)
	const workers = 6
	state := filepath.Join(t.TempDir(), "state")
	countPolicy := []string{"--attempts", "1", "--trip-after", "1000000"}
	// A timeout `true` meets on a busy machine: a 124 would be a problem.
	// A killed probe's lease lasts it and the store's 2s slack.
	const probeTimeout, leaseSlack = 10 * time.Second, 2 * time.Second
	probePolicy := []string{"--attempts", "1", "--trip-after", "1", "--open-for", "20ms", "--open-max", "40ms", "--timeout", probeTimeout.String()}
	circuits := []string{"count-0", "count-1", "count-2", "count-3", "probe"}

	var (
		mu       sync.Mutex
		tallies  = map[string]*tally{}
		killed   int
		runs     int
		durs     []time.Duration // of finished runs, for the kill window
		problems []string
	)
	for _, c := range circuits {
		tallies[c] = &tally{}
	}
	// The kill window is learnt from this machine's runs: until 20 have
	// finished unkilled, no run is killed, so that a saturated machine's
	// slow runs are not all killed at a guessed moment before they record.
	const learn = 20
	learnt := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(durs) >= learn
	}
	window := func() time.Duration { // the p90 of recent finished runs
		mu.Lock()
		defer mu.Unlock()
		if len(durs) < learn {
			return 0
		}
		recent := slices.Clone(durs[max(0, len(durs)-200):])
		slices.Sort(recent)
		return recent[len(recent)*9/10]
	}
	problem := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if len(problems) < 20 {
			problems = append(problems, fmt.Sprintf(format, args...))
		}
	}

	// The loop runs until it has killed enough, however slow the machine;
	// it gives up only when no run has ended for stall.
	const stall = 2 * time.Minute
	begin := time.Now()
	lastEnd := begin
	stuck := false
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				mu.Lock()
				done := killed >= kills
				stuck = stuck || time.Since(lastEnd) > stall
				done = done || stuck
				mu.Unlock()
				if done {
					return
				}
				name := circuits[rand.IntN(len(circuits))]
				policy := countPolicy
				if name == "probe" {
					policy = probePolicy
				}
				good := rand.IntN(2) == 0
				command := "false"
				if good {
					command = "true"
				}
				cmd := fbCmd(state, nil, testenv.RunArgs(name, policy, command)...)
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				kill := learnt() && rand.Float64() < 0.7
				// The state update comes last in a run: aim at the later part.
				var delay time.Duration
				if kill {
					w := window()
					delay = w/3 + time.Duration(rand.Int64N(int64(w-w/3)))
				}
				start := time.Now()
				if err := cmd.Start(); err != nil {
					problem("start: %v", err)
					return
				}
				var timer *time.Timer
				if kill {
					timer = time.AfterFunc(delay, func() { cmd.Process.Kill() })
				}
				cmd.Wait()
				took := time.Since(start)
				if timer != nil {
					timer.Stop()
				}
				p := testenv.Finished(cmd, took)

				mu.Lock()
				runs++
				lastEnd = time.Now()
				tl := tallies[name]
				switch {
				case p.Signal == syscall.SIGKILL:
					killed++
					if good {
						tl.killedOK++
					} else {
						tl.killedBad++
					}
				case p.Code == 0 && good:
					tl.ok++
				case p.Code == 1 && !good:
					tl.failed++
				case p.Code == 75 && name == "probe":
					tl.skipped++
				default:
					mu.Unlock()
					problem("%s -- %s: exit %d (%s), signal %v:\n%s", name, command, p.Code, testenv.ExitMeaning(p.Code), p.Signal, stderr.String())
					continue
				}
				if p.Signal == 0 {
					durs = append(durs, took)
				}
				mu.Unlock()
				if p.Signal == 0 {
					for _, bad := range []string{"timed out", "unusable", "level=ERROR", "damaged", "corrupt"} {
						if strings.Contains(stderr.String(), bad) {
							problem("%s -- %s logged %q:\n%s", name, command, bad, stderr.String())
						}
					}
				}
			}
		})
	}
	wg.Wait()
	loop := time.Since(begin)
	for _, p := range problems {
		t.Error(p)
	}
	if killed < kills {
		t.Fatalf("only %d of %d kills in %s: no run ended for %s, the runs are stuck", killed, kills, loop.Round(time.Second), stall)
	}
	t.Logf("%d runs, %d killed with SIGKILL, %d workers, in %s; kills at a random moment between a third of and the p90 of a finished run's time (%s)",
		runs, killed, workers, loop.Round(time.Millisecond), window().Round(10*time.Microsecond))

	// Every file parses, and nothing had to be moved aside.
	temps, corrupt := leftovers(t, state)
	if len(corrupt) > 0 {
		t.Errorf("files moved aside as damaged after SIGKILLs: %v", corrupt)
	}
	landed, lost := 0, 0
	for _, name := range circuits {
		// A circuit that has only ever succeeded has no state file
		// (file/state.go): one whose finished runs all succeeded, and whose
		// killed ones never recorded a failure, may lack it.
		st, err := decodeState(filepath.Join(state, name+".json"))
		if errors.Is(err, fs.ErrNotExist) && tallies[name].failed == 0 {
			st, err = breaker.State{Phase: breaker.Closed}, nil
		}
		if err != nil {
			t.Errorf("state file: %v", err)
			continue
		}
		events, err := decodeEvents(filepath.Join(state, "events", name+".jsonl"))
		if err != nil {
			t.Errorf("event log: %v", err)
		}
		failures := 0
		for _, e := range events {
			if e.Kind == breaker.EventFailure {
				failures++
			}
		}
		c, err := decodeCounts(state, name)
		if err != nil {
			t.Errorf("counts: %v", err)
		}
		skips := c.Skips
		tl := tallies[name]
		within := func(what string, got, done, maybe int) {
			t.Helper()
			if got < done || got > done+maybe {
				t.Errorf("%s: %d %s, want between %d (finished runs) and %d (+ killed ones): lost or invented updates", name, got, what, done, done+maybe)
			}
		}
		within("successes", int(c.Successes), tl.ok, tl.killedOK)
		within("failures", int(c.Failures), tl.failed, tl.killedBad)
		within("failure events", failures, tl.failed, int(c.Failures)-tl.failed)
		within("skips", int(skips), tl.skipped, tl.killedOK+tl.killedBad)
		in := int(c.Successes) - tl.ok + int(c.Failures) - tl.failed + int(skips) - tl.skipped
		landed += in
		lost += tl.killedOK + tl.killedBad - in
		t.Logf("%-7s finished: %3d ok, %3d failed, %3d skipped; killed: %3d (%3d had recorded their outcome); stored: %3d successes, %3d failures (%3d events), %3d skips; %s",
			name, tl.ok, tl.failed, tl.skipped, tl.killedOK+tl.killedBad, in, c.Successes, c.Failures, failures, skips, st.Phase)
	}
	t.Logf("of %d kills, %d came after the run had recorded its outcome and %d before; %d temporary files left behind; 0 lost updates",
		killed, landed, lost, len(temps))

	// No circuit is wedged: the counting circuits run at once, and the
	// probe circuit once any lease held by a killed probe has expired. A
	// wedged circuit stays so for ever; a minute past the lease is slack
	// for a busy machine.
	wedged := probeTimeout + leaseSlack + time.Minute
	for _, name := range circuits {
		policy := countPolicy
		if name == "probe" {
			policy = probePolicy
		}
		start := time.Now()
		for {
			p := fb(t, state, testenv.RunArgs(name, policy, "true")...)
			if p.Code == 0 {
				break
			}
			if p.Code != 75 || time.Since(start) > wedged {
				t.Fatalf("%s still refuses calls %s after the loop (a lease lasts %s): exit %d (%s)\n%s",
					name, time.Since(start).Round(time.Millisecond), probeTimeout+leaseSlack, p.Code, testenv.ExitMeaning(p.Code), p.Stderr)
			}
			time.Sleep(50 * time.Millisecond)
		}
		if name == "probe" {
			t.Logf("probe circuit answered again %s after the loop", time.Since(start).Round(time.Millisecond))
		}
		if st := statusOf(t, state, name); st["state"] != "closed" {
			t.Errorf("%s: %v after a successful run, want closed", name, st["state"])
		}
	}
	checkGCSweepsTemps(t, state, temps)
}

// checkGCSweepsTemps ages the temporary files the kills left, and some
// planted ones, past a minute, plants a fresh one too, and checks that the
// automatic gc (due once .gc is an hour old) and fusebox gc remove the aged
// ones and keep the fresh one: it could be a write in progress.
func checkGCSweepsTemps(t *testing.T, state string, temps []string) {
	t.Helper()
	old := time.Now().Add(-2 * time.Minute)
	plant := func(paths ...string) {
		for _, p := range paths {
			if err := os.WriteFile(p, []byte(`{"name":"count-0"`), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	age := func(when time.Time, paths ...string) {
		for _, p := range paths {
			if err := os.Chtimes(p, when, when); err != nil {
				t.Fatal(err)
			}
		}
	}
	fresh := filepath.Join(state, ".count-1.json.tmp-1-fresh")
	plant(fresh)
	inUse, _ := filepath.Glob(filepath.Join(state, "*.json"))
	check := func(how string) {
		t.Helper()
		if left, _ := leftovers(t, state); !slices.Equal(left, []string{fresh}) {
			t.Errorf("after %s, temporary files %v; want only the fresh one %s", how, left, fresh)
		}
		if names, _ := filepath.Glob(filepath.Join(state, "*.json")); !slices.Equal(names, inUse) {
			t.Errorf("%s left state files %v; want those of the circuits in use, %v", how, names, inUse)
		}
	}

	aged := append(slices.Clone(temps), filepath.Join(state, ".count-0.json.tmp-1-aged"))
	plant(aged[len(aged)-1])
	age(old, aged...)
	age(time.Now().Add(-2*time.Hour), filepath.Join(state, ".gc"))
	if p := fb(t, state, testenv.RunArgs("count-0", []string{"--attempts", "1", "--trip-after", "1000000"}, "true")...); p.Code != 0 {
		t.Fatalf("exit %d\n%s", p.Code, p.Stderr)
	}
	check("the automatic gc")

	aged = []string{filepath.Join(state, "events", ".count-0.jsonl.tmp-1-aged"), filepath.Join(state, ".probe.json.tmp-1-aged")}
	plant(aged...)
	age(old, aged...)
	if p := fb(t, state, "gc"); p.Code != 0 {
		t.Fatalf("gc: exit %d\n%s", p.Code, p.Stderr)
	}
	check("fusebox gc")
}
