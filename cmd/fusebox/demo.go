package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/file"
	"github.com/fusebox-hq/fusebox/httpcall"
	"github.com/fusebox-hq/fusebox/internal/fakeapis"
	"github.com/fusebox-hq/fusebox/status"
)

func newDemoCmd(a *app) *cobra.Command {
	var fast bool
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "A 20-second tour: retries, a trip, skips, a fallback, a stale answer, one probe, recovery",
		Long: `Start a flaky API of fusebox's own on 127.0.0.1 and walk through what
fusebox does with it, printing what happens and why: retries with jitter, the
circuit tripping, instant skips, a fallback answering, a stale answer, a single
probe and recovery. It uses a temporary state dir and no config, and removes
both when it ends. Times are shortened (the circuit opens for 3s, not 30s).`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDemo(cmd.Context(), a.stdout, fast)
		},
	}
	cmd.Flags().BoolVar(&fast, "fast", false, "no pauses for reading between the steps")
	return cmd
}

// demo is one run of the tour.
type demo struct {
	out    io.Writer
	api    *fakeapis.Server // its weather API and backup
	apiURL string
	client *httpcall.Client
	store  fusebox.Admin
	pause  time.Duration
}

func runDemo(ctx context.Context, out io.Writer, fast bool) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("listen on 127.0.0.1: %w", err)
	}
	api := fakeapis.New("", "")
	srv := &http.Server{Handler: api, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()
	apiURL := "http://" + ln.Addr().String()
	dir, err := os.MkdirTemp("", "fusebox-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	logger := slog.New(&demoHandler{w: out})
	store, err := file.Open(dir, file.WithFsync(false), file.WithLogger(logger))
	if err != nil {
		return err
	}
	defer store.Close()

	policy := fusebox.Policy{
		Retry: fusebox.RetryPolicy{Attempts: 4, Backoff: fusebox.Backoff{First: 200 * time.Millisecond, Max: time.Second},
			Timeout: 2 * time.Second, Deadline: 10 * time.Second},
		Breaker: breaker.Policy{TripAfter: 3, OpenFor: 3 * time.Second, OpenMax: 12 * time.Second},
	}.WithDefaults()
	endpoint := func(name, path string) *httpcall.Endpoint {
		return &httpcall.Endpoint{
			Name: name, URL: apiURL + path, Method: "GET", RetryOn: httpcall.DefaultRetryOn(),
			Extract: httpcall.JQSource(".main.temp"), MaxBody: httpcall.DefaultMaxBody, Policy: policy,
		}
	}
	chain := &httpcall.Chain{Name: "weather", Endpoints: []string{"weather-api", "backup-api"}, Stale: time.Hour, Deadline: 15 * time.Second}
	client, err := httpcall.New(store,
		[]*httpcall.Endpoint{endpoint("weather-api", "/weather"), endpoint("backup-api", "/backup")},
		[]*httpcall.Chain{chain}, httpcall.WithLogger(logger))
	if err != nil {
		return err
	}
	defer client.CloseIdleConnections()
	d := &demo{out: out, api: api, apiURL: apiURL, client: client, store: store, pause: 1500 * time.Millisecond}
	if fast {
		d.pause = 0
	}
	return d.tour(ctx, dir)
}

func (d *demo) tour(ctx context.Context, dir string) error {
	d.say("fusebox demo: a flaky weather API of its own at %s, state in %s, no config.\n"+
		"Times are shortened: a circuit opens for 3s (30s by default).\n", d.apiURL, dir)

	d.step("1. Retries with jitter",
		"The API fails twice, then answers. fusebox retries with waits that grow\n"+
			"exponentially and are randomised, so many scripts never retry in lockstep.")
	d.api.FailNext(fakeapis.Weather, 2)
	d.call(ctx, "weather-api")

	d.step("2. A trip",
		"The API goes down (a Zigbee bridge restarting). After 3 failed attempts in a row\n"+
			"the circuit opens, for every script on this host, and this call stops at once\n"+
			"instead of adding to the storm.")
	d.api.Down(fakeapis.Weather)
	d.call(ctx, "weather-api")

	d.step("3. Instant skips",
		"Five more runs, as cron would start them. Each is skipped in well under a\n"+
			"millisecond of work: the API sees no request, the script does not hang.")
	before := d.api.Failures(fakeapis.Weather)
	for range 5 {
		start := time.Now()
		_, err := d.client.Call(ctx, "weather-api", httpcall.CallOptions{})
		took := time.Since(start).Round(10 * time.Microsecond)
		if errors.Is(err, httpcall.ErrAllSkipped) {
			d.say("   skipped in %s: fusebox call would exit 75 (fusebox run too)\n", took)
		} else {
			d.say("   not skipped (%v) in %s\n", err, took)
		}
	}
	d.say("   requests that reached the API: %d\n", d.api.Failures(fakeapis.Weather)-before)

	d.step("4. The fallback answers",
		"The chain 'weather' is weather-api, then backup-api. The primary's circuit is\n"+
			"open, so it is skipped instantly and the backup answers.")
	d.call(ctx, "weather")

	d.step("5. A stale answer",
		"Now the backup is down too. The chain kept its last good answer (stale: 1h)\n"+
			"and serves it, saying so; --no-stale would refuse it and exit 69.")
	d.api.Down(fakeapis.Backup)
	d.call(ctx, "weather")

	d.step("6. A single probe",
		"The weather API's open period ends; the API is back, but slow. Ten callers\n"+
			"arrive at once: exactly one is let through to probe, the other nine skip.")
	d.api.Slow(fakeapis.Weather, 500*time.Millisecond)
	if st, err := d.store.Load(ctx, "weather-api"); err == nil {
		if wait := st.View(fusebox.WallClock{}.Now()).ReopensIn; wait > 0 {
			d.say("   (waiting %s for the open period to end)\n", wait.Round(100*time.Millisecond))
			time.Sleep(wait + 10*time.Millisecond)
		}
	}
	d.probeRace(ctx)

	d.step("7. Recovery",
		"The probe succeeded, so the circuit closed: calls go straight through again.")
	d.api.Up(fakeapis.Weather)
	d.call(ctx, "weather-api")

	d.say("\nWhile the weather API was down it saw %d requests. Six cron scripts with\n"+
		"the classic 3-attempt bash retry loop would have sent 18 a minute, and each\n"+
		"would have hung through every wait.\n", d.api.Failures(fakeapis.Weather))
	d.step("What 'fusebox status' shows now", "")
	rows, err := status.Snapshot(ctx, d.store, nil, status.Catalog{}, nil, fusebox.WallClock{}.Now())
	if err != nil {
		return err
	}
	if err := status.WriteTable(d.out, rows, time.Now()); err != nil {
		return err
	}
	d.say("\nNext: fusebox run --help, fusebox call --help, and the README's weather chain.\n")
	return nil
}

func (d *demo) step(title, why string) {
	time.Sleep(d.pause)
	d.say("\n%s\n", title)
	if why != "" {
		d.say("%s\n", indent(why))
	}
}

func (d *demo) say(format string, args ...any) { fmt.Fprintf(d.out, format, args...) }

// call makes one call and says how it ended.
func (d *demo) call(ctx context.Context, name string) {
	start := time.Now()
	res, err := d.client.Call(ctx, name, httpcall.CallOptions{})
	took := time.Since(start).Round(time.Millisecond)
	switch {
	case err != nil:
		d.say("   → no answer after %d attempt(s) in %s: %v\n", res.Attempts, took, err)
	case res.Source == httpcall.SourceStale:
		d.say("   → answered %s from the stored answer of %s, %s old (source: stale)\n",
			strings.TrimSpace(string(res.Body)), res.Answered, res.Age.Round(100*time.Millisecond))
	default:
		d.say("   → answered %s from %s after %d attempt(s) in %s\n", strings.TrimSpace(string(res.Body)), res.Source, res.Attempts, took)
	}
}

// probeRace starts ten callers at once on the half-open circuit.
func (d *demo) probeRace(ctx context.Context) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	answered, skipped := 0, 0
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := d.client.Call(ctx, "weather-api", httpcall.CallOptions{})
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				answered++
			} else if errors.Is(err, httpcall.ErrAllSkipped) {
				skipped++
			}
		}()
	}
	wg.Wait()
	d.say("   → %d probed and got an answer, %d skipped\n", answered, skipped)
}

func indent(s string) string {
	return "   " + strings.ReplaceAll(s, "\n", "\n   ")
}

// demoHandler prints fusebox's log lines inside the tour, short and without
// timestamps, so a reader sees what a script's stderr would say.
type demoHandler struct {
	mu    sync.Mutex
	w     io.Writer
	attrs []slog.Attr
}

func (h *demoHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }

func (h *demoHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString("   | ")
	b.WriteString(r.Message)
	add := func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	}
	for _, a := range h.attrs {
		add(a)
	}
	r.Attrs(add)
	b.WriteString("\n")
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := io.WriteString(h.w, b.String())
	return err
}

func (h *demoHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &demoHandler{w: h.w, attrs: append(append([]slog.Attr{}, h.attrs...), as...)}
}

func (h *demoHandler) WithGroup(string) slog.Handler { return h }
