package main

import (
	"context"
	"fmt"
	"log"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/fusebox-hq/fusebox"
)

// stormRound runs every contender through the storm once, writes the
// requests-per-tick chart into outDir and returns what it measured.
func stormRound(ctx context.Context, t *tools, cfg stormConfig, outDir string) (roundResult, error) {
	var sums []stormSummary
	var missing []string
	for i, c := range stormContenders(t, cfg.Scale) {
		if c.Missing != "" {
			log.Printf("storm: SKIPPING %s: %s", c.Name, c.Missing)
			missing = append(missing, fmt.Sprintf("- **%s was not run**: %s.", c.Name, c.Missing))
			continue
		}
		dir, err := newScratch(t.work, "storm-"+strconv.Itoa(i))
		if err != nil {
			return roundResult{}, err
		}
		if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(c.Config), 0o600); err != nil { // ConfigFor replaces it in runStorm
			return roundResult{}, err
		}
		log.Printf("storm: %s (%d ticks of %s)", c.Name, cfg.Ticks, cfg.Scale.Tick)
		run, err := runStorm(ctx, cfg, c, dir)
		if err != nil {
			return roundResult{}, err
		}
		s := summarize(c.Name, cfg, run)
		s.Diagnostic = c.Diagnostic
		log.Printf("storm: %s: %d requests while down, total job time %s, recovered after %d ticks",
			c.Name, s.RequestsDown, s.TotalWall.Round(time.Millisecond), s.RecoveryTicks)
		sums = append(sums, s)
	}

	chart := LineChart{
		Title:  fmt.Sprintf("Storm: requests reaching the upstream per tick (%d jobs a tick)", cfg.Jobs),
		XLabel: fmt.Sprintf("tick (one tick = %s of real time = one cron minute)", cfg.Scale.Tick),
		YLabel: "requests in the tick",
		Band:   &Band{From: 0, To: float64(cfg.DownTicks), Label: "upstream answers 503"},
	}
	for _, s := range sums {
		if s.Diagnostic {
			continue // it calls the upstream exactly as fusebox run does
		}
		var pts []Point
		for i, n := range s.PerTick {
			pts = append(pts, Point{float64(i), float64(n)})
		}
		chart.Series = append(chart.Series, Series{Name: s.Name, Points: pts})
	}
	if err := writeChart(filepath.Join(outDir, "bench-storm.svg"), chart); err != nil {
		return roundResult{}, err
	}
	return roundResult{Detail: stormMarkdown(cfg, sums, missing), Figures: stormFigures(cfg, sums)}, nil
}

func stormMarkdown(cfg stormConfig, sums []stormSummary, missing []string) string {
	var b strings.Builder
	sc := cfg.Scale
	fmt.Fprintf(&b, "%d jobs every tick for %d ticks; the upstream answers 503 until tick %d, then 200. "+
		"One tick is %s (one cron minute), so every duration is divided by %d. fusebox flags: `%s`.\n\n",
		cfg.Jobs, cfg.Ticks, cfg.DownTicks, sc.Tick, sc.Factor(), strings.Join(sc.FuseboxFlags(), " "))
	rows := [][]string{}
	for _, s := range sums {
		rec := "not within the run"
		if s.RecoveryTicks >= 0 {
			rec = strconv.Itoa(s.RecoveryTicks)
		}
		first := "none"
		if s.FirstOK >= 0 {
			first = fmt.Sprintf("%.2f ticks", float64(s.FirstOK)/float64(sc.Tick))
		}
		rows = append(rows, []string{s.Name, strconv.Itoa(s.RequestsDown), strconv.Itoa(s.Requests),
			fmtSeconds(s.TotalWall), fmtMs(s.Slowest), rec, first,
			fmt.Sprintf("%d / %d / %d", s.Succeeded, s.Skipped, s.Failed)})
	}
	b.WriteString(mdTable([]string{"contender", "requests while down", "requests in all", "total job wall time",
		"slowest job", "ticks after recovery until every job succeeds", "first request after recovery", "jobs ok / skipped / failed"}, "lrrrrrrr", rows))
	b.WriteString("\nWhere the job time goes: mean time of a job by outcome (and the total of each).\n\n")
	rows = rows[:0]
	for _, s := range sums {
		rows = append(rows, []string{s.Name, meanOf(s.OKWall, s.Succeeded), meanOf(s.SkipWall, s.Skipped), meanOf(s.FailWall, s.Failed)})
	}
	b.WriteString(mdTable([]string{"contender", "succeeded", "skipped", "failed"}, "lrrr", rows))
	for _, m := range missing {
		b.WriteString("\n" + m + "\n")
	}

	b.WriteString("\n![requests per tick](bench-storm.svg)\n")
	return b.String()
}

// stormFigures are the targets (against classic bash; one open_max is the
// recovery's bound) and every contender's requests, job time and recovery,
// which the prose quotes.
func stormFigures(cfg stormConfig, sums []stormSummary) []figure {
	sc := cfg.Scale
	var figs []figure
	for _, s := range sums {
		rec := inf
		if s.RecoveryTicks >= 0 {
			rec = float64(s.RecoveryTicks)
		}
		figs = append(figs,
			figure{Key: s.Name + "/down", Value: float64(s.RequestsDown), Format: fmtCount},
			figure{Key: s.Name + "/wall", Value: float64(s.TotalWall), Format: fmtSecs},
			figure{Key: s.Name + "/recovery", Value: rec, Format: fmtTicks})
	}
	bash, ok := find(sums, "classic bash")
	if !ok {
		return figs
	}
	openMax := sc.Of(fusebox.Policy{}.WithDefaults().Breaker.OpenMax)
	limit := int(openMax / sc.Tick)
	for _, s := range sums {
		if !strings.HasPrefix(s.Name, "fusebox") || s.Diagnostic {
			continue
		}
		fewer := ratio(float64(bash.RequestsDown), float64(s.RequestsDown))
		if s.RequestsDown == 0 && bash.RequestsDown > 0 {
			fewer = inf
		}
		rec := inf
		if s.RecoveryTicks >= 0 {
			rec = float64(s.RecoveryTicks)
		}
		figs = append(figs,
			figure{Key: s.Name + "/fewer", Contender: s.Name, Label: "≥5x fewer requests to the dead upstream than classic bash",
				Value: fewer, Format: fmtRatio, Met: atLeast(5)},
			figure{Key: s.Name + "/faster", Contender: s.Name, Label: "≥3x lower total job wall time than classic bash",
				Value: ratio(float64(bash.TotalWall), float64(s.TotalWall)), Format: fmtRatio, Met: atLeast(3)},
			figure{Key: s.Name + "/recovered", Contender: s.Name, Label: "every job succeeds again within one open_max (" + strconv.Itoa(limit) + " ticks)",
				Value: rec, Format: fmtTicks, Met: atMost(float64(limit))})
	}
	if h, ok := find(sums, "fusebox call + serve health checks"); ok {
		interval := healthInterval(sc)
		first := inf
		if h.FirstOK >= 0 {
			first = float64(h.FirstOK) / float64(sc.Tick)
		}
		figs = append(figs, figure{Key: h.Name + "/probed", Contender: h.Name,
			Label:  fmt.Sprintf("the circuit is probed within one health interval (%.2f ticks) of the upstream's return", float64(interval)/float64(sc.Tick)),
			Value:  first,
			Format: func(v float64) string { return fmtTicks(math.Round(v*100) / 100) },
			Met:    atMost(float64(interval) / float64(sc.Tick))})
	}
	return figs
}

// stormProse is what the storm's rounds show, in figures of its own.
func stormProse(s summary) string {
	var b strings.Builder
	fmt.Fprintf(&b, "While the upstream was down, classic bash sent it %s requests, `fusebox run` %s and `fusebox call` %s; "+
		"with `serve`'s health checks beside the jobs it received %s. ",
		s.get("classic bash/down"), s.get("fusebox run/down"), s.get("fusebox call/down"), s.get("fusebox call + serve health checks/down"))
	fmt.Fprintf(&b, "The jobs took %s in all with classic bash, %s with `fusebox run`, %s with `fusebox call` and %s with the health checks. ",
		s.get("classic bash/wall"), s.get("fusebox run/wall"), s.get("fusebox call/wall"), s.get("fusebox call + serve health checks/wall"))
	fmt.Fprintf(&b, "After the upstream's return every job succeeded again after %s with classic bash, %s with `fusebox run`, %s with `fusebox call` "+
		"and %s with the health checks.",
		s.get("classic bash/recovery"), s.get("fusebox run/recovery"), s.get("fusebox call/recovery"), s.get("fusebox call + serve health checks/recovery"))
	if s.has("curl --retry 2/down") {
		fmt.Fprintf(&b, " `curl --retry 2` sent %s requests while the upstream was down.", s.get("curl --retry 2/down"))
	}
	return b.String()
}

func find(sums []stormSummary, name string) (stormSummary, bool) {
	for _, s := range sums {
		if s.Name == name {
			return s, true
		}
	}
	return stormSummary{}, false
}

// meanOf prints total/n as a mean, with the total.
func meanOf(total time.Duration, n int) string {
	if n == 0 {
		return "–"
	}
	return fmt.Sprintf("%s (%s)", fmtMs(total/time.Duration(n)), fmtSeconds(total))
}

func fmtSeconds(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }
