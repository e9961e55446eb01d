package serve

import (
	"bufio"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
)

// The Prometheus text exposition format (version 0.0.4), written by hand:
// client_golang's package init alone costs a millisecond on every fusebox
// process, the fail-fast `fusebox run` of every cron job included, and the
// daemon needs only the writing. The tests parse and lint the output with
// client_golang.

// family is one metric family as it is exposed.
type family struct {
	name, help, typ string // typ: counter, gauge or histogram
	samples         []sample
}

type sample struct {
	suffix string   // "", "_bucket", "_sum", "_count"
	labels []string // name, value, name, value...
	value  float64
}

func (f *family) add(v float64, labels ...string) {
	f.samples = append(f.samples, sample{labels: labels, value: v})
}

// writeFamilies writes fams in name order, each one's samples sorted by
// labels so that scrapes diff cleanly.
func writeFamilies(w io.Writer, fams []*family) error {
	sort.Slice(fams, func(i, j int) bool { return fams[i].name < fams[j].name })
	bw := bufio.NewWriter(w)
	for _, f := range fams {
		if len(f.samples) == 0 {
			continue
		}
		bw.WriteString("# HELP " + f.name + " " + escapeHelp(f.help) + "\n")
		bw.WriteString("# TYPE " + f.name + " " + f.typ + "\n")
		if f.typ != "histogram" {
			sort.SliceStable(f.samples, func(i, j int) bool {
				return strings.Join(f.samples[i].labels, "\x00") < strings.Join(f.samples[j].labels, "\x00")
			})
		}
		for _, s := range f.samples {
			bw.WriteString(f.name + s.suffix)
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

// histogram is a fixed-bucket histogram of one label set.
type histogram struct {
	counts []uint64 // per bucket, not cumulative; the last is +Inf
	sum    float64
	n      uint64
}

func (h *histogram) observe(buckets []float64, v float64) {
	if h.counts == nil {
		h.counts = make([]uint64, len(buckets)+1)
	}
	i := sort.SearchFloat64s(buckets, v) // the first bucket whose bound is >= v
	h.counts[i]++
	h.sum += v
	h.n++
}

// addTo appends h's samples, under labels, to f.
func (h *histogram) addTo(f *family, buckets []float64, labels ...string) {
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
