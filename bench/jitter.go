package main

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/fusebox-hq/fusebox"
)

// The jitter scenario reproduces the simulation of the AWS Architecture
// Blog's "Exponential Backoff And Jitter": N clients each need one write to a
// shared resource guarded by optimistic concurrency, and all start at once.
// Time runs in slots. Of the writes that land in one slot, one commits and
// the others conflict; a conflicting client waits as fusebox's
// Backoff.Delay says and tries again. The simulation counts every call and
// the time until the last client has written. Time is simulated: nothing
// sleeps, and a seed makes every run the same.

// jitterSim is the simulation's setup.
type jitterSim struct {
	Slot    time.Duration // one write's time; writes in the same slot conflict
	First   time.Duration // backoff after the first conflict
	Max     time.Duration // cap on any single wait
	Trials  int           // runs averaged for each point
	Seed    uint64
	Clients []int // the x axis
}

var jitterKinds = []fusebox.Jitter{fusebox.JitterNone, fusebox.JitterEqual, fusebox.JitterFull, fusebox.JitterDecorrelated}

func defaultJitterSim(quick bool) jitterSim {
	s := jitterSim{Slot: 20 * time.Millisecond, First: 5 * time.Millisecond, Max: 2 * time.Second, Trials: 100, Seed: 1}
	for n := 5; n <= 100; n += 5 {
		s.Clients = append(s.Clients, n)
	}
	s.Clients = append([]int{1}, s.Clients...)
	if quick {
		s.Trials = 10
	}
	return s
}

// jitterPoint is the mean outcome for one jitter kind and client count.
type jitterPoint struct {
	Clients    int
	Calls      float64
	Completion time.Duration
}

func (s jitterSim) backoff(j fusebox.Jitter) fusebox.Backoff {
	return fusebox.Backoff{First: s.First, Multiplier: 2, Max: s.Max, Jitter: j}
}

// Run returns, for each jitter kind, the mean calls and completion time at
// each client count.
func (s jitterSim) Run() map[fusebox.Jitter][]jitterPoint {
	out := map[fusebox.Jitter][]jitterPoint{}
	for ki, j := range jitterKinds {
		b := s.backoff(j)
		for _, n := range s.Clients {
			var calls, done float64
			for t := range s.Trials {
				rng := rand.New(rand.NewPCG(s.Seed, uint64(ki)<<48|uint64(n)<<24|uint64(t)))
				c, d := contend(n, b, s.Slot, rng)
				calls += float64(c)
				done += float64(d)
			}
			out[j] = append(out[j], jitterPoint{
				Clients:    n,
				Calls:      calls / float64(s.Trials),
				Completion: time.Duration(done / float64(s.Trials)),
			})
		}
	}
	return out
}

// contend runs one contention of n clients starting together and returns the
// calls made and the time the last write committed (the end of its slot).
func contend(n int, b fusebox.Backoff, slot time.Duration, rng *rand.Rand) (calls int, done time.Duration) {
	type client struct {
		attempt int // conflicts so far
		prev    time.Duration
	}
	clients := make([]client, n)
	q := &slotQueue{}
	for i := range n {
		heap.Push(q, pending{slot: 0, client: i})
	}
	var group []int
	for q.Len() > 0 {
		now := (*q)[0].slot
		group = group[:0]
		for q.Len() > 0 && (*q)[0].slot == now {
			group = append(group, heap.Pop(q).(pending).client)
		}
		calls += len(group)
		winner := rng.IntN(len(group))
		for k, i := range group {
			if k == winner {
				continue
			}
			c := &clients[i]
			c.attempt++
			wait := b.Delay(c.attempt, c.prev, rng.Float64())
			c.prev = wait
			// The conflicting write took its slot; the retry comes after the wait.
			heap.Push(q, pending{slot: now + 1 + int64(wait/slot), client: i})
		}
		done = time.Duration(now+1) * slot
	}
	return calls, done
}

type pending struct {
	slot   int64
	client int
}

// slotQueue is a min-heap of pending writes by slot.
type slotQueue []pending

func (q slotQueue) Len() int           { return len(q) }
func (q slotQueue) Less(i, j int) bool { return q[i].slot < q[j].slot }
func (q slotQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *slotQueue) Push(x any)        { *q = append(*q, x.(pending)) }
func (q *slotQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

// jitterRound runs the simulation, writes its two charts into outDir and
// returns its tables. The simulation is seeded: every round would give the
// same figures, so a run simulates it once.
func jitterRound(s jitterSim, outDir string) (roundResult, error) {
	res := s.Run()
	calls := LineChart{Title: "Jitter: total calls until every client has written", XLabel: "contending clients", YLabel: "calls (mean of " + strconv.Itoa(s.Trials) + " runs)"}
	times := LineChart{Title: "Jitter: time until every client has written", XLabel: "contending clients", YLabel: "completion time (ms, simulated; log scale)", YLog: true}
	for _, j := range jitterKinds {
		var cs, ts []Point
		for _, p := range res[j] {
			cs = append(cs, Point{float64(p.Clients), p.Calls})
			ts = append(ts, Point{float64(p.Clients), float64(p.Completion) / float64(time.Millisecond)})
		}
		calls.Series = append(calls.Series, Series{Name: string(j), Points: cs})
		times.Series = append(times.Series, Series{Name: string(j), Points: ts})
	}
	if err := writeChart(filepath.Join(outDir, "bench-jitter-calls.svg"), calls); err != nil {
		return roundResult{}, err
	}
	if err := writeChart(filepath.Join(outDir, "bench-jitter-time.svg"), times); err != nil {
		return roundResult{}, err
	}

	var b strings.Builder
	fmt.Fprintf(&b, "Simulated: %d ms slots, backoff %s doubling up to %s, %d runs a point, seed %d; ",
		s.Slot.Milliseconds(), s.First, s.Max, s.Trials, s.Seed)
	b.WriteString("every wait is fusebox's own `Backoff.Delay`.\n\n")
	header := []string{"jitter"}
	for _, n := range jitterTableClients(s.Clients) {
		header = append(header, fmt.Sprintf("calls, %d clients", n), fmt.Sprintf("time, %d clients", n))
	}
	var rows [][]string
	for _, j := range jitterKinds {
		row := []string{string(j)}
		for _, n := range jitterTableClients(s.Clients) {
			for _, p := range res[j] {
				if p.Clients == n {
					row = append(row, fmt.Sprintf("%.0f", p.Calls), fmtMs(p.Completion))
				}
			}
		}
		rows = append(rows, row)
	}
	b.WriteString(mdTable(header, "lrrrr", rows))
	full, dec, equal, none := at(res, fusebox.JitterFull), at(res, fusebox.JitterDecorrelated), at(res, fusebox.JitterEqual), at(res, fusebox.JitterNone)
	fmt.Fprintf(&b, "\nAt %d clients, full jitter makes %s fewer calls than no jitter, %s fewer than equal and %s fewer than decorrelated; "+
		"it finishes %s sooner than no jitter, %s sooner than equal, and takes %s the time of decorrelated.\n",
		full.Clients, fmtRatio(ratio(none.Calls, full.Calls)), fmtRatio(ratio(equal.Calls, full.Calls)), fmtRatio(ratio(dec.Calls, full.Calls)),
		fmtRatio(ratio(float64(none.Completion), float64(full.Completion))), fmtRatio(ratio(float64(equal.Completion), float64(full.Completion))),
		fmtRatio(ratio(float64(full.Completion), float64(dec.Completion))))
	b.WriteString("\n![calls](bench-jitter-calls.svg)\n\n![time](bench-jitter-time.svg)\n")
	return roundResult{Detail: b.String()}, nil
}

// jitterTableClients picks the client counts the table shows: the middle and
// the largest.
func jitterTableClients(clients []int) []int {
	if len(clients) < 2 {
		return clients
	}
	return []int{clients[len(clients)/2], clients[len(clients)-1]}
}

// at returns the point with the most clients.
func at(res map[fusebox.Jitter][]jitterPoint, j fusebox.Jitter) jitterPoint {
	ps := res[j]
	if len(ps) == 0 {
		return jitterPoint{}
	}
	return ps[len(ps)-1]
}
