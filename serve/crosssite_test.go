package serve_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
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

	ctx := newBrowser(t)
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

// newBrowser starts a headless Chromium for the test, with opts, or skips
// it loudly when there is none; it is stopped when the test ends. Two
// minutes is a safety net: each page sets its title when its requests end.
func newBrowser(t *testing.T, opts ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	const chromium = "/usr/bin/chromium"
	if _, err := os.Stat(chromium); err != nil {
		testenv.Skip(t, "no Chromium at %s (apt-get install chromium): %v", chromium, err)
	}
	opts = append([]chromedp.ExecAllocatorOption{chromedp.ExecPath(chromium),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("no-first-run", true), chromedp.Flag("disable-background-networking", true)}, opts...)
	actx, stopAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, stop := chromedp.NewContext(actx)
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(func() { cancel(); stop(); stopAlloc() })
	return ctx
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

// tap is a TCP proxy in front of the daemon that keeps every byte callers
// send, to show what reached the daemon (and so that a refusal was the
// daemon's, not the browser's).
type tap struct {
	lns  []net.Listener // on 127.0.0.1 and the other addresses asked for, one port
	port string
	mu   sync.Mutex
	sent bytes.Buffer
}

// newTap listens on 127.0.0.1 and on each of also, at one port.
func newTap(t *testing.T, also ...string) *tap {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	tp := &tap{lns: []net.Listener{ln}, port: port}
	for _, host := range also {
		ln, err := net.Listen("tcp", net.JoinHostPort(host, port))
		if err != nil {
			tp.close()
			t.Fatalf("the tap on %s as on 127.0.0.1: %v", host, err)
		}
		tp.lns = append(tp.lns, ln)
	}
	return tp
}

func (tp *tap) close() {
	for _, ln := range tp.lns {
		ln.Close()
	}
}

// forward passes every connection on to to until the test ends.
func (tp *tap) forward(t *testing.T, to string) {
	var wg sync.WaitGroup
	t.Cleanup(func() { tp.close(); wg.Wait() })
	for _, ln := range tp.lns {
		wg.Go(func() { tp.accept(ln, to, &wg) })
	}
}

// accept passes each connection ln takes on to to, keeping what its
// caller sends.
func (tp *tap) accept(ln net.Listener, to string, wg *sync.WaitGroup) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		wg.Go(func() {
			defer c.Close()
			up, err := net.Dial("tcp", to)
			if err != nil {
				return
			}
			defer up.Close()
			wg.Go(func() { io.Copy(c, up); c.Close() })
			buf := make([]byte, 4096)
			for {
				n, err := c.Read(buf)
				if n > 0 {
					tp.mu.Lock()
					tp.sent.Write(buf[:n])
					tp.mu.Unlock()
					up.Write(buf[:n])
				}
				if err != nil {
					return
				}
			}
		})
	}
}

func (tp *tap) saw(s string) bool {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return strings.Contains(tp.sent.String(), s)
}

// Reached under a name or an IP that is not potentially trustworthy
// (http://fusebox.lan, http://192.168.1.5), Chromium sends neither
// Sec-Fetch-Site nor Origin with a page's <img>, <script>, <iframe> or
// no-cors fetch: each reaches the daemon like any caller's GET, and none
// may make it call out with the config's credentials. Under 127.0.0.1 the
// same requests say where they come from. Callers that are no browser, and a browser's that carries
// X-Fusebox-Wait, are answered as before.
func TestABrowserPageCannotMakeTheDaemonCallOutUnderAnyName(t *testing.T) {
	var hits atomic.Int64
	up := newRawUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Set-Cookie", "session=upstream; Path=/")
		w.Header().Set("Clear-Site-Data", `"*"`)
		w.Write([]byte(`{"temp":7}`))
	})
	ip := addressOffLoopback(t)
	tp := newTap(t, ip)
	passQuery := func(e *httpcall.Endpoint) { e.PassQuery = true } // each request is told by its ?via=
	d := start(t, serve.Targets{Endpoints: []*httpcall.Endpoint{endpoint("u", up, passQuery)}},
		serve.Options{Hosts: []string{"fusebox.lan:" + tp.port, "127.0.0.1:" + tp.port, net.JoinHostPort(ip, tp.port)}})
	tp.forward(t, d.addr)
	page := newRawUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		target, tag := r.URL.Query().Get("target"), r.URL.Query().Get("tag")
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<!doctype html><title>waiting</title><body><script>
let left = 4; const done = () => { if (--left == 0) document.title = "done" };
const img = new Image(); img.onload = img.onerror = done; img.src = "%[1]s/call/u?via=img-%[2]s";
const s = document.createElement("script"); s.onload = s.onerror = done; s.src = "%[1]s/call/u?via=script-%[2]s"; document.body.append(s);
const f = document.createElement("iframe"); f.onload = f.onerror = done; f.src = "%[1]s/call/u?via=iframe-%[2]s"; document.body.append(f);
fetch("%[1]s/call/u?via=fetch-%[2]s", {mode: "no-cors"}).finally(done);
</script>`, target, tag)
	})
	_, pport, _ := strings.Cut(strings.TrimPrefix(page, "http://"), ":")

	ctx := newBrowser(t, chromedp.Flag("host-resolver-rules", "MAP fusebox.lan 127.0.0.1, MAP evil.example 127.0.0.1"))
	for _, tc := range []struct{ tag, target string }{
		{"loopback", "http://127.0.0.1:" + tp.port},
		{"lan", "http://fusebox.lan:" + tp.port},
		{"ip", "http://" + net.JoinHostPort(ip, tp.port)},
	} {
		from := "http://evil.example:" + pport + "/?tag=" + tc.tag + "&target=" + url.QueryEscape(tc.target)
		if title, err := fetchedTitle(ctx, from); err != nil || title != "done" {
			t.Fatalf("%s: the page at %s: %q, %v (Chromium did not finish its requests)", tc.tag, from, title, err)
		}
		for _, via := range []string{"img", "script", "iframe", "fetch"} {
			if !tp.saw("GET /call/u?via=" + via + "-" + tc.tag + " ") {
				t.Errorf("%s: the page's %s request never reached the daemon, so this shows nothing", tc.tag, via)
			}
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the pages' requests reached the upstream %d times; want each refused before the call", n)
	}

	// A caller that is no browser, and a browser's with X-Fusebox-Wait.
	for _, ua := range []string{"HomeAssistant/2025.11 aiohttp/3.12", "Mozilla/5.0 (X11; Linux x86_64) Chrome/142"} {
		r := d.get(t, "/call/u", func(req *http.Request) {
			req.Header.Set("User-Agent", ua)
			if strings.HasPrefix(ua, "Mozilla") {
				req.Header.Set(serve.HeaderWait, "10")
			}
		})
		if r.code != 200 || r.body != `{"temp":7}` {
			t.Errorf("%s: %d %s", ua, r.code, r.body)
		}
		// What would act on the daemon's origin is not passed on.
		if r.header.Get("Set-Cookie") != "" || r.header.Get("Clear-Site-Data") != "" ||
			r.header.Get("X-Content-Type-Options") != "nosniff" || !strings.Contains(r.header.Get("Content-Security-Policy"), "sandbox") {
			t.Errorf("%s: headers %v: want no Set-Cookie or Clear-Site-Data, nosniff and a sandboxing CSP", ua, r.header)
		}
	}
	if r := d.get(t, "/call/u", func(req *http.Request) { req.Header.Set("User-Agent", "Mozilla/5.0 Firefox/140") }); r.code != http.StatusForbidden || !strings.Contains(r.body, "X-Fusebox-Wait") {
		t.Errorf("a browser's GET without X-Fusebox-Wait: %d %s; want a 403 naming the header", r.code, r.body)
	}
}

// addressOffLoopback is an address of this machine's that is not loopback
// (nor link-local), as a LAN's clients reach a daemon by its IP; it skips
// the test loudly when the machine has none.
func addressOffLoopback(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String()
		}
	}
	testenv.Skip(t, "no IPv4 address off loopback (%v): the daemon reached by an IP is not shown", addrs)
	return ""
}
