package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/fusebox-hq/fusebox/internal/testenv"
	"github.com/fusebox-hq/fusebox/serve"
)

const chromium = "/usr/bin/chromium"

// browser starts a headless Chromium (stopped when the test ends) and
// returns a tab's context, the console errors and the URLs the tab asked for.
func browser(t *testing.T) (ctx context.Context, consoleErrors func() []string, requested func() []string) {
	t.Helper()
	if _, err := os.Stat(chromium); err != nil {
		testenv.Skip(t, "no Chromium at %s (apt-get install chromium): %v", chromium, err)
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromium), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("no-first-run", true), chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1100, 800))
	var mu sync.Mutex
	var errs, urls []string
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithListener(func(ev any) {
		if e, ok := ev.(*network.EventRequestWillBeSent); ok {
			mu.Lock()
			urls = append(urls, e.Request.URL)
			mu.Unlock()
		}
	}))
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.Type == chromedp.ConsoleException {
				mu.Lock()
				errs = append(errs, string(m.Type)+": "+m.Text)
				mu.Unlock()
			}
		}
	}()
	get := func(s *[]string) func() []string {
		return func() []string {
			mu.Lock()
			defer mu.Unlock()
			return append([]string(nil), *s...)
		}
	}
	return ctx, get(&errs), get(&urls)
}

func TestStatusPageInChromium(t *testing.T) {
	t.Parallel() // waits on processes and timers: it runs beside the others
	up := newFlaky(t)
	base := t.TempDir()
	state := filepath.Join(base, "state")
	cfg := writeConfigPath(t, base, `circuits:
  openweather:
    attempts: 1
    trip_after: 1
    open_for: 10m
    http: {url: `+up.URL+`/ow}
  wttr:
    http: {url: `+up.URL+`/wttr}
  zigbee2mqtt:
    attempts: 1
    http: {url: `+up.URL+`/zigbee}
chains:
  weather:
    endpoints: [openweather, wttr]
`)
	d := startServe(t, state, cfg)
	env := []string{"FUSEBOX_CONFIG=" + cfg}
	if p := inprocEnv(t, state, env, "call", "weather"); p.Code != 0 {
		t.Fatalf("call: %d %s", p.Code, p.Stderr)
	}

	ctx, consoleErrors, requested := browser(t)
	page := "http://" + d.Addr + "/"
	if err := chromedp.Do(ctx, chromedp.Navigate(page), chromedp.WaitVisible(`article[data-name="openweather"]`)); err != nil {
		t.Fatalf("loading the status page: %v", err)
	}
	state0, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('article[data-name="openweather"]').dataset.state`))
	if err != nil || state0 != "closed" {
		t.Fatalf("openweather before the trip: %q, %v", state0, err)
	}

	// From the CLI: one endpoint fails and opens, one is tripped by hand.
	// The page shows both at its next refresh.
	up.down.Store(true)
	if p := inprocEnv(t, state, env, "call", "openweather"); p.Code != exitUnavailable {
		t.Fatalf("call on a down upstream: %d %s", p.Code, p.Stderr)
	}
	up.down.Store(false)
	if p := inprocEnv(t, state, env, "trip", "zigbee2mqtt", "--for", "2h"); p.Code != 0 {
		t.Fatal(p.Stderr)
	}
	wait := func(js string) {
		t.Helper()
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if _, err := chromedp.Run(wctx, chromedp.Poll[bool](js, chromedp.WithPollingInterval(50*time.Millisecond))); err != nil {
			t.Fatalf("waiting for %s: %v", js, err)
		}
	}
	wait(`document.querySelector('article[data-name="openweather"]')?.dataset.state === "open"`)
	wait(`document.querySelector('article[data-name="zigbee2mqtt"]')?.dataset.state === "forced_open"`)
	text, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('article[data-name="openweather"]').innerText`))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"open", "open for", "last failure: status 503"} {
		if !strings.Contains(text, want) {
			t.Errorf("the openweather card does not say %q:\n%s", want, text)
		}
	}
	bars, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('article[data-name="openweather"] svg rect.out').length`))
	if err != nil || bars != 1 {
		t.Errorf("openweather's outage chart has %d outage bars (%v), want 1", bars, err)
	}

	// Readable on a phone: nothing wider than the screen.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile)); err != nil {
		t.Fatal(err)
	}
	overflow, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth`))
	if err != nil || overflow {
		t.Errorf("the page is wider than a phone's screen (%v)", err)
	}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1100, 800)); err != nil {
		t.Fatal(err)
	}
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := png.Decode(bytes.NewReader(shot)); err != nil {
		t.Fatalf("the screenshot is no PNG: %v", err)
	}
	if out := os.Getenv("FUSEBOX_STATUS_SCREENSHOT"); out != "" {
		if err := os.WriteFile(out, shot, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	if errs := consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors: %q", errs)
	}
	for _, u := range requested() {
		if !strings.HasPrefix(u, "http://"+d.Addr+"/") && !strings.HasPrefix(u, "data:") {
			t.Errorf("the page asked for %s, outside the daemon", u)
		}
	}
}

// A circuit that flapped more often in a day than the daemon lists
// (serve.MaxOutages) says on its card how many earlier outages its chart
// does not draw, rather than look as if it had only the newest hundred.
func TestStatusPageCountsTheOutagesItDoesNotDraw(t *testing.T) {
	t.Parallel() // waits on processes and timers: it runs beside the others
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	fullEventLogs(t, state, 1, 128<<10) // flapper00: a few hundred outages today
	d := startServe(t, state, writeConfigPath(t, dir, "circuits: {}\n"))
	var timeline serve.Timeline
	if code, _, body := d.Get(t, "/api/outages"); code != 200 || json.Unmarshal([]byte(body), &timeline) != nil || len(timeline.Circuits) != 1 {
		t.Fatalf("/api/outages: %d %.300s", code, body)
	}
	earlier := timeline.Circuits[0].Earlier
	if earlier == 0 {
		t.Fatalf("the log gave %d outages and none earlier: the test needs more than %d", len(timeline.Circuits[0].Outages), serve.MaxOutages)
	}

	ctx, consoleErrors, _ := browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate("http://"+d.Addr+"/"), chromedp.WaitVisible(`article[data-name="flapper00"]`)); err != nil {
		t.Fatalf("loading the status page: %v", err)
	}
	text, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('article[data-name="flapper00"] .earlier')?.innerText ?? "nothing of them"`))
	if want := fmt.Sprintf("%d earlier outages in these 24 hours, not drawn", earlier); err != nil || text != want {
		t.Errorf("the card says %q (%v), want %q", text, err, want)
	}
	bars, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('article[data-name="flapper00"] svg rect.out').length`))
	if err != nil || bars != serve.MaxOutages {
		t.Errorf("the chart draws %d outages (%v), want the %d listed", bars, err, serve.MaxOutages)
	}
	if errs := consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors: %q", errs)
	}
}
