package main

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// quantile returns the q-quantile (0 < q <= 1) of ds by the nearest-rank
// method: the smallest value at least q of the samples are no larger than.
// ds need not be sorted; it is not modified.
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := int(math.Ceil(q*float64(len(s)))) - 1
	return s[min(max(rank, 0), len(s)-1)]
}

func median(ds []time.Duration) time.Duration { return quantile(ds, 0.5) }
func p99(ds []time.Duration) time.Duration    { return quantile(ds, 0.99) }

var inf = math.Inf(1)

// ratio is a/b, or NaN when b is zero.
func ratio(a, b float64) float64 {
	if b == 0 {
		return math.NaN()
	}
	return a / b
}

// fmtRatio prints a ratio as "4.2x".
func fmtRatio(r float64) string {
	switch {
	case math.IsNaN(r):
		return "n/a"
	case math.IsInf(r, 1):
		return "∞"
	case r >= 100:
		return fmt.Sprintf("%.0fx", r)
	case r >= 10:
		return fmt.Sprintf("%.1fx", r)
	}
	return fmt.Sprintf("%.2fx", r)
}

// fmtMs prints a duration in milliseconds (seconds from 10 s on) with a
// precision a reader takes in at a glance.
func fmtMs(d time.Duration) string {
	ms := float64(d) / float64(time.Millisecond)
	switch {
	case ms >= 10000:
		return fmt.Sprintf("%.1f s", ms/1000)
	case ms >= 100:
		return fmt.Sprintf("%.0f ms", ms)
	case ms >= 10:
		return fmt.Sprintf("%.1f ms", ms)
	}
	return fmt.Sprintf("%.2f ms", ms)
}

// verdict says whether a measured figure met its target.
func verdict(met bool) string {
	if met {
		return "met"
	}
	return "**missed**"
}
