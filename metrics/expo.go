package metrics

import (
	"bufio"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Family is one metric family as it is exposed. Add is not safe for
// concurrent use; a family built, Write only reads it, so scrapes at once
// may write the same one.
type Family struct {
	Name, Help, Type string // Type: counter, gauge or histogram
	samples          []sample
}

type sample struct {
	suffix string   // "", "_bucket", "_sum", "_count"
	labels []string // name, value, name, value...
	value  float64
}

// New returns an empty family.
func New(name, typ, help string) *Family { return &Family{Name: name, Type: typ, Help: help} }

// Add adds a sample of value v with labels, given as name, value, name,
// value...
func (f *Family) Add(v float64, labels ...string) {
	f.samples = append(f.samples, sample{labels: labels, value: v})
}

// Write writes fams in name order, each one's samples sorted by labels so
// that scrapes diff cleanly; a family without samples is left out. It
// sorts copies: fams and their families are left as they are.
func Write(w io.Writer, fams []*Family) error {
	fams = slices.Clone(fams)
	slices.SortStableFunc(fams, func(a, b *Family) int { return strings.Compare(a.Name, b.Name) })
	bw := bufio.NewWriter(w)
	for _, f := range fams {
		if len(f.samples) == 0 {
			continue
		}
		bw.WriteString("# HELP " + f.Name + " " + escapeHelp(f.Help) + "\n")
		bw.WriteString("# TYPE " + f.Name + " " + f.Type + "\n")
		samples := f.samples
		if f.Type != "histogram" {
			samples = slices.Clone(samples)
			slices.SortStableFunc(samples, func(a, b sample) int {
				return strings.Compare(strings.Join(a.labels, "\x00"), strings.Join(b.labels, "\x00"))
			})
		}
		for _, s := range samples {
			bw.WriteString(f.Name + s.suffix)
			if len(s.labels) > 0 {
				bw.WriteByte('{')
				for i := 0; i+1 < len(s.labels); i += 2 {
					if i > 0 {
						bw.WriteByte(',')
					}
					bw.WriteString(s.labels[i] + `="` + escapeLabel(s.labels[i+1]) + `"`)
				}
				bw.WriteByte('}')
			}
			bw.WriteString(" " + formatFloat(s.value) + "\n")
		}
	}
	return bw.Flush()
}

func formatFloat(v float64) string {
	switch {
	case math.IsInf(v, +1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

var (
	labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
)

func escapeLabel(s string) string { return labelEscaper.Replace(s) }
func escapeHelp(s string) string  { return helpEscaper.Replace(s) }

// Histogram is a fixed-bucket histogram of one label set. It is not safe for
// concurrent use.
type Histogram struct {
	counts []uint64 // per bucket, not cumulative; the last is +Inf
	sum    float64
	n      uint64
}

// Observe counts v in the first of buckets (upper bounds, ascending) that
// holds it, or in +Inf.
func (h *Histogram) Observe(buckets []float64, v float64) {
	if h.counts == nil {
		h.counts = make([]uint64, len(buckets)+1)
	}
	i := sort.SearchFloat64s(buckets, v) // the first bucket whose bound is >= v
	h.counts[i]++
	h.sum += v
	h.n++
}

// AddTo appends h's samples, under labels, to f.
func (h *Histogram) AddTo(f *Family, buckets []float64, labels ...string) {
	var cum uint64
	for i, c := range h.counts {
		cum += c
		le := "+Inf"
		if i < len(buckets) {
			le = formatFloat(buckets[i])
		}
		f.samples = append(f.samples, sample{suffix: "_bucket", labels: append(append([]string{}, labels...), "le", le), value: float64(cum)})
	}
	f.samples = append(f.samples,
		sample{suffix: "_sum", labels: labels, value: h.sum},
		sample{suffix: "_count", labels: labels, value: float64(h.n)})
}
