package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The proxy scenario: GETs per second and their latency through `fusebox
// serve` to a local upstream, against the upstream directly, against net/http's
// httputil.ReverseProxy doing the same forwarding (bench/goproxy: the
// baseline, Go's standard server and transport and nothing else) and against
// nginx as a plain reverse proxy (for context), each hammered in turn by the
// same client (a fixed number of keep-alive connections), in interleaved
// rounds so that the machine's noise falls on all alike. Each request has its
// own query parameter, which the endpoint passes on (pass_query), so the
// daemon shares no calls between callers: every request is an upstream
// request, as it is through the proxies.

type proxyTarget struct {
	Name string
	URL  string // without the query
	// Procs returns the processes that serve the target (a proxy's), whose
	// CPU time is measured over each round; nil for the upstream itself.
	Procs func() []int
}

type proxyResult struct {
	Name     string
	Requests int
	Errors   int
	Elapsed  time.Duration
	P50, P99 time.Duration
	CPU      time.Duration // the target's processes' CPU time (user and system); 0 without Procs
}

// cpuPerRequest is the target's CPU time per request, or 0 when unmeasured.
func (r proxyResult) cpuPerRequest() time.Duration {
	if r.Requests == 0 {
		return 0
	}
	return r.CPU / time.Duration(r.Requests)
}

func (r proxyResult) rps() float64 { return float64(r.Requests) / r.Elapsed.Seconds() }

// proxyUpstream is the local upstream every target ends at.
func proxyUpstream() (base string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	body := []byte(`{"temp":21.5,"humidity":60}`)
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	})}
	go srv.Serve(ln)
	return "http://" + ln.Addr().String(), func() { srv.Close() }, nil
}

var serveAddr = regexp.MustCompile(`addr=(127\.0\.0\.1:\d+)`)

// startServe runs `fusebox serve` on a free port with one endpoint, up, at
// base/data, and returns its /call/up URL.
func startServe(ctx context.Context, t *tools, dir, base string) (string, int, func(), error) {
	cfg := fmt.Sprintf("circuits:\n  up:\n    http: {url: %q, pass_query: true}\n", base+"/data")
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(cfg), 0o600); err != nil {
		return "", 0, nil, err
	}
	cmd := exec.CommandContext(ctx, t.fusebox, "serve", "--listen", "127.0.0.1:0")
	cmd.Env = isolatedEnv(dir)
	addr, stop, err := startListener(cmd, "fusebox serve")
	if err != nil {
		return "", 0, nil, err
	}
	return "http://" + addr + "/call/up", cmd.Process.Pid, stop, nil
}

// startGoProxy builds and runs httputil.ReverseProxy (bench/goproxy) in
// front of base/data, and returns its URL.
func startGoProxy(ctx context.Context, t *tools, base string) (string, int, func(), error) {
	bin := filepath.Join(t.work, "goproxy")
	if err := goBuild(ctx, filepath.Dir(filepath.Dir(t.script)), bin, "./goproxy"); err != nil { // the checkout's bench/, as for hello
		return "", 0, nil, err
	}
	cmd := exec.CommandContext(ctx, bin, base+"/data")
	addr, stop, err := startListener(cmd, "goproxy")
	if err != nil {
		return "", 0, nil, err
	}
	return "http://" + addr + "/", cmd.Process.Pid, stop, nil
}

// startListener starts cmd, which says "addr=HOST:PORT" on stderr once it
// listens, and returns that address and how to stop it (SIGTERM, by its PID).
func startListener(cmd *exec.Cmd, what string) (string, func(), error) {
	pipe, err := cmd.StderrPipe()
	if err != nil {
		return "", nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop := func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			if m := serveAddr.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
	}()
	select {
	case addr := <-found:
		return addr, stop, nil
	case <-time.After(30 * time.Second):
		stop()
		return "", nil, fmt.Errorf("%s did not say where it listens", what)
	}
}

const nginxConf = `daemon off;
worker_processes auto;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path %[1]s/tmp-body;
  proxy_temp_path %[1]s/tmp-proxy;
  fastcgi_temp_path %[1]s/tmp-fastcgi;
  uwsgi_temp_path %[1]s/tmp-uwsgi;
  scgi_temp_path %[1]s/tmp-scgi;
  upstream up { server %[2]s; keepalive 64; }
  server {
    listen 127.0.0.1:%[3]d;
    location = /call/up {
      proxy_pass http://up/data;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }
  }
}
`

// startNginx runs Debian's nginx as a plain reverse proxy to base on a free
// loopback port, and returns the URL that maps to base/data.
func startNginx(ctx context.Context, dir, base string) (string, int, func(), error) {
	bin, err := exec.LookPath("nginx")
	if err != nil {
		if _, serr := os.Stat("/usr/sbin/nginx"); serr != nil {
			return "", 0, nil, fmt.Errorf("nginx is not installed (apt-get install nginx-light): %w", err)
		}
		bin = "/usr/sbin/nginx"
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", 0, nil, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	conf := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(conf, fmt.Appendf(nil, nginxConf, dir, strings.TrimPrefix(base, "http://"), port), 0o644); err != nil {
		return "", 0, nil, err
	}
	cmd := exec.CommandContext(ctx, bin, "-p", dir, "-c", conf)
	out, _ := os.Create(filepath.Join(dir, "nginx.out"))
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return "", 0, nil, err
	}
	stop := func() {
		cmd.Process.Signal(syscall.SIGQUIT) // graceful stop of the master we started, by its PID
		cmd.Wait()
		out.Close()
	}
	url := fmt.Sprintf("http://127.0.0.1:%d/call/up", port)
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := http.Get(url + "?n=0")
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return url, cmd.Process.Pid, stop, nil
			}
		}
		if time.Now().After(deadline) {
			stop()
			log, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			return "", 0, nil, fmt.Errorf("nginx did not answer on %s: %v\n%s", url, err, log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// getOK GETs url and reads the whole answer, which must be a 200.
func getOK(client *http.Client, url string) error {
	resp, err := client.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != 200 {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}

// hammer sends GETs to url from conc keep-alive connections for d and
// returns what they measured.
func hammer(ctx context.Context, tg proxyTarget, conc int, d time.Duration) proxyResult {
	name, url := tg.Name, tg.URL
	tr := &http.Transport{MaxIdleConns: conc, MaxIdleConnsPerHost: conc, MaxConnsPerHost: conc, DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	var mu sync.Mutex
	res := proxyResult{Name: name}
	var all []time.Duration
	var wg sync.WaitGroup
	var procs []int
	if tg.Procs != nil {
		procs = tg.Procs()
	}
	cpu0 := cpuTime(procs)
	start := time.Now()
	end := start.Add(d)
	for w := range conc {
		wg.Go(func() {
			var lat []time.Duration
			errs := 0
			for i := 0; time.Now().Before(end) && ctx.Err() == nil; i++ {
				t0 := time.Now()
				if err := getOK(client, url+"?n="+strconv.Itoa(w)+"-"+strconv.Itoa(i)); err != nil {
					errs++
					continue
				}
				lat = append(lat, time.Since(t0))
			}
			mu.Lock()
			all = append(all, lat...)
			res.Errors += errs
			mu.Unlock()
		})
	}
	wg.Wait()
	res.Elapsed = time.Since(start)
	if procs != nil {
		res.CPU = cpuTime(procs) - cpu0
	}
	res.Requests = len(all)
	res.P50, res.P99 = median(all), p99(all)
	res.Elapsed = max(res.Elapsed, time.Millisecond)
	return res
}

// pacedRate is the request rate of the latency measurement: far below what
// any of the paths serves at saturation, so that a request waits for no
// other request and what a proxy adds is its own work, not a queue.
const pacedRate = 500

// paced sends GETs to url from one keep-alive connection, one every
// 1/pacedRate, for d, and returns their latencies. A request that takes
// longer than its slot delays the next one rather than overlapping it.
func paced(ctx context.Context, tg proxyTarget, d time.Duration) ([]time.Duration, int) {
	tr := &http.Transport{MaxIdleConnsPerHost: 1, MaxConnsPerHost: 1, DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	tick := time.NewTicker(time.Second / pacedRate)
	defer tick.Stop()
	var lat []time.Duration
	errs := 0
	end := time.Now().Add(d)
	for i := 0; time.Now().Before(end) && ctx.Err() == nil; i++ {
		<-tick.C
		t0 := time.Now()
		if err := getOK(client, tg.URL+"?p="+strconv.Itoa(i)); err != nil {
			errs++
			continue
		}
		lat = append(lat, time.Since(t0))
	}
	return lat, errs
}

// mergeRounds sums the rounds' counts and takes the median of their
// quantiles.
func mergeRounds(rounds []proxyResult) proxyResult {
	out := proxyResult{Name: rounds[0].Name}
	var p50s, p99s []time.Duration
	for _, r := range rounds {
		out.Requests += r.Requests
		out.Errors += r.Errors
		out.Elapsed += r.Elapsed
		out.CPU += r.CPU
		p50s, p99s = append(p50s, r.P50), append(p99s, r.P99)
	}
	out.P50, out.P99 = median(p50s), median(p99s)
	return out
}

func proxyRound(ctx context.Context, t *tools, per time.Duration, conc int) (roundResult, error) {
	dir, err := newScratch(t.work, "proxy")
	if err != nil {
		return roundResult{}, err
	}
	base, stopUp, err := proxyUpstream()
	if err != nil {
		return roundResult{}, err
	}
	defer stopUp()
	serveURL, servePID, stopServe, err := startServe(ctx, t, dir, base)
	if err != nil {
		return roundResult{}, err
	}
	defer stopServe()
	nginxURL, nginxPID, stopNginx, err := startNginx(ctx, dir, base)
	if err != nil {
		return roundResult{}, err
	}
	defer stopNginx()

	goURL, goPID, stopGo, err := startGoProxy(ctx, t, base)
	if err != nil {
		return roundResult{}, fmt.Errorf("httputil.ReverseProxy: %w", err)
	}
	defer stopGo()
	const (
		direct = iota
		reverse
		fusebox
		nginx
	)
	targets := []proxyTarget{
		direct:  {Name: "upstream directly", URL: base + "/data"},
		reverse: {Name: "httputil.ReverseProxy (baseline)", URL: goURL, Procs: func() []int { return []int{goPID} }},
		fusebox: {Name: "fusebox serve", URL: serveURL, Procs: func() []int { return []int{servePID} }},
		nginx:   {Name: "nginx, plain reverse proxy (context)", URL: nginxURL, Procs: func() []int { return append(childrenOf(nginxPID), nginxPID) }},
	}
	startRSS := rss(servePID, "VmRSS")
	// Many short rounds rather than a few long ones: a spell of the
	// machine's noise (another VM on the host, a burst of other work) then
	// falls on every path alike instead of on whichever ran through it.
	const rounds = 9
	log.Printf("proxy: %d connections, %s per target in %d interleaved rounds", conc, per, rounds)
	for _, tg := range targets { // warm every path: connections, the daemon's state file
		hammer(ctx, tg, conc, per/10)
	}
	got := make([][]proxyResult, len(targets))
	for round := range rounds {
		for k := range targets {
			k := (k + round) % len(targets)
			got[k] = append(got[k], hammer(ctx, targets[k], conc, per/rounds))
		}
	}
	res := make([]proxyResult, len(targets))
	for k := range targets {
		res[k] = mergeRounds(got[k])
		if res[k].Requests == 0 {
			return roundResult{}, fmt.Errorf("%s: no request succeeded (%d errors)", targets[k].Name, res[k].Errors)
		}
	}
	// Latency without load: each path paced at pacedRate from one
	// connection, in interleaved rounds, every latency of a path pooled.
	pacedLat := make([][]time.Duration, len(targets))
	pacedErrs := make([]int, len(targets))
	for round := range rounds {
		for k := range targets {
			k := (k + round) % len(targets)
			lat, errs := paced(ctx, targets[k], per/rounds/2)
			pacedLat[k], pacedErrs[k] = append(pacedLat[k], lat...), pacedErrs[k]+errs
		}
	}
	idleRSS := rss(servePID, "VmRSS") // after the load, the daemon idle again
	var rows [][]string
	for _, r := range res {
		cpu := "—"
		if r.CPU > 0 {
			cpu = fmt.Sprintf("%.0f µs", float64(r.cpuPerRequest())/float64(time.Microsecond))
		}
		rows = append(rows, []string{r.Name, fmt.Sprintf("%.0f", r.rps()), fmtMs(r.P50), fmtMs(r.P99), strconv.Itoa(r.Errors),
			fmtRatio(ratio(r.rps(), res[reverse].rps())), cpu})
	}
	var b strings.Builder
	fmt.Fprintf(&b, "GETs of a 27-byte JSON body from a local Go upstream, %d keep-alive connections, %s per target in %d interleaved rounds (the client, the upstream and the proxies share this machine's cores). Each request has its own query parameter, passed on by `pass_query`, so the daemon coalesces nothing: every request through it is an upstream request, a circuit check and a count in the file store. p50 and p99 are the median over the rounds; a proxy's CPU per request is its processes' user and system time over the rounds (nginx's master and workers) divided by the requests it served.\n\n", conc, per, rounds)
	b.WriteString(mdTable([]string{"path", "requests/s", "p50", "p99", "errors", "throughput / ReverseProxy", "proxy CPU per request"}, "lrrrrrr", rows))
	fmt.Fprintf(&b, "\nWithout load: each path alone, %d requests a second from one keep-alive connection, %s per path in the same %d interleaved rounds, so no request queues behind another and the p99 is what a path's own work and this machine's scheduling add.\n\n", pacedRate, per/2, rounds)
	var pacedRows [][]string
	for k, tg := range targets {
		if len(pacedLat[k]) == 0 {
			return roundResult{}, fmt.Errorf("%s: no paced request succeeded (%d errors)", tg.Name, pacedErrs[k])
		}
		pacedRows = append(pacedRows, []string{tg.Name, strconv.Itoa(len(pacedLat[k])), fmtMs(median(pacedLat[k])), fmtMs(p99(pacedLat[k])),
			fmtMs(p99(pacedLat[k]) - p99(pacedLat[direct])), strconv.Itoa(pacedErrs[k])})
	}
	b.WriteString(mdTable([]string{"path", "requests", "p50", "p99", "p99 added over the upstream", "errors"}, "lrrrrr", pacedRows))
	fmt.Fprintf(&b, "\nMemory: the resident size of each Go process (`VmRSS`, and `VmHWM`, its peak, from /proc) at the end of the run.\n\n")
	b.WriteString(mdTable([]string{"process", "RSS idle at start", "RSS idle after the load", "peak RSS"}, "lrrr", [][]string{
		{"fusebox serve", fmtMB(startRSS), fmtMB(idleRSS), fmtMB(rss(servePID, "VmHWM"))},
		{"httputil.ReverseProxy", "—", fmtMB(rss(goPID, "VmRSS")), fmtMB(rss(goPID, "VmHWM"))},
	}))
	share := ratio(res[fusebox].rps(), res[reverse].rps())
	var shares []float64 // round by round
	for i := range got[fusebox] {
		shares = append(shares, ratio(got[fusebox][i].rps(), got[reverse][i].rps()))
	}
	slices.Sort(shares)
	cpu := ratio(float64(res[fusebox].cpuPerRequest()), float64(res[reverse].cpuPerRequest()))
	pacedAdded := p99(pacedLat[fusebox]) - p99(pacedLat[direct])
	pct := fmtPercent
	return roundResult{Detail: b.String(), Figures: []figure{
		{Key: "share", Label: "`fusebox serve` ≥90% of httputil.ReverseProxy's throughput", Value: share, Format: pct, Met: atLeast(0.9)},
		{Key: "lowest round", Label: fmt.Sprintf("the same, the lowest of its %d short rounds", len(shares)), Value: shares[0], Format: pct, Note: "(no target)"},
		{Key: "cpu", Label: "`fusebox serve`'s CPU per request ≤1.15x httputil.ReverseProxy's", Value: cpu, Format: fmtRatio, Met: atMost(1.15)},
		{Key: "paced added", Label: fmt.Sprintf("`fusebox serve` adds <1 ms p99 over the upstream directly, at %d requests/s", pacedRate),
			Value: float64(pacedAdded), Format: fmtDur, Met: func(v float64) bool { return v < float64(time.Millisecond) }},
		{Key: "idle rss", Label: "`fusebox serve`'s idle RSS ≤15 MB (after the load)", Value: float64(idleRSS), Format: func(v float64) string { return fmtMB(int64(v)) },
			Met: func(v float64) bool { return v > 0 && v <= 15e6 }},
		{Key: "loaded added", Label: fmt.Sprintf("what `fusebox serve` adds to the p99 under full load (%d connections)", conc),
			Value: float64(res[fusebox].P99 - res[direct].P99), Format: fmtDur, Note: "(no target)"},
		{Key: "nginx", Label: "`fusebox serve`'s throughput / nginx's", Value: ratio(res[fusebox].rps(), res[nginx].rps()), Format: pct, Note: "(no target: context)"},
		{Key: "reverse added", Value: float64(p99(pacedLat[reverse]) - p99(pacedLat[direct])), Format: fmtDur},
		{Key: "nginx added", Value: float64(p99(pacedLat[nginx]) - p99(pacedLat[direct])), Format: fmtDur},
		{Key: "start rss", Value: float64(startRSS), Format: func(v float64) string { return fmtMB(int64(v)) }},
	}}, nil
}

// proxyProse is what the proxy rounds show.
func proxyProse(s summary) string {
	return fmt.Sprintf("`fusebox serve` served %s of the ReverseProxy's requests a second and %s of nginx's; "+
		"paced at %d requests a second it added %s to the upstream's p99, where the ReverseProxy added %s and nginx %s. "+
		"Its RSS was %s idle at start and %s idle after the load.",
		s.get("share"), s.get("nginx"), pacedRate, s.get("paced added"), s.get("reverse added"), s.get("nginx added"), s.get("start rss"), s.get("idle rss"))
}

// clockTick is the unit of /proc/PID/stat's CPU times (USER_HZ, 100 on
// Linux).
const clockTick = 10 * time.Millisecond

// cpuTime sums the user and system CPU time of pids so far; a process that
// is gone counts nothing.
func cpuTime(pids []int) time.Duration {
	var total time.Duration
	for _, pid := range pids {
		f, ok := procStat(pid)
		if !ok || len(f) < 13 {
			continue
		}
		utime, _ := strconv.ParseInt(f[11], 10, 64)
		stime, _ := strconv.ParseInt(f[12], 10, 64)
		total += time.Duration(utime+stime) * clockTick
	}
	return total
}

// procStat returns the fields of /proc/PID/stat after the command name: the
// state is field 0, the parent's pid field 1, utime field 11, stime 12.
func procStat(pid int) ([]string, bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return nil, false
	}
	i := strings.LastIndexByte(string(b), ')') // the name may hold spaces and parentheses
	if i < 0 {
		return nil, false
	}
	return strings.Fields(string(b[i+1:])), true
}

// childrenOf lists the processes whose parent is pid (nginx's workers).
func childrenOf(pid int) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if f, ok := procStat(child); ok && len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, child)
		}
	}
	return out
}

// rss returns a field of /proc/PID/status in bytes (VmRSS, VmHWM), or 0.
func rss(pid int, field string) int64 {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			f := strings.Fields(rest) // "12345 kB"
			if len(f) == 2 && f[1] == "kB" {
				kb, _ := strconv.ParseInt(f[0], 10, 64)
				return kb << 10
			}
		}
	}
	return 0
}

func fmtMB(n int64) string {
	if n <= 0 {
		return "—"
	}
	return fmt.Sprintf("%.1f MB", float64(n)/1e6)
}
