package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// methodConstants are the figures the hand-kept prose of docs/benchmarks.md
// may state: constants of the method (what is run, how often, against which
// bounds) and the targets, never a measurement. Each is removed from the
// prose before it is searched for digits; a phrase, not a bare number, so
// that a measured figure cannot hide behind one.
var methodConstants = []string{
	// the storm and its scaled policy
	"tick 0 to tick 20 and 200 after", "for 30 ticks", "divided by\n60", "3 attempts of 10s", "3 attempts of", "waits of 2 s then\n  4 s plus 0–2 s",
	"younger than 300 s", "waits of 33 ms\n  and 67 ms plus 0–33 ms, a 5 s window", "`CB_SCALE=60`", "`curl -fsS --retry 2`", "waits of 1 s\n  and then 2 s",
	"curl 7.88", "express 17 ms", "run 60 times faster", "open_max 5 m → 5 s", "before tick 20", "after tick 20",
	"`--retry-budget=20%`", "retry_budget 20%", "10 s window", "ten ticks", "6 jobs × 3 attempts = 18 requests", "sends 18 every tick",
	"the 20 ticks of the outage", "\"5x fewer\"", "a 30 s interval", "\"within 5 ticks\"", "at 1 s ticks", "open period + 1 tick", "--retry 2",
	// the burst
	"40 jobs", "5 attempts each", "200 requests", "`retry_budget: 20%`", "20% of its first attempts in the last 10 s plus 3: 40 + 8 + 3 = 51",
	"in 10s", "`trip_after: 3`",
	// latency
	"fail-fast + `true` + 0.3 ms", "within 1.25x", "(0.5x)", "(3.5x)", "at its first use", "`141`", "`runtime.GOMAXPROCS(1)`", "poll(2)", "write(2)",
	"10,000 circuits", "an hour old", "two hours old", "20-circuit", "twenty circuits", "two `http:`",
	// the library and §4b
	"within 2x", "5 rounds", "v2", "up to 256", "statecache",
	// jitter
	"20 ms slots", "(5 ms)", "(2 s)", "N(N+1)/2",
	// Redis, the proxy, budgets, bounds
	"within 1.2x", "200-process", "200 processes", "100 ms to connect", "50 ms a command", "2 s to connect and 5 s to answer", "2 s to connect, 5 s to answer",
	"8 clients each making 25 state updates", "after 50 ms", "64 idle upstream\nconnections", "80% of nginx", "≥90%", "≤1.15x", "<1 ms", "500 requests a second",
	"≤15 MB", "16 connections", "`attempts: 2`", "10s timeout", "`deadline: 20s`", "3 attempts of 10s", "waits of 5s, 10s and 30s", "(at most 1s)",
	"50 processes", "5 s\n  lock wait", "more than 20%", "`nice -n -15`", "nice -n -15", "0.2 ms-over-the-floor", "most 600 lines", "100 'A' 'B'",
	"just after tick 0", "[0, exp)", "of 200,", "(3 attempts", "2-core", "2 cores", "two cores", "X-Fusebox-", "1 December", "HTTP/1.x", "http1.go", "case 13", "§13", "x/sys", "goccy/go-yaml",
}

// notFigures are digits that name rather than measure: commits, issues,
// sections, headings.
var notFigures = regexp.MustCompile(`\b[0-9a-f]{7,40}\b|(?i)issues? \d+|§\d+[a-z]?|(?m)^#+ \d+[a-z]?\.|\bv\d+\b|\bp99\b|127\.0\.0\.1|\b503\b|ESP32`)

// TestTheProseQuotesNoMeasuredFigure keeps every measured figure of
// docs/benchmarks.md inside the generated sections, where one run writes
// them all: hand-kept prose quoting an older run is how the page drifted
// (issue 38).
func TestTheProseQuotesNoMeasuredFigure(t *testing.T) {
	b, err := os.ReadFile("../docs/benchmarks.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range figuresOutsideSections(string(b)) {
		t.Errorf("a figure outside the generated sections (generate it, or name the commit that recorded it): %s", line)
	}
}

func TestFiguresOutsideSectionsFlagsAMeasurement(t *testing.T) {
	begin, end := sectionMarkers("latency")
	doc := "Method: 6 jobs × 3 attempts = 18 requests each time; see 740cd19 and issue 29.\n\n" +
		begin + "\n| a | 2.75x |\n" + end + "\n\nThe fail-fast run took 2.81x the hello-world.\n\n```sh\ngo test -benchtime 200x\n```\n"
	got := figuresOutsideSections(doc)
	if len(got) != 1 || !strings.Contains(got[0], "2.81x") {
		t.Errorf("flagged %q, want the one sentence with 2.81x", got)
	}
}

// figuresOutsideSections returns the lines of doc's prose, outside the
// generated sections, code and method constants, that still hold a digit.
func figuresOutsideSections(doc string) []string {
	for _, name := range append([]string{"glance", "machine"}, allScenarios...) {
		begin, end := sectionMarkers(name)
		if i, j := strings.Index(doc, begin), strings.Index(doc, end); i >= 0 && j > i {
			doc = doc[:i] + doc[j+len(end):]
		}
	}
	doc = regexp.MustCompile("(?s)```.*?```").ReplaceAllString(doc, "")
	doc = regexp.MustCompile("(?m)^    .*$").ReplaceAllString(doc, "")
	doc = regexp.MustCompile("(?m)^\\| `-.*$").ReplaceAllString(doc, "") // the flags table: their defaults
	for _, c := range methodConstants {
		doc = strings.ReplaceAll(doc, c, "")
	}
	doc = regexp.MustCompile("`[^`]*`").ReplaceAllString(doc, "") // commands, flags and names
	doc = notFigures.ReplaceAllString(doc, "")
	var out []string
	for _, line := range strings.Split(doc, "\n") {
		if strings.ContainsAny(line, "0123456789") {
			out = append(out, strings.TrimSpace(line))
		}
	}
	return out
}
