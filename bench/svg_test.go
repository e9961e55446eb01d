package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
)

// wellFormed parses doc as XML and returns its elements' names.
func wellFormed(t *testing.T, doc []byte) []string {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(doc))
	var names []string
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return names
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, doc)
		}
		if se, ok := tok.(xml.StartElement); ok {
			names = append(names, se.Name.Local)
		}
	}
}

func count(names []string, name string) int {
	n := 0
	for _, s := range names {
		if s == name {
			n++
		}
	}
	return n
}

func TestLineChartDrawsOneLineASeries(t *testing.T) {
	c := LineChart{
		Title: "requests <per> tick & more", XLabel: "tick", YLabel: "requests",
		Band: &Band{From: 0, To: 20, Label: "down"},
		Series: []Series{
			{Name: "classic bash", Points: []Point{{0, 18}, {1, 0}, {2, 18}}},
			{Name: `curl "--retry 2"`, Points: []Point{{0, 18}, {1, 18}, {2, 18}}},
			{Name: "no points"},
		},
	}
	var buf bytes.Buffer
	if err := c.WriteSVG(&buf); err != nil {
		t.Fatal(err)
	}
	names := wellFormed(t, buf.Bytes())
	if names[0] != "svg" {
		t.Errorf("root element %s, want svg", names[0])
	}
	if got := count(names, "polyline"); got != 2 {
		t.Errorf("%d polylines, want 2 (a series without points draws none)", got)
	}
	out := buf.String()
	for _, want := range []string{"requests &lt;per&gt; tick &amp; more", "classic bash", "curl &#34;--retry 2&#34;", "down"} {
		if !strings.Contains(out, want) {
			t.Errorf("chart lacks %q", want)
		}
	}
	if strings.Contains(out, "NaN") || strings.Contains(out, "Inf") {
		t.Errorf("chart has a NaN or Inf coordinate:\n%s", out)
	}
}

func TestLineChartLogScaleSkipsNonPositivePoints(t *testing.T) {
	c := LineChart{YLog: true, Series: []Series{{Name: "s", Points: []Point{{1, 0}, {2, 20}, {3, 4000}}}}}
	var buf bytes.Buffer
	if err := c.WriteSVG(&buf); err != nil {
		t.Fatal(err)
	}
	names := wellFormed(t, buf.Bytes())
	if got := count(names, "circle"); got != 2 {
		t.Errorf("%d points drawn, want 2", got)
	}
	for _, tick := range []string{">10<", ">100<", ">1000<", ">10000<"} {
		if !strings.Contains(buf.String(), tick) {
			t.Errorf("log axis lacks tick %s", tick)
		}
	}
}

func TestEmptyChartsAreStillValid(t *testing.T) {
	for name, c := range map[string]interface{ WriteSVG(io.Writer) error }{
		"line": LineChart{Title: "empty"},
		"bar":  BarChart{Title: "empty"},
		"zero": BarChart{Bars: []Bar{{Label: "none", Value: 0}}},
	} {
		var buf bytes.Buffer
		if err := c.WriteSVG(&buf); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		wellFormed(t, buf.Bytes())
		if strings.Contains(buf.String(), "NaN") {
			t.Errorf("%s: NaN in chart", name)
		}
	}
}

func TestBarChartDrawsWhiskersOnlyAboveTheBar(t *testing.T) {
	c := BarChart{Title: "latency", Unit: "ms", Bars: []Bar{
		{Label: "hello", Value: 1.2, Whisker: 1.7},
		{Label: "no whisker", Value: 2},
	}}
	var buf bytes.Buffer
	if err := c.WriteSVG(&buf); err != nil {
		t.Fatal(err)
	}
	names := wellFormed(t, buf.Bytes())
	if got := count(names, "rect"); got != 3 { // the background and two bars
		t.Errorf("%d rects, want 3", got)
	}
}

func TestNiceTicks(t *testing.T) {
	tests := []struct {
		lo, hi float64
		n      int
		want   []float64
	}{
		{0, 18, 5, []float64{0, 5, 10, 15, 20}},
		{0, 29, 8, []float64{0, 5, 10, 15, 20, 25, 30}},
		{0, 0.9, 5, []float64{0, 0.2, 0.4, 0.6, 0.8, 1}},
		{0, 0, 5, []float64{0, 0.2, 0.4, 0.6, 0.8, 1}},
		{1, 100, 8, []float64{0, 20, 40, 60, 80, 100}},
	}
	for _, tt := range tests {
		if got := niceTicks(tt.lo, tt.hi, tt.n); !slices.Equal(got, tt.want) {
			t.Errorf("niceTicks(%g, %g, %d) = %v, want %v", tt.lo, tt.hi, tt.n, got, tt.want)
		}
	}
}
