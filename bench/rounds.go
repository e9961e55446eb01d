package main

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A run measures each scenario in several rounds, the scenarios taking
// turns round by round, so that a spell of the machine's noise falls on one
// round of each rather than on all of one. Every figure a section states is
// then the median over the rounds with its range, and every sentence with
// a figure is written here, from those same rounds.

// A figure is one number a round measured: a row of the section's target
// table (Label set), or a figure only its prose quotes.
type figure struct {
	Key       string // how the prose asks for it
	Contender string // leads the label in a table with a contender column
	Label     string // the target column; "" for a figure of the prose only
	Value     float64
	Format    func(float64) string
	Met       func(float64) bool // nil: no target
	Note      string             // the verdict cell of a row without a target
}

// roundResult is what one round of a scenario measured: its detail
// (tables, notes, charts: shown for the median round) and its figures.
type roundResult struct {
	Detail  string
	Figures []figure
}

// roundLoad is how busy the machine was around one round.
type roundLoad struct {
	Start, End          time.Time
	LoadStart, LoadEnd  string
	OtherWork, Niceness string
}

func (l roundLoad) String() string {
	return fmt.Sprintf("%s–%s UTC, load average %s at its start, %s at its end; %s; %s",
		l.Start.UTC().Format("2006-01-02 15:04:05"), l.End.UTC().Format("15:04:05"), l.LoadStart, l.LoadEnd, l.OtherWork, l.Niceness)
}

// summary is a scenario's figures over its rounds.
type summary struct {
	rounds []roundResult
	by     map[string][]float64
	first  map[string]figure
	keys   []string
}

func overRounds(rounds []roundResult) summary {
	s := summary{rounds: rounds, by: map[string][]float64{}, first: map[string]figure{}}
	for _, r := range rounds {
		for _, f := range r.Figures {
			if _, ok := s.first[f.Key]; !ok {
				s.first[f.Key] = f
				s.keys = append(s.keys, f.Key)
			}
			s.by[f.Key] = append(s.by[f.Key], f.Value)
		}
	}
	return s
}

// medianOf is the middle value (the mean of the two middle ones for an
// even count; +Inf when either is).
func medianOf(vs []float64) float64 {
	if len(vs) == 0 {
		return math.NaN()
	}
	s := slices.Sorted(slices.Values(vs))
	return median64(s)
}

// span prints a figure over the rounds: "2.75x (2.61–2.90x, 3 rounds)",
// or the one value of a single round.
func span(vs []float64, format func(float64) string) string {
	if len(vs) == 0 {
		return "not measured"
	}
	med := format(medianOf(vs))
	if len(vs) == 1 {
		return med
	}
	lo, hi := format(slices.Min(vs)), format(slices.Max(vs))
	if lo == hi {
		return fmt.Sprintf("%s (every one of %d rounds)", med, len(vs))
	}
	return fmt.Sprintf("%s (%s, %d rounds)", med, rangeText(lo, hi), len(vs))
}

// rangeText joins two formatted figures, their shared unit written once:
// "2.61x", "2.90x" → "2.61–2.90x".
func rangeText(lo, hi string) string {
	unit := func(s string) string { return strings.TrimLeft(s, "+-−0123456789.,") }
	if u := unit(lo); u == unit(hi) && u != lo {
		return strings.TrimSuffix(lo, u) + "–" + hi
	}
	return lo + " to " + hi
}

// roundsVerdict is "met" when every round met the target, "**missed**"
// when none did, and how many did otherwise.
func roundsVerdict(vs []float64, met func(float64) bool) string {
	n := 0
	for _, v := range vs {
		if met(v) {
			n++
		}
	}
	switch n {
	case len(vs):
		return "met"
	case 0:
		return "**missed**"
	}
	return fmt.Sprintf("met in %d of %d rounds", n, len(vs))
}

// get prints the named figure over the rounds; a figure no round measured
// (a contender that was skipped) is "not measured".
func (s summary) get(key string) string {
	f, ok := s.first[key]
	if !ok {
		return "not measured"
	}
	return span(s.by[key], f.Format)
}

// has says whether a round measured the named figure.
func (s summary) has(key string) bool { _, ok := s.first[key]; return ok }

// targetTable is the section's target table over the rounds, nil when the
// scenario has no target row.
func (s summary) targetTable() string {
	var rows [][]string
	contender := false
	for _, k := range s.keys {
		f := s.first[k]
		if f.Label == "" {
			continue
		}
		contender = contender || f.Contender != ""
		v := f.Note
		if f.Met != nil {
			v = roundsVerdict(s.by[k], f.Met)
		}
		rows = append(rows, []string{f.Contender, f.Label, s.get(k), v})
	}
	if len(rows) == 0 {
		return ""
	}
	if contender {
		return mdTable([]string{"contender", "target", "measured", "verdict"}, "llrl", rows)
	}
	for i := range rows {
		rows[i] = rows[i][1:]
	}
	return mdTable([]string{"target", "measured", "verdict"}, "lrl", rows)
}

// medianRound is the index of the round whose first target figure (or
// first figure) is nearest the median over the rounds: the round whose
// detail the section shows.
func (s summary) medianRound() int {
	if len(s.keys) == 0 {
		return 0
	}
	key := s.keys[0]
	for _, k := range s.keys {
		if s.first[k].Label != "" {
			key = k
			break
		}
	}
	vs := s.by[key]
	med := medianOf(vs)
	best := 0
	for i, v := range vs {
		if math.Abs(v-med) < math.Abs(vs[best]-med) {
			best = i
		}
	}
	return best
}

// section is a scenario's generated section: the median round's detail,
// the target table over the rounds, what this run shows, and one line per
// round.
func section(s summary, prose func(summary) string, loads []roundLoad, version string) string {
	var b strings.Builder
	k := s.medianRound()
	b.WriteString(strings.TrimRight(s.rounds[k].Detail, "\n") + "\n")
	if len(s.rounds) > 1 {
		fmt.Fprintf(&b, "\nThe tables above are round %d's, the round whose first target figure is the median.\n", k+1)
	}
	if t := s.targetTable(); t != "" {
		fmt.Fprintf(&b, "\nTargets, each figure the median of the rounds with their range:\n\n%s", t)
	}
	if prose != nil {
		b.WriteString("\n**What this run shows.** " + prose(s) + "\n")
	}
	fmt.Fprintf(&b, "\n_Measured %s–%s UTC on fusebox %s in %s, at the load of each below._\n\n",
		loads[0].Start.UTC().Format("2006-01-02 15:04"), loads[len(loads)-1].End.UTC().Format("15:04"), version, plural(len(loads), "round"))
	for i, l := range loads {
		fmt.Fprintf(&b, "- round %d: %s.\n", i+1, l)
	}
	return b.String()
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

// Formats of figures: a figure is a float64 (a duration in nanoseconds).
func fmtCount(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
func fmtDur(v float64) string   { return fmtMs(time.Duration(v)) }
func fmtSecs(v float64) string  { return fmtSeconds(time.Duration(v)) }

// fmtNanos prints a time a call: "734 ns", "8.37 µs".
func fmtNanos(v float64) string {
	switch {
	case v < 1000:
		return fmt.Sprintf("%.0f ns", v)
	case v < 1e6:
		return fmt.Sprintf("%.2f µs", v/1000)
	}
	return fmtDur(v)
}
func fmtPercent(v float64) string {
	return fmt.Sprintf("%.0f%%", v*100)
}

// fmtTicks prints a recovery in ticks; +Inf is a recovery the run did not
// see.
func fmtTicks(v float64) string {
	if math.IsInf(v, 1) {
		return "not within the run"
	}
	return fmtCount(v) + " ticks"
}

func atMost(limit float64) func(float64) bool  { return func(v float64) bool { return v <= limit } }
func atLeast(limit float64) func(float64) bool { return func(v float64) bool { return v >= limit } }
