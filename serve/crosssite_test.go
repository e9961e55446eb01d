package serve_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/fusebox-hq/fusebox/httpcall"
	"github.com/fusebox-hq/fusebox/internal/testenv"
	"github.com/fusebox-hq/fusebox/serve"
)

// In a real Chromium, a page served from another loopback port (another
// site, as localhost is to 127.0.0.1, or the same site on another port)
// that fetches /call cannot read the answer, though the upstream grants
// every origin (Access-Control-Allow-Origin: *), and the call is not made.
func TestACrossSitePageCannotReadACall(t *testing.T) {
	const chromium = "/usr/bin/chromium"
	if _, err := os.Stat(chromium); err != nil {
		testenv.Skip(t, "no Chromium at %s (apt-get install chromium): %v", chromium, err)
	}
	var hits atomic.Int64
	up := newRawUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Access-Control-Allow-Origin", "*")
		w.Write([]byte(`{"secret":"the upstream's answer"}`))
	})
	d := start(t, serve.Targets{Endpoints: []*httpcall.Endpoint{endpoint("u", up)}}, serve.Options{})
	page := newRawUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<!doctype html><title>waiting</title><script>
fetch("http://%s/call/u").then(r => r.text()).then(
  t => { document.title = "read: " + t },
  e => { document.title = "failed: " + e })
</script>`, d.addr)
	})
	_, port, _ := strings.Cut(strings.TrimPrefix(page, "http://"), ":")

	actx, stopAlloc := chromedp.NewExecAllocator(context.Background(), chromedp.ExecPath(chromium),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("no-first-run", true), chromedp.Flag("disable-background-networking", true))
	defer stopAlloc()
	ctx, stop := chromedp.NewContext(actx)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute) // a safety net: the page sets its title when the fetch ends
	defer cancel()
	for _, from := range []string{"http://localhost:" + port + "/", "http://127.0.0.1:" + port + "/"} {
		title, err := fetchedTitle(ctx, from)
		if err != nil {
			t.Fatalf("the page at %s: %v (Chromium did not finish its fetch)", from, err)
		}
		if !strings.HasPrefix(title, "failed: ") {
			t.Errorf("the page at %s fetched /call/u: %q; want the fetch to fail", from, title)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the pages' fetches reached the upstream %d times; want them refused before the call", n)
	}
}

// fetchedTitle opens url in a tab of its own and returns the page's title
// once its script has set it. The title is read again while the page is
// still being set up: Chromium may hand a new site's page to another
// renderer mid-navigation, and an evaluation in the one it left fails
// ("Cannot find context with specified id") though nothing is wrong.
func fetchedTitle(browser context.Context, url string) (string, error) {
	tab, closeTab := chromedp.NewContext(browser)
	defer closeTab()
	if _, err := chromedp.Run(tab, chromedp.Navigate(url)); err != nil {
		return "", fmt.Errorf("opening it: %w", err)
	}
	var last error
	for {
		title, err := chromedp.Run(tab, chromedp.Title())
		if err == nil && title != "waiting" && title != "" {
			return title, nil
		}
		if err != nil {
			last = err
		}
		select {
		case <-tab.Done():
			return "", fmt.Errorf("%w, the last read of its title: %v", tab.Err(), last)
		case <-time.After(10 * time.Millisecond):
		}
	}
}
