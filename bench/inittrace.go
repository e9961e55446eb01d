package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Package initialisation: every import's init runs on every cron
// invocation, before main. The fail-fast run is run with
// GODEBUG=inittrace=1, which has the runtime print a line per package.

// fuseboxModule prefixes fusebox's own packages.
const fuseboxModule = "github.com/fusebox-hq/fusebox"

// initTrace is one package's line of GODEBUG=inittrace=1:
// "init net/http @1.2 ms, 0.043 ms clock, 4722 bytes, 49 allocs".
type initTrace struct {
	Pkg    string
	At     time.Duration // since the runtime started
	Clock  time.Duration
	Bytes  int
	Allocs int
}

// parseInitTrace reads the init lines of a process's stderr; other lines
// are skipped.
func parseInitTrace(stderr []byte) []initTrace {
	var out []initTrace
	sc := bufio.NewScanner(bytes.NewReader(stderr))
	for sc.Scan() {
		var it initTrace
		var at, clock float64
		line := strings.ReplaceAll(sc.Text(), ",", "")
		if _, err := fmt.Sscanf(line, "init %s @%f ms %f ms clock %d bytes %d allocs", &it.Pkg, &at, &clock, &it.Bytes, &it.Allocs); err != nil {
			continue
		}
		it.At, it.Clock = msDuration(at), msDuration(clock)
		out = append(out, it)
	}
	return out
}

func msDuration(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }

// initRuns is how many traced runs the table takes the medians of.
func initRuns(latencyRuns int) int { return min(max(latencyRuns/10, 10), 50) }

// initTable runs the fail-fast run of fusebox n times with GODEBUG=inittrace=1 and
// tabulates, per package, the median of its init's clock time: the
// heaviest, and every one of fusebox's own.
func initTable(ctx context.Context, fusebox string, env []string, n int) (string, error) {
	clocks := map[string][]time.Duration{}
	last := map[string]initTrace{}
	var totals, mains []time.Duration
	for range n {
		cmd := exec.CommandContext(ctx, fusebox, "run", "open-circuit", "--", "true")
		cmd.Env = append(slices.Clone(env), "GODEBUG=inittrace=1")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); exitStatus(err) != 75 {
			return "", fmt.Errorf("inittrace: fusebox run: %v\n%s", err, stderr.String())
		}
		traces := parseInitTrace(stderr.Bytes())
		if len(traces) == 0 {
			return "", fmt.Errorf("inittrace: no init lines in\n%s", stderr.String())
		}
		var total time.Duration
		for _, it := range traces {
			clocks[it.Pkg] = append(clocks[it.Pkg], it.Clock)
			last[it.Pkg] = it
			total += it.Clock
		}
		end := traces[len(traces)-1]
		totals = append(totals, total)
		mains = append(mains, end.At+end.Clock)
	}
	type row struct {
		pkg   string
		clock time.Duration
	}
	var rows []row
	for pkg, cs := range clocks {
		rows = append(rows, row{pkg, median(cs)})
	}
	slices.SortFunc(rows, func(a, b row) int {
		if c := b.clock - a.clock; c != 0 {
			return int(c)
		}
		return strings.Compare(a.pkg, b.pkg)
	})
	total := median(totals)
	var table [][]string
	own := time.Duration(0)
	for i, r := range rows {
		mine := strings.HasPrefix(r.pkg, fuseboxModule)
		if mine {
			own += r.clock
		}
		if i >= 15 && !mine {
			continue
		}
		it := last[r.pkg]
		name := "`" + r.pkg + "`"
		if mine {
			name = "**" + name + "**"
		}
		table = append(table, []string{name, fmt.Sprintf("%.3f ms", ms(r.clock)),
			fmt.Sprintf("%.0f%%", 100*ratio(float64(r.clock), float64(total))), strconv.Itoa(it.Bytes), strconv.Itoa(it.Allocs)})
	}
	var b strings.Builder
	fmt.Fprintf(&b, "**Package initialisation** of the fail-fast run (`GODEBUG=inittrace=1`, median of %d runs): "+
		"%d packages, %.2f ms of init in all, main reached %.2f ms after the runtime started; "+
		"fusebox's own packages (bold) %.3f ms. The fifteen heaviest, and all of fusebox's:\n\n",
		n, len(rows), ms(total), ms(median(mains)), ms(own))
	b.WriteString(mdTable([]string{"package", "init (median)", "share of all init", "bytes", "allocs"}, "lrrrr", table))
	return b.String(), nil
}
