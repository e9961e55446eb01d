package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/fusebox-hq/fusebox"
)

// stormReport runs every contender through the storm, writes the
// requests-per-tick chart into outDir and returns the report section.
func stormReport(ctx context.Context, t *tools, cfg stormConfig, outDir string) (string, error) {
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
			return "", err
		}
		if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(c.Config), 0o600); err != nil { // ConfigFor replaces it in runStorm
			return "", err
		}
		log.Printf("storm: %s (%d ticks of %s)", c.Name, cfg.Ticks, cfg.Scale.Tick)
		run, err := runStorm(ctx, cfg, c, dir)
		if err != nil {
			return "", err
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
		return "", err
	}
	return stormMarkdown(cfg, sums, missing), nil
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

	bash, ok := find(sums, "classic bash")
	if ok {
		openMax := sc.Of(fusebox.Policy{}.WithDefaults().Breaker.OpenMax)
		limit := int(openMax / sc.Tick)
		b.WriteString("\nTargets (against classic bash; one open_max is " + strconv.Itoa(limit) + " ticks):\n\n")
		var trows [][]string
		for _, s := range sums {
			if !strings.HasPrefix(s.Name, "fusebox") || s.Diagnostic {
				continue
			}
			fewer := ratio(float64(bash.RequestsDown), float64(s.RequestsDown))
			if s.RequestsDown == 0 && bash.RequestsDown > 0 {
				fewer = inf
			}
			faster := ratio(float64(bash.TotalWall), float64(s.TotalWall))
			recovered := s.RecoveryTicks >= 0 && s.RecoveryTicks <= limit
			trows = append(trows,
				[]string{s.Name, "≥5x fewer requests to the dead upstream", fmtRatio(fewer), verdict(fewer >= 5)},
				[]string{s.Name, "≥3x lower total job wall time", fmtRatio(faster), verdict(faster >= 3)},
				[]string{s.Name, "every job succeeds again within one open_max (" + strconv.Itoa(limit) + " ticks)",
					recoveryText(s.RecoveryTicks), verdict(recovered)})
		}
		if h, ok := find(sums, "fusebox call + serve health checks"); ok {
			interval := healthInterval(sc)
			met := h.FirstOK >= 0 && h.FirstOK <= interval
			measured := "no request after recovery"
			if h.FirstOK >= 0 {
				measured = fmt.Sprintf("%.2f ticks", float64(h.FirstOK)/float64(sc.Tick))
			}
			trows = append(trows, []string{h.Name, fmt.Sprintf("the circuit is probed within one health interval (%.2f ticks) of the upstream's return", float64(interval)/float64(sc.Tick)),
				measured, verdict(met)})
		}
		b.WriteString(mdTable([]string{"contender", "target", "measured", "verdict"}, "llrl", trows))
	}
	b.WriteString("\n![requests per tick](bench-storm.svg)\n")
	return b.String()
}

func recoveryText(ticks int) string {
	if ticks < 0 {
		return "not within the run"
	}
	return strconv.Itoa(ticks) + " ticks"
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
