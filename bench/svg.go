package main

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
)

// The charts are hand-written SVG: a line chart and a horizontal bar chart are
// all the report needs, and no plotting dependency is worth carrying for them.

// palette is the Okabe–Ito set, told apart by colour-blind readers too.
var palette = []string{"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000"}

const (
	chartWidth   = 760
	chartHeight  = 400
	marginLeft   = 70
	marginRight  = 190 // the legend
	marginTop    = 44
	marginBottom = 52
	fontFamily   = "system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif"
)

// Point is one (x, y) sample of a series.
type Point struct{ X, Y float64 }

// Series is one named line of a LineChart.
type Series struct {
	Name   string
	Points []Point
}

// Band shades the x range [From, To) of a chart, with a label at its top.
type Band struct {
	From, To float64
	Label    string
}

// LineChart is a chart of series over a shared x axis. y starts at zero, or
// is logarithmic with YLog (points with y <= 0 are then left out).
type LineChart struct {
	Title, XLabel, YLabel string
	Series                []Series
	Band                  *Band
	YLog                  bool
}

// WriteSVG writes the chart as a standalone SVG document.
func (c LineChart) WriteSVG(w io.Writer) error {
	xlo, xhi, ylo, yhi := math.Inf(1), math.Inf(-1), math.Inf(1), 0.0
	for _, s := range c.Series {
		for _, p := range s.Points {
			xlo, xhi, yhi = math.Min(xlo, p.X), math.Max(xhi, p.X), math.Max(yhi, p.Y)
			if p.Y > 0 {
				ylo = math.Min(ylo, p.Y)
			}
		}
	}
	if c.Band != nil {
		xlo, xhi = math.Min(xlo, c.Band.From), math.Max(xhi, c.Band.To)
	}
	if math.IsInf(xlo, 1) { // no points at all
		xlo, xhi = 0, 1
	}
	if xhi == xlo {
		xhi = xlo + 1
	}
	xticks := niceTicks(xlo, xhi, 8)
	xlo, xhi = math.Min(xlo, xticks[0]), math.Max(xhi, xticks[len(xticks)-1])
	pw, ph := float64(chartWidth-marginLeft-marginRight), float64(chartHeight-marginTop-marginBottom)
	sx := func(x float64) float64 { return marginLeft + (x-xlo)/(xhi-xlo)*pw }

	yticks := niceTicks(0, yhi, 5)
	ytop := yticks[len(yticks)-1]
	sy := func(y float64) float64 { return marginTop + ph - y/ytop*ph }
	if c.YLog {
		yticks = decadeTicks(ylo, yhi)
		lo, hi := math.Log10(yticks[0]), math.Log10(yticks[len(yticks)-1])
		sy = func(y float64) float64 { return marginTop + ph - (math.Log10(y)-lo)/(hi-lo)*ph }
	}
	plotted := func(p Point) bool { return !c.YLog || p.Y > 0 }

	var b svgBuilder
	b.open(chartWidth, chartHeight, c.Title)
	if c.Band != nil {
		x0, x1 := sx(c.Band.From), sx(c.Band.To)
		b.printf(`<rect x="%.1f" y="%d" width="%.1f" height="%.1f" fill="#f4d6d6"/>`, x0, marginTop, x1-x0, ph)
		b.text(x0+4, marginTop+14, "start", "11", "#8a3030", c.Band.Label)
	}
	for _, t := range yticks {
		y := sy(t)
		b.printf(`<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`, marginLeft, y, marginLeft+pw, y)
		label := fmtTick(t, yticks)
		if c.YLog {
			label = fmtTick(t, nil)
		}
		b.text(marginLeft-6, y+4, "end", "11", "#333", label)
	}
	for _, t := range xticks {
		x := sx(t)
		b.printf(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#999"/>`, x, marginTop+ph, x, marginTop+ph+4)
		b.text(x, marginTop+ph+17, "middle", "11", "#333", fmtTick(t, xticks))
	}
	b.printf(`<rect x="%d" y="%d" width="%.1f" height="%.1f" fill="none" stroke="#999"/>`, marginLeft, marginTop, pw, ph)
	b.text(marginLeft+pw/2, chartHeight-12, "middle", "12", "#333", c.XLabel)
	b.printf(`<text transform="translate(16 %.1f) rotate(-90)" text-anchor="middle" font-size="12" fill="#333">%s</text>`,
		marginTop+ph/2, esc(c.YLabel))

	for i, s := range c.Series {
		color := palette[i%len(palette)]
		var pts []string
		for _, p := range s.Points {
			if plotted(p) {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", sx(p.X), sy(p.Y)))
			}
		}
		if len(pts) > 0 {
			b.printf(`<polyline fill="none" stroke="%s" stroke-width="2" stroke-linejoin="round" points="%s"/>`, color, strings.Join(pts, " "))
			for _, pt := range pts {
				x, y, _ := strings.Cut(pt, ",")
				b.printf(`<circle cx="%s" cy="%s" r="2.5" fill="%s"/>`, x, y, color)
			}
		}
		ly := float64(marginTop + 14 + 20*i)
		lx := float64(chartWidth - marginRight + 14)
		b.printf(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="3"/>`, lx, ly-4, lx+18, ly-4, color)
		b.text(lx+24, ly, "start", "12", "#222", s.Name)
	}
	return b.close(w)
}

// Bar is one bar of a BarChart; Whisker, when above Value, is drawn as a thin
// line reaching to it (a p99 next to a median, say).
type Bar struct {
	Label   string
	Value   float64
	Whisker float64
}

// BarChart is a horizontal bar chart: one labelled bar a row.
type BarChart struct {
	Title, Unit string
	Note        string // under the bars: what the bar and the whisker are
	Bars        []Bar
}

// WriteSVG writes the chart as a standalone SVG document.
func (c BarChart) WriteSVG(w io.Writer) error {
	const left, right, row = 290, 40, 30
	height := marginTop + row*len(c.Bars) + 56
	hi := 0.0
	for _, bar := range c.Bars {
		hi = math.Max(hi, math.Max(bar.Value, bar.Whisker))
	}
	ticks := niceTicks(0, hi, 6)
	top := ticks[len(ticks)-1]
	pw := float64(chartWidth - left - right)
	sx := func(v float64) float64 { return left + v/top*pw }
	bottom := float64(marginTop + row*len(c.Bars))

	var b svgBuilder
	b.open(chartWidth, height, c.Title)
	for _, t := range ticks {
		x := sx(t)
		b.printf(`<line x1="%.1f" y1="%d" x2="%.1f" y2="%.1f" stroke="#ddd"/>`, x, marginTop, x, bottom)
		b.text(x, bottom+16, "middle", "11", "#333", fmtTick(t, ticks))
	}
	b.text(left+pw/2, bottom+36, "middle", "12", "#333", c.Unit)
	if c.Note != "" {
		b.text(left+pw/2, bottom+52, "middle", "11", "#666", c.Note)
	}
	for i, bar := range c.Bars {
		y := float64(marginTop + row*i)
		color := palette[i%len(palette)]
		b.text(left-8, y+row/2+4, "end", "12", "#222", bar.Label)
		b.printf(`<rect x="%d" y="%.1f" width="%.1f" height="%d" fill="%s"/>`, left, y+6, sx(bar.Value)-left, row-12, color)
		if bar.Whisker > bar.Value {
			b.printf(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#333"/>`, sx(bar.Value), y+row/2, sx(bar.Whisker), y+row/2)
			b.printf(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#333"/>`, sx(bar.Whisker), y+10, sx(bar.Whisker), y+row-10)
		}
		b.text(math.Max(sx(bar.Value), sx(bar.Whisker))+6, y+row/2+4, "start", "11", "#333", fmtTick(bar.Value, nil))
	}
	return b.close(w)
}

// svgBuilder collects an SVG document; writing to a bytes.Buffer cannot fail,
// so only close reports an error.
type svgBuilder struct{ buf bytes.Buffer }

func (b *svgBuilder) open(w, h int, title string) {
	b.printf(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="%s">`, w, h, w, h, fontFamily)
	b.printf(`<title>%s</title>`, esc(title))
	b.printf(`<rect width="100%%" height="100%%" fill="#fff"/>`)
	b.text(float64(w)/2, 24, "middle", "15", "#111", title)
}

func (b *svgBuilder) printf(format string, args ...any) {
	fmt.Fprintf(&b.buf, format, args...)
	b.buf.WriteByte('\n')
}

func (b *svgBuilder) text(x, y float64, anchor, size, color, s string) {
	b.printf(`<text x="%.1f" y="%.1f" text-anchor="%s" font-size="%s" fill="%s">%s</text>`, x, y, anchor, size, color, esc(s))
}

func (b *svgBuilder) close(w io.Writer) error {
	b.printf("</svg>")
	_, err := w.Write(b.buf.Bytes())
	return err
}

func esc(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s)) // a strings.Builder never fails
	return b.String()
}

// niceTicks returns about n evenly spaced round values (steps of 1, 2 or 5
// times a power of ten) covering [lo, hi].
func niceTicks(lo, hi float64, n int) []float64 {
	if !(hi > lo) {
		hi = lo + 1
	}
	step := niceStep((hi - lo) / float64(n))
	first := math.Floor(lo/step) * step
	var ticks []float64
	for t := first; t < hi+step/2; t += step {
		ticks = append(ticks, roundTo(t, step))
		if len(ticks) > 4*n { // float drift guard; cannot happen with a nice step
			break
		}
	}
	if ticks[len(ticks)-1] < hi {
		ticks = append(ticks, roundTo(ticks[len(ticks)-1]+step, step))
	}
	return ticks
}

// decadeTicks returns the powers of ten from the one at or below lo to the
// one at or above hi: the ticks of a logarithmic axis.
func decadeTicks(lo, hi float64) []float64 {
	if !(lo > 0) || math.IsInf(lo, 1) {
		lo = 1
	}
	hi = math.Max(hi, lo)
	var ticks []float64
	for e := math.Floor(math.Log10(lo)); ; e++ {
		ticks = append(ticks, math.Pow(10, e))
		if math.Pow(10, e) >= hi && len(ticks) > 1 {
			return ticks
		}
	}
}

func niceStep(raw float64) float64 {
	exp := math.Pow(10, math.Floor(math.Log10(raw)))
	switch f := raw / exp; {
	case f <= 1:
		return exp
	case f <= 2:
		return 2 * exp
	case f <= 5:
		return 5 * exp
	}
	return 10 * exp
}

// roundTo rounds v to a multiple of step, printed and parsed back so that
// 3*0.2 is 0.6 and not 0.6000000000000001.
func roundTo(v, step float64) float64 {
	decimals := max(0, int(-math.Floor(math.Log10(step))))
	r, _ := strconv.ParseFloat(strconv.FormatFloat(math.Round(v/step)*step, 'f', decimals, 64), 64)
	return r
}

// fmtTick prints v with no more decimals than the tick spacing needs (or
// three significant digits when ticks is nil).
func fmtTick(v float64, ticks []float64) string {
	if len(ticks) < 2 {
		switch {
		case v >= 100 || v == math.Trunc(v):
			return strconv.FormatFloat(v, 'f', 0, 64)
		case v >= 10:
			return strconv.FormatFloat(v, 'f', 1, 64)
		}
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	step := ticks[1] - ticks[0]
	decimals := max(0, int(-math.Floor(math.Log10(step)+1e-9)))
	return strconv.FormatFloat(v, 'f', decimals, 64)
}

// writeChart writes c to path.
func writeChart(path string, c interface{ WriteSVG(w io.Writer) error }) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write chart: %w", err)
	}
	if err := c.WriteSVG(f); err != nil {
		f.Close()
		return fmt.Errorf("write chart %s: %w", path, err)
	}
	return f.Close()
}
