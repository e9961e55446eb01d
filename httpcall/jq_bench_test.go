package httpcall

import (
	"context"
	"math/rand/v2"
	"os/exec"
	"slices"
	"testing"
	"time"
)

// weatherBody is an OpenWeather answer, what an extract usually reads.
const weatherBody = `{"coord":{"lon":13.41,"lat":52.52},"weather":[{"id":800,"main":"Clear","description":"clear sky","icon":"01d"}],` +
	`"base":"stations","main":{"temp":21.5,"feels_like":21.1,"temp_min":19.9,"temp_max":22.8,"pressure":1016,"humidity":52},` +
	`"visibility":10000,"wind":{"speed":3.6,"deg":250},"clouds":{"all":0},"dt":1719835200,` +
	`"sys":{"type":2,"id":2011538,"country":"DE","sunrise":1719802027,"sunset":1719862613},"timezone":7200,"id":2950159,"name":"Berlin","cod":200}`

// BenchmarkJQExtract measures what an extract costs now against what it
// cost before jq's memory bound was enforced (in-process under the heap
// watcher, for every program), interleaved in one run so the ratios hold
// on a noisy machine (in a shuffled order each round): an extract with
// small steps (in-process, as before), and one that is not (string
// interpolation: in a child process), beside /bin/true, a process start.
// It reports medians and the ratios now/before, and the child's to true's:
//
//	go test -run '^$' -bench JQExtract -benchtime 200x ./httpcall/
func BenchmarkJQExtract(b *testing.B) {
	if !jqIsolated {
		b.Fatal("the test binary's TestMain calls IsolateJQ")
	}
	body := []byte(weatherBody)
	v, err := decodeJSON(body)
	if err != nil {
		b.Fatal(err)
	}
	small, err := compileJQ(`.main.temp`)
	if err != nil || !small.small {
		b.Fatal(err, small.small)
	}
	child, err := compileJQ(`"\(.main.temp) °C"`)
	if err != nil || child.small {
		b.Fatal(err, child.small)
	}
	ctx := context.Background()
	contenders := []struct {
		name string
		run  func() ([]byte, error)
		want string
	}{
		{"small-before", func() ([]byte, error) { return watched(ctx, small.code, v, true, DefaultMaxBody, jqMemory) }, "21.5"},
		{"small-now", func() ([]byte, error) {
			return evaluate(ctx, &jqInput{body: body, v: v, decoded: true}, small, true, DefaultMaxBody)
		}, "21.5"},
		{"interpolation-before", func() ([]byte, error) { return watched(ctx, child.code, v, true, DefaultMaxBody, jqMemory) }, "21.5 °C"},
		{"interpolation-now", func() ([]byte, error) {
			return evaluate(ctx, &jqInput{body: body, v: v, decoded: true}, child, true, DefaultMaxBody)
		}, "21.5 °C"},
		{"true", func() ([]byte, error) { return nil, exec.Command("/bin/true").Run() }, ""}, // a process start
	}
	times := make([][]time.Duration, len(contenders))
	b.ResetTimer()
	for range b.N {
		for _, k := range rand.Perm(len(contenders)) { // no contender always follows a child's exit
			c := contenders[k]
			start := time.Now()
			out, err := c.run()
			times[k] = append(times[k], time.Since(start))
			if err != nil || string(out) != c.want {
				b.Fatalf("%s: %q, %v; want %q", c.name, out, err, c.want)
			}
		}
	}
	b.StopTimer()
	med := make([]float64, len(contenders))
	for k, c := range contenders {
		slices.Sort(times[k])
		med[k] = float64(times[k][len(times[k])/2].Nanoseconds()) / 1e3
		b.ReportMetric(med[k], c.name+"-median-µs")
	}
	b.ReportMetric(med[1]/med[0], "small-now/before")
	b.ReportMetric(med[3]/med[2], "interpolation-now/before")
	b.ReportMetric(med[3]/med[4], "interpolation-now/true")
	b.ReportMetric(0, "ns/op")
}
