package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/internal/redistest"
	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// The promises of a shared circuit hold on a host whose every core is
// saturated by other work (redistest.Saturate, or .ci/run's hog phase):
// Redis is slow to reach then, not down.
func TestRedisOnASaturatedHost(t *testing.T) {
	testenv.Heavy(t) // every core saturated, hundreds of processes
	srv := redistest.Start(t)
	redistest.Saturate(t)
	t.Run("two hundred processes over two hosts stay on Redis and lose no count", func(t *testing.T) {
		n := 200
		if testing.Short() {
			n = 40
		}
		got := twoHundred(t, []host{newHost(t, srv), newHost(t, srv)}, "busy", n)
		if got.timedOut > 0 || got.fellBack > 0 || got.lost != 0 {
			t.Errorf("%d processes on a saturated host: %d timed out before all had started, %d recorded their outcome on their host's replica instead of Redis (%d warned), %d outcomes lost",
				n, got.timedOut, got.fellBack, got.warned, got.lost)
		}
		t.Logf("%d processes: %d outcomes on a replica instead of Redis, %d warnings, %d timed out, %d outcomes lost; the last exited %s after the release",
			n, got.fellBack, got.warned, got.timedOut, got.lost, got.wall)
	})
	t.Run("one of twenty callers over two hosts probes", func(t *testing.T) {
		hosts := []host{newHost(t, srv), newHost(t, srv)}
		for round := range 3 {
			got := probeRound(t, hosts, fmt.Sprintf("bridge-%d", round), 20)
			if got.probes != 1 || got.fellBack != 0 {
				t.Errorf("round %d: %d of 20 callers probed (%d left Redis for their local replica), want 1; exits %v",
					round, got.probes, got.fellBack, got.codes)
			}
			t.Logf("round %d: %d of 20 callers probed", round, got.probes)
		}
	})
}

// round is what probeRound saw.
type round struct {
	probes, fellBack int
	codes            []int
}

// probeRound trips circuit name, waits for it to be half-open, then starts
// n callers over hosts at once; each caller's command marks that it ran and
// waits until every caller has run or exited, so that however slow the
// machine, the others find the probe held.
func probeRound(t *testing.T, hosts []host, name string, n int) round {
	policy := []string{"--attempts", "1", "--open-for", "300ms", "--trip-after", "1", "--timeout", "10m", "--deadline", "10m"}
	if p := hosts[0].fb(t, testenv.RunArgs(name, policy, "false")...); p.Code != 1 {
		t.Fatalf("tripping run: exit %d:\n%s", p.Code, p.Stderr)
	}
	ran := t.TempDir()
	release := filepath.Join(t.TempDir(), "release")
	testenv.WaitFor(t, "the open period to end", func() bool { return hosts[1].status(t, name)["state"] == "half_open" })
	r := round{codes: make([]int, n)}
	var mu sync.Mutex
	var wg sync.WaitGroup
	exited := 0
	for i := range n {
		wg.Go(func() {
			p := hosts[i%len(hosts)].fb(t, testenv.RunArgs(name, policy, "sh", "-c",
				fmt.Sprintf("touch %s/%d; while [ ! -e %s ]; do sleep 0.01; done", ran, i, release))...)
			mu.Lock()
			defer mu.Unlock()
			r.codes[i] = p.Code
			exited++
			if strings.Contains(p.Stderr, "unreachable") {
				r.fellBack++
			}
		})
	}
	for deadline := time.Now().Add(10 * time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		entries, _ := os.ReadDir(ran)
		mu.Lock()
		done := exited+len(entries) >= n
		mu.Unlock()
		if done {
			break
		}
	}
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	entries, _ := os.ReadDir(ran)
	r.probes = len(entries)
	return r
}
