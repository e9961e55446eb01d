package breaker_test

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// TestBreakerProperties drives one circuit through random sequences of
// attempts and outcomes, probes that are killed, forced trips and resets, time
// passing, wall-clock jumps and reboots, and checks it against a simple model
// after every step.
func TestBreakerProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := &model{p: drawBreakerPolicy(t), st: breaker.State{Name: "api"}, now: bootA, leases: map[string]grant{}}
		t.Repeat(map[string]func(*rapid.T){
			"calls":              m.calls,
			"attempt":            m.attempt,
			"finish":             m.finish,
			"probe killed":       m.kill,
			"time passes":        m.pass,
			"wall clock jumps":   m.jumpWall,
			"reboot":             m.reboot,
			"wall-only clock":    m.wallOnly,
			"trip":               m.trip,
			"reset":              m.reset,
			"late stale outcome": m.late,
			"":                   m.check,
		})
	})
}

func drawBreakerPolicy(t *rapid.T) breaker.Policy {
	openFor := time.Duration(rapid.IntRange(1, 60).Draw(t, "open_for_s")) * time.Second
	p := breaker.Policy{
		TripAfter:      rapid.IntRange(1, 5).Draw(t, "trip_after"),
		OpenFor:        openFor,
		OpenMultiplier: rapid.Float64Range(1, 4).Draw(t, "open_multiplier"),
		OpenMax:        openFor * time.Duration(rapid.IntRange(1, 10).Draw(t, "open_max_x")),
		Probes:         rapid.IntRange(1, 3).Draw(t, "probes"),
		ProbeLease:     time.Duration(rapid.IntRange(1, 90).Draw(t, "probe_lease_s")) * time.Second,
	}
	if rapid.Bool().Draw(t, "failure_rate") {
		window := rapid.IntRange(1, 10).Draw(t, "window")
		p.FailureRate = &breaker.FailureRate{
			Threshold:   float64(rapid.SampledFrom([]int{25, 50, 75, 100, rapid.IntRange(1, 100).Draw(t, "any_pct")}).Draw(t, "threshold_pct")) / 100,
			Window:      window,
			MinAttempts: rapid.IntRange(0, window).Draw(t, "min_attempts"),
		}
	}
	if err := (fusebox.Policy{Breaker: p}).Validate(); err != nil {
		t.Fatalf("drew an invalid policy: %v", err)
	}
	return p
}

// grant is the model's record of a probe lease: where and when it was given.
type grant struct {
	boot     string
	bootTime time.Duration
}

type model struct {
	p   breaker.Policy
	st  breaker.State
	now breaker.Instant

	held   []breaker.Permit // attempts running now
	stale  []breaker.Permit // permits from generations since left behind
	leases map[string]grant // leases granted and not yet given back (killed ones too)
	nextID int
	boots  int

	// The model of the closed circuit: the current generation's counted
	// outcomes, newest last.
	recent []bool // true: failed
	// Failed probes since the circuit last closed.
	reopens int

	// The last open or forced-open period that started, as measured at its
	// start.
	opened struct {
		gen    uint64
		phase  breaker.Phase
		boot   string
		at     time.Duration // boot time
		period time.Duration // 0 when forced open until reset
	}

	// What the previous check saw, so nothing that only grows ever shrinks.
	seen breaker.State
}

// apply keeps the model's bookkeeping after a state-machine call.
func (m *model) apply(gen uint64, events []breaker.Event) {
	if m.st.Generation == gen {
		return
	}
	m.recent = nil
	if m.st.Phase == breaker.Closed {
		m.reopens = 0
	}
	m.stale = append(m.stale, m.held...) // every running attempt is now from an older generation
	m.held = nil
	for _, e := range events {
		if e.Kind == breaker.EventTransition && (e.To == breaker.Open || e.To == breaker.ForcedOpen) {
			m.opened.gen, m.opened.phase, m.opened.boot, m.opened.at, m.opened.period = m.st.Generation, e.To, m.now.Boot, m.now.BootTime, time.Duration(e.For)
		}
	}
}

// outcomes are what an attempt can end in, as Do records them.
var outcomes = map[byte]breaker.Outcome{
	's': {},                               // success
	'f': {Failed: true, Reason: "boom"},   // failure
	'n': {Failed: true, Neutral: true},    // local network down, 4xx
	'c': {Neutral: true},                  // cancelled by its caller
	'w': {Failed: true, OpenFor: 1 << 40}, // 429, Retry-After of 18 minutes
}

func drawOutcome(t *rapid.T) breaker.Outcome {
	return outcomes[rapid.SampledFrom([]byte("sfffnncw")).Draw(t, "outcome")]
}

// calls makes a burst of complete attempts, one after the other.
func (m *model) calls(t *rapid.T) {
	for _, r := range rapid.StringMatching(`[sfffnncw]{1,12}`).Draw(t, "outcomes") {
		if permit, ok := m.acquire(); ok {
			m.record(t, permit, outcomes[byte(r)])
		}
	}
}

// attempt starts an attempt that runs until finished or killed, if the
// breaker lets it.
func (m *model) attempt(t *rapid.T) {
	if permit, ok := m.acquire(); ok {
		m.held = append(m.held, permit)
	}
}

// acquire asks for a permit as Do does.
func (m *model) acquire() (breaker.Permit, bool) {
	gen := m.st.Generation
	permit, err := m.st.Decide(m.now)
	var events []breaker.Event
	id := fmt.Sprintf("lease-%d", m.nextID)
	if needsLock(err) {
		permit, events, err = m.st.Acquire(m.p, m.now, id, false)
	}
	m.apply(gen, events)
	if err != nil {
		return breaker.Permit{}, false
	}
	if permit.Lease != "" {
		m.nextID++
		m.leases[id] = grant{m.now.Boot, m.now.BootTime}
	}
	return permit, true
}

func (m *model) finish(t *rapid.T) {
	if len(m.held) == 0 {
		t.Skip("no attempt running")
	}
	i := rapid.IntRange(0, len(m.held)-1).Draw(t, "attempt")
	permit := m.held[i]
	m.held = slices.Delete(m.held, i, i+1)
	m.record(t, permit, drawOutcome(t))
}

func (m *model) record(t *rapid.T, permit breaker.Permit, o breaker.Outcome) {
	gen := m.st.Generation
	current := permit.Generation == gen && !o.Neutral
	before := m.st.View(m.now)
	tripEnded := m.st.Phase == breaker.ForcedOpen && before.Phase == breaker.Closed
	recent := append(slices.Clone(m.recent), o.Failed)
	events := m.st.Record(m.p, m.now, permit, o)
	delete(m.leases, permit.Lease)
	m.apply(gen, events)

	switch {
	case !current:
		// Only time moves the breaker here: a timed trip that has ended.
		if moved := m.st.Generation != gen; moved != tripEnded {
			t.Fatalf("a stale or neutral outcome %+v moved the breaker: %+v", o, events)
		}
	case permit.Lease != "" && !o.Failed:
		if m.st.Phase != breaker.Closed {
			t.Fatalf("a successful probe from the current generation left the circuit %s", m.st.Phase)
		}
	case permit.Lease != "":
		if m.st.Phase != breaker.Open {
			t.Fatalf("a failed probe left the circuit %s", m.st.Phase)
		}
		m.reopens++
		want := min(time.Duration(float64(m.p.OpenFor)*math.Pow(m.p.OpenMultiplier, float64(m.reopens))), m.p.OpenMax)
		if o.OpenFor > 0 {
			want = min(o.OpenFor, m.p.OpenMax)
		}
		if got := time.Duration(m.st.OpenPeriod); got != want {
			t.Fatalf("failed probe %d reopened for %s, want %s", m.reopens, got, want)
		}
	default: // an ordinary attempt on a closed circuit
		wantOpen := o.Failed && (o.OpenFor > 0 || m.tripped(recent))
		if got := m.st.Phase == breaker.Open; got != wantOpen {
			t.Fatalf("after outcomes %v the circuit is %s, want open = %v", recent, m.st.Phase, wantOpen)
		}
		if !wantOpen {
			m.recent = recent
		}
	}
}

// tripped is the model of the trip rule, given the closed circuit's counted
// outcomes (true: failed), oldest first.
func (m *model) tripped(recent []bool) bool {
	fr := m.p.FailureRate
	if fr == nil {
		n := 0
		for _, failed := range slices.Backward(recent) {
			if !failed {
				break
			}
			n++
		}
		return n >= m.p.TripAfter
	}
	window := recent[max(0, len(recent)-fr.Window):]
	failed := 0
	for _, f := range window {
		if f {
			failed++
		}
	}
	return len(window) >= max(fr.MinAttempts, 1) && failed*100 >= int(fr.Threshold*100+0.5)*len(window)
}

// kill forgets a running attempt without recording it: SIGKILL.
func (m *model) kill(t *rapid.T) {
	if len(m.held) == 0 {
		t.Skip("no attempt running")
	}
	i := rapid.IntRange(0, len(m.held)-1).Draw(t, "attempt")
	m.held = slices.Delete(m.held, i, i+1)
}

// late records the outcome of an attempt that began generations ago.
func (m *model) late(t *rapid.T) {
	if len(m.stale) == 0 {
		t.Skip("no stale attempt")
	}
	i := rapid.IntRange(0, len(m.stale)-1).Draw(t, "stale")
	permit := m.stale[i]
	m.stale = slices.Delete(m.stale, i, i+1)
	m.record(t, permit, breaker.Outcome{Failed: rapid.Bool().Draw(t, "failed")})
}

func (m *model) pass(t *rapid.T) {
	// Steps that land on the edges, or anywhere up to twice OpenMax.
	d := rapid.SampledFrom([]time.Duration{
		1, time.Second, m.p.OpenFor, m.p.ProbeLease, m.p.OpenMax,
		time.Duration(rapid.Int64Range(0, int64(2*m.p.OpenMax)).Draw(t, "any")),
	}).Draw(t, "d")
	m.now = testenv.After(m.now, d)
}

func (m *model) jumpWall(t *rapid.T) {
	d := time.Duration(rapid.Int64Range(-int64(48*time.Hour), int64(48*time.Hour)).Draw(t, "jump"))
	m.now.Wall = m.now.Wall.Add(d)
}

func (m *model) reboot(t *rapid.T) {
	m.boots++
	wall := m.now.Wall.Add(time.Duration(rapid.Int64Range(-int64(time.Hour), int64(time.Hour)).Draw(t, "wall_offset")))
	if rapid.Bool().Draw(t, "rtc_lost") {
		wall = epoch
	}
	m.now = breaker.Instant{
		Wall:     wall,
		Boot:     fmt.Sprintf("boot-%d", m.boots),
		BootTime: time.Duration(rapid.Int64Range(0, int64(time.Minute)).Draw(t, "uptime")),
	}
	m.held = nil // the reboot killed every running attempt
}

// wallOnly hands the circuit to a process whose clock knows only the wall
// time, as a WallClock does; its time may have jumped either way.
func (m *model) wallOnly(t *rapid.T) {
	d := time.Duration(rapid.Int64Range(-int64(time.Hour), int64(time.Hour)).Draw(t, "wall_offset"))
	m.now = breaker.Instant{Wall: m.now.Wall.Add(d)}
	m.held = nil
}

func (m *model) trip(t *rapid.T) {
	gen := m.st.Generation
	d := time.Duration(0)
	if rapid.Bool().Draw(t, "timed") {
		d = time.Duration(rapid.Int64Range(1, int64(m.p.OpenMax)).Draw(t, "for"))
	}
	m.apply(gen, m.st.Trip(m.now, d, ""))
}

func (m *model) reset(t *rapid.T) {
	gen := m.st.Generation
	m.apply(gen, m.st.Reset(m.now, ""))
}

func (m *model) check(t *rapid.T) {
	v := m.st.View(m.now)

	if v.ActiveProbes > m.p.Probes || len(m.st.Probes) > m.p.Probes {
		t.Fatalf("%d active probes (%d stored), more than Probes = %d", v.ActiveProbes, len(m.st.Probes), m.p.Probes)
	}
	// A lease counts only until it ends: a probe killed mid-call does not
	// wedge the circuit. Leases from another boot may count until rebased.
	live := 0
	for _, g := range m.leases {
		if g.boot != m.now.Boot || g.boot == "" || m.now.BootTime-g.bootTime < m.p.ProbeLease {
			live++
		}
	}
	if v.ActiveProbes > live {
		t.Fatalf("%d active probes, but only %d leases can still be live", v.ActiveProbes, live)
	}
	if v.ReopensIn < 0 || v.ReopensIn > m.p.OpenMax {
		t.Fatalf("%s circuit reopens in %s, outside [0, OpenMax = %s]", v.Phase, v.ReopensIn, m.p.OpenMax)
	}
	if v.Phase == breaker.Open && !v.OpenUntil.Equal(m.now.Wall.Add(v.ReopensIn)) {
		t.Fatalf("OpenUntil %s is not now + ReopensIn %s", v.OpenUntil, v.ReopensIn)
	}
	// Within a boot an open period lasts exactly as long as the boot clock
	// says, whatever the wall clock does; then an open circuit is half-open
	// and a timed trip has ended closed.
	if o := m.opened; o.gen == m.st.Generation && o.boot == m.now.Boot && o.boot != "" {
		left := o.period - (m.now.BootTime - o.at)
		want, wantIn := o.phase, left
		switch {
		case o.phase == breaker.ForcedOpen && o.period == 0:
			wantIn = 0
		case left > 0:
		case o.phase == breaker.ForcedOpen:
			want, wantIn = breaker.Closed, 0
		default:
			want, wantIn = breaker.HalfOpen, 0
		}
		if v.Phase != want || v.ReopensIn != wantIn {
			t.Fatalf("%s period of %s began %s ago by the boot clock, but View = %+v", o.phase, o.period, m.now.BootTime-o.at, v)
		}
	}
	if m.st.Generation < m.seen.Generation {
		t.Fatalf("generation went from %d to %d", m.seen.Generation, m.st.Generation)
	}
	if m.st.Phase == breaker.HalfOpen || m.st.Phase == "" && m.st.Generation > 0 {
		t.Fatalf("stored phase %q", m.st.Phase)
	}
	if m.st.Phase == breaker.Closed && (m.st.Probes != nil || !m.st.OpenedAt.Wall.IsZero()) {
		t.Fatalf("a closed circuit keeps open-circuit state: %+v", m.st)
	}
	if m.p.FailureRate != nil && len(m.st.Recent) > m.p.FailureRate.Window || strings.Trim(m.st.Recent, "sf") != "" {
		t.Fatalf("Recent = %q", m.st.Recent)
	}
	m.checkDecideAgreesWithAcquire(t, v)
	m.seen = m.st
}

// checkDecideAgreesWithAcquire: the lock-free decision, when it makes one, is
// the one Acquire would make under the lock; and a half-open circuit with a
// free probe slot grants it.
func (m *model) checkDecideAgreesWithAcquire(t *rapid.T, v breaker.View) {
	locked := m.st
	locked.Probes = slices.Clone(m.st.Probes)
	p, err := m.st.Decide(m.now)
	lp, _, lerr := locked.Acquire(m.p, m.now, "check", false)
	switch {
	case needsLock(err):
	case err == nil:
		if lerr != nil || lp != p {
			t.Fatalf("Decide gave %+v, Acquire %+v, %v", p, lp, lerr)
		}
	default:
		if lerr == nil || lerr.Error() != err.Error() {
			t.Fatalf("Decide refused with %v, Acquire said %+v, %v", err, lp, lerr)
		}
	}
	if v.Settled && v.Phase == breaker.HalfOpen && v.ActiveProbes < m.p.Probes && (lerr != nil || lp.Lease != "check") {
		t.Fatalf("half-open with %d of %d probe slots taken, but Acquire = %+v, %v", v.ActiveProbes, m.p.Probes, lp, lerr)
	}
}
