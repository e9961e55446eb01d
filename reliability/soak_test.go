package reliability

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/internal/redistest"
	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// soakVar sets the soak's length (a Go duration). CI runs it at 2m in a
// phase of its own; without it TestSoak runs for soakDefault, and -short
// leaves it out (the phase under stress-ng runs -short).
const (
	soakVar     = "FUSEBOX_SOAK"
	soakDefault = 20 * time.Second
)

// TestSoak puts one daemon (GOMAXPROCS=1, as on a busy Pi) in front of
// everything a hostile peer does at once, for FUSEBOX_SOAK, and checks that
// what it holds stays flat while the caller with the token is answered
// throughout and no notification storm leaves it:
//
//   - an MQTT publisher flapping the watched bridge's state every 5 ms,
//     and another publishing a 30 MB message on it now and then (one of
//     them retained), on a real mosquitto;
//   - its state on a real redis-server that is restarted empty twice,
//     and whose shared epoch another client turns into a list every 10 s;
//   - clients that drip a request body, drip headers, send requests and
//     never read the answers, send a refused request announcing a large
//     body, keep a tokenless page GET's connection alive and idle, send a
//     query of 1,000 parameters, poll /api/outages and /metrics over the
//     flapping's event log, or POST at once to an endpoint with extract:
//     whose upstream answers 10 MB of JSON;
//   - an upstream that hangs and one that resets every connection;
//
// beside a second daemon on a file state dir that watches the same topic,
// whose dir must stay flat too. That one has no token, as a LAN's daemon
// reached as http://fusebox.lan may not: a browser's page GETs its /call
// (no Sec-Fetch-Site, no Origin), and none may reach the upstream; and it
// has MQTT controls, whose trip button is pressed every 100 ms on a
// circuit a person tripped until reset, which must stay so. Meanwhile
// `fusebox run` times out, again and again, a command whose grandchild
// left its group (setsid): none may outlive its run. Each daemon's resident memory,
// descriptors and goroutines (its /metrics) and the state dirs' sizes are
// sampled every second; the last quarter of the run may not hold more than
// the second quarter (after the first quarter's warm-up) plus a slack
// that a leak of one unit per attacker's cycle would exceed.
func TestSoak(t *testing.T) {
	dur := soakDefault
	if v := os.Getenv(soakVar); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 8*time.Second {
			t.Fatalf("$%s=%q: want a duration of at least 8s", soakVar, v)
		}
		dur = d
	} else if testing.Short() {
		t.Skip("-short: the soak runs in its own CI phase (" + soakVar + "=2m)")
	} else {
		testenv.Heavy(t) // or asked for by its length
	}

	broker := testenv.Mosquitto(t)
	rds := redistest.Start(t)

	// Notifications, counted by the daemon they came from.
	var notes [2]atomic.Int64
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, io.LimitReader(r.Body, 1<<20))
		if i, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/hook/")); err == nil && i >= 0 && i < 2 {
			notes[i].Add(1)
		}
	}))
	t.Cleanup(hook.Close)

	up := newSoakUpstream(t)
	dir := t.TempDir()
	token := "soak-token-0123456789"
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const topic = "soak/bridge/state"
	const instance = "soak1"
	config := func(i int) string {
		p := filepath.Join(dir, fmt.Sprintf("config%d.yaml", i))
		controls := "" // the file daemon's trip and reset buttons
		if i == 1 {
			controls = fmt.Sprintf("\n    mqtt: {broker: 'tcp://%s', instance: %s, controls: true}", broker, instance)
		}
		text := fmt.Sprintf(`mqtt: {broker: 'tcp://%s'}
defaults:
  notify:
    after: 0s
    webhooks: [{url: '%s/hook/%d'}]%s
circuits:
  ok:
    http: {url: '%s/ok', timeout: 10s}
  big:
    http: {url: '%s/big', timeout: 10s}
  hang:
    attempts: 1
    http: {url: '%s/hang', timeout: 1s}
  reset:
    attempts: 1
    http: {url: '%s/reset'}
  list:
    attempts: 1
    http: {url: '%s/list', method: POST, extract: '.list | length'}
  secret:
    http: {url: '%s/secret'}
  maint: {}
  bridge:
    health:
      mqtt: {topic: %s, up: '(.state? // .) == "online"'}
`, broker, hook.URL, i, controls, up.URL, up.URL, up.URL, up.URL, up.URL, up.URL, topic)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	local, fileDir, runDir := filepath.Join(dir, "local"), filepath.Join(dir, "state"), filepath.Join(dir, "runs")
	for _, d := range []string{local, fileDir, runDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	start := func(i int, state string, args []string, env ...string) *testenv.Daemon {
		cmd := testenv.FuseboxCmd(fuseboxBin, state, append([]string{"GOMAXPROCS=1", "FUSEBOX_CONFIG=" + config(i)}, env...),
			append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...)
		return testenv.StartDaemon(t, cmd)
	}
	onRedis := start(0, rds.URL(), []string{"--token-file", tokenFile}, "STATE_DIRECTORY="+local)
	// A person's maintenance trip, which the presses below must leave.
	if out, err := fbCmd(fileDir, []string{"FUSEBOX_CONFIG=" + config(1)}, "trip", "maint").CombinedOutput(); err != nil {
		t.Fatalf("trip maint: %v: %s", err, out)
	}
	onFile := start(1, fileDir, nil)

	ctx, cancel := context.WithTimeout(context.Background(), dur)
	defer cancel()
	var wg sync.WaitGroup
	spawn := func(n int, f func(ctx context.Context, i int)) {
		for i := range n {
			wg.Go(func() { f(ctx, i) })
		}
	}

	// The MQTT publishers.
	flapper := testenv.Subscribe(t, broker, "soak/unused").Client
	hugePub := testenv.Subscribe(t, broker, "soak/unused2").Client
	flaps := atomic.Int64{}
	spawn(1, func(ctx context.Context, _ int) {
		pub := flapper
		for i := 0; ctx.Err() == nil; i++ {
			state := "online"
			if i%2 == 1 {
				state = "offline"
			}
			pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
			_, err := pub.Publish(pctx, &paho.Publish{Topic: topic, Payload: []byte(`{"state":"` + state + `"}`), Retain: i%50 == 0})
			pcancel()
			if err == nil {
				flaps.Add(1)
			}
			sleepCtx(ctx, 5*time.Millisecond)
		}
	})
	huge := atomic.Int64{}
	spawn(1, func(ctx context.Context, _ int) {
		pub := hugePub
		payload := []byte(`{"state":"online","junk":"` + strings.Repeat("x", 30<<20) + `"}`)
		for i := 0; ctx.Err() == nil; i++ {
			pctx, pcancel := context.WithTimeout(ctx, 30*time.Second)
			_, err := pub.Publish(pctx, &paho.Publish{Topic: topic, Payload: payload, Retain: i == 0, QoS: 1})
			pcancel()
			if err == nil {
				huge.Add(1)
			}
			sleepCtx(ctx, dur/6)
		}
	})

	// The hostile HTTP clients, each against the daemon on Redis.
	addr := onRedis.Addr
	var cycles [12]atomic.Int64 // drip body, drip headers, never read, refused, idle page GETs, huge queries, damaged keys,
	// outages read, large answers refused, browser GETs refused, trip presses, runs whose setsid grandchild ended
	// A body dripped a byte a second.
	spawn(10, func(ctx context.Context, _ int) {
		for ctx.Err() == nil {
			c := dialCtx(ctx, addr)
			if c == nil {
				continue
			}
			fmt.Fprintf(c, "POST /call/ok HTTP/1.1\r\nHost: %s\r\nX-Fusebox-Token: %s\r\nContent-Length: 1000\r\n\r\n", addr, token)
			for ctx.Err() == nil {
				if _, err := c.Write([]byte("x")); err != nil {
					break
				}
				if !sleepCtx(ctx, time.Second) {
					break
				}
			}
			c.Close()
			cycles[0].Add(1)
		}
	})
	spawn(10, func(ctx context.Context, _ int) { // headers dripped, never ended
		for ctx.Err() == nil {
			c := dialCtx(ctx, addr)
			if c == nil {
				continue
			}
			fmt.Fprintf(c, "GET /call/ok HTTP/1.1\r\nHost: %s\r\n", addr)
			for ctx.Err() == nil {
				if _, err := c.Write([]byte("X-A: b\r\n")); err != nil {
					break
				}
				if !sleepCtx(ctx, 500*time.Millisecond) {
					break
				}
			}
			c.Close()
			cycles[1].Add(1)
		}
	})
	spawn(10, func(ctx context.Context, _ int) { // requests for a large answer, never read
		for ctx.Err() == nil {
			c := dialCtx(ctx, addr)
			if c == nil {
				continue
			}
			for j := 0; j < 8 && ctx.Err() == nil; j++ {
				c.SetWriteDeadline(time.Now().Add(2 * time.Second))
				if _, err := fmt.Fprintf(c, "GET /call/big HTTP/1.1\r\nHost: %s\r\nX-Fusebox-Token: %s\r\n\r\n", addr, token); err != nil {
					break
				}
			}
			// Hold it, reading nothing, until the daemon gives up on it.
			c.SetReadDeadline(time.Now().Add(time.Minute))
			waitClosedByPeer(ctx, c)
			cycles[2].Add(1)
		}
	})
	spawn(20, func(ctx context.Context, i int) { // refused (no token), announcing a large body
		size := 100000
		if i%2 == 1 {
			size = 300000
		}
		for ctx.Err() == nil {
			c := dialCtx(ctx, addr)
			if c == nil {
				continue
			}
			fmt.Fprintf(c, "POST /call/ok HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n\r\n", addr, size)
			c.SetReadDeadline(time.Now().Add(time.Minute))
			io.Copy(io.Discard, c) // until the daemon closes it
			c.Close()
			cycles[3].Add(1)
		}
	})
	spawn(20, func(ctx context.Context, _ int) { // tokenless page GETs kept alive, then idle (issue 36.2)
		for ctx.Err() == nil {
			c := dialCtx(ctx, addr)
			if c == nil {
				continue
			}
			fmt.Fprintf(c, "GET /style.css HTTP/1.1\r\nHost: %s\r\n\r\n", addr)
			c.SetReadDeadline(time.Now().Add(time.Minute))
			io.Copy(io.Discard, c) // the answer, then idle until the daemon gives the slot up
			c.Close()
			cycles[4].Add(1)
		}
	})
	// ask sends a request with one header set and returns the answer's
	// status and its first MiB.
	ask := func(ctx context.Context, method, url, header, value string) (int, string) {
		req, _ := http.NewRequestWithContext(ctx, method, url, nil)
		req.Header.Set(header, value)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return resp.StatusCode, string(b)
	}
	spawn(2, func(ctx context.Context, _ int) { // a token caller's query of 1,000 parameters (issue 36.7)
		var q strings.Builder
		for j := range 1000 {
			fmt.Fprintf(&q, "&p%d=x", j)
		}
		for ctx.Err() == nil {
			if code, _ := ask(ctx, "GET", "http://"+addr+"/call/ok?"+q.String()[1:], "X-Fusebox-Token", token); code == http.StatusBadRequest {
				cycles[5].Add(1)
			}
			sleepCtx(ctx, 100*time.Millisecond)
		}
	})
	spawn(1, func(ctx context.Context, _ int) { // a Redis client that damages the shared epoch (issue 36.4)
		for sleepCtx(ctx, 10*time.Second) {
			// redis-cli, not rds.Do: Redis may be down for its restart.
			cli := exec.Command("redis-cli", "-p", strconv.Itoa(rds.Port), "eval",
				"redis.call('DEL', KEYS[1]); return redis.call('RPUSH', KEYS[1], 'not', 'an', 'epoch')", "1", "fusebox:epoch")
			if out, err := cli.CombinedOutput(); err == nil && strings.TrimSpace(string(out)) == "3" {
				cycles[6].Add(1)
			}
		}
	})
	spawn(4, func(ctx context.Context, i int) { // status pages and a scrape over the flapping's event log (issue 36.1)
		path := []string{"/api/outages", "/metrics"}[i%2]
		for ctx.Err() == nil {
			if code, _ := ask(ctx, "GET", "http://"+addr+path, "X-Fusebox-Token", token); code == http.StatusOK {
				cycles[7].Add(1)
			}
			sleepCtx(ctx, 50*time.Millisecond)
		}
	})
	spawn(6, func(ctx context.Context, _ int) { // POSTs at once for 10 MB of JSON with extract: (issue 36.1)
		for ctx.Err() == nil {
			code, body := ask(ctx, "POST", "http://"+addr+"/call/list", "X-Fusebox-Token", token)
			if code == http.StatusServiceUnavailable && (strings.Contains(body, "decoded, more than") || strings.Contains(body, "no memory free for the body")) {
				cycles[8].Add(1)
			}
			sleepCtx(ctx, 500*time.Millisecond)
		}
	})
	spawn(2, func(ctx context.Context, _ int) { // a browser's page GETs of the tokenless daemon's /call (issue 36.3)
		for ctx.Err() == nil {
			if code, _ := ask(ctx, "GET", "http://"+onFile.Addr+"/call/secret", "User-Agent", "Mozilla/5.0 (X11; Linux x86_64) Chrome/142"); code == http.StatusForbidden {
				cycles[9].Add(1)
			}
			sleepCtx(ctx, 20*time.Millisecond)
		}
	})
	presser := testenv.Subscribe(t, broker, "soak/unused3").Client
	spawn(1, func(ctx context.Context, _ int) { // trip presses on the maintenance trip (issue 36.5)
		for ctx.Err() == nil {
			pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
			_, err := presser.Publish(pctx, &paho.Publish{Topic: "fusebox/serve/" + instance + "/command", Payload: []byte(`{"circuit":"maint","press":"trip"}`)})
			pcancel()
			if err == nil {
				cycles[10].Add(1)
			}
			sleepCtx(ctx, 100*time.Millisecond)
		}
	})
	grandchildren := filepath.Join(dir, "grandchildren")
	spawn(1, func(ctx context.Context, _ int) { // runs timed out, their setsid grandchild still running (issue 36.6)
		for ctx.Err() == nil {
			// trip_after past the soak's runs: each must run, not skip.
			run := fbCmd(runDir, nil, testenv.RunArgs("escape", []string{"--attempts", "1", "--timeout", "1s", "--trip-after", "1000"},
				"sh", "-c", `setsid sleep 300 & echo $! >> "$0"; exec sleep 5`, grandchildren)...)
			if err := run.Run(); err != nil && run.ProcessState != nil && run.ProcessState.ExitCode() == 124 {
				cycles[11].Add(1)
			}
			sleepCtx(ctx, 100*time.Millisecond)
		}
	})
	// Callers with the token of the upstreams that hang and reset.
	client := &http.Client{Timeout: 30 * time.Second}
	call := func(ctx context.Context, name string) (int, error) {
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+addr+"/call/"+name, nil)
		req.Header.Set("X-Fusebox-Token", token)
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	spawn(4, func(ctx context.Context, i int) {
		name := []string{"hang", "reset"}[i%2]
		for ctx.Err() == nil {
			call(ctx, name)
			sleepCtx(ctx, 100*time.Millisecond)
		}
	})

	// The caller with the token, who must be answered throughout.
	var answered, refused atomic.Int64
	var firstMiss atomic.Value
	spawn(1, func(ctx context.Context, _ int) {
		for ctx.Err() == nil {
			code, err := call(context.Background(), "ok") // not cut at the soak's end
			if code == 200 {
				answered.Add(1)
			} else {
				refused.Add(1)
				firstMiss.CompareAndSwap(nil, fmt.Sprintf("after %d answers: status %d, %v", answered.Load(), code, err))
			}
			sleepCtx(ctx, 250*time.Millisecond)
		}
	})

	// Samples, every second, of both daemons.
	var samples [2][]soakSample
	daemons := [2]*testenv.Daemon{onRedis, onFile}
	dirs := [2]string{local, fileDir}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	began, restarts := time.Now(), 0
sample:
	for {
		select {
		case <-ctx.Done():
			break sample
		case <-tick.C:
		}
		// Redis restarted empty at a third and two thirds of the run.
		if restarts < 2 && time.Since(began) > time.Duration(restarts+1)*dur/3 {
			rds.Restart()
			restarts++
		}
		for i, d := range daemons {
			if gone, code := d.Exited(); gone {
				t.Fatalf("daemon %d exited with %d during the soak:\n%s", i, code, tail(d.Stderr.String(), 40))
			}
			samples[i] = append(samples[i], sampleDaemon(d, dirs[i], token))
		}
	}
	wg.Wait()

	// The verdicts.
	for i, d := range daemons {
		s := samples[i]
		if len(s) < 8 {
			t.Fatalf("daemon %d: %d samples in %v: the sampler could not keep up (timed out), nothing to judge", i, len(s), dur)
		}
		q := len(s) / 4
		second, last := peak(s[q:2*q]), peak(s[len(s)-q:])
		t.Logf("daemon %d (%s): second quarter peak %s; last quarter peak %s", i, []string{"redis", "file"}[i], second, last)
		// A race-built daemon holds several times as much, 10 MB answers too.
		slack := soakSample{rss: testenv.RaceMemory * 32 << 20, fds: 64, goroutines: 200, dir: 512 << 10}
		if last.rss > second.rss+slack.rss {
			t.Errorf("daemon %d: resident memory grew from %d MiB to %d MiB between the second and the last quarter (a leak)", i, second.rss>>20, last.rss>>20)
		}
		if last.fds > second.fds+slack.fds {
			t.Errorf("daemon %d: open descriptors grew from %d to %d (a leak)", i, second.fds, last.fds)
		}
		if last.goroutines > second.goroutines+slack.goroutines {
			t.Errorf("daemon %d: goroutines grew from %d to %d (a leak)", i, second.goroutines, last.goroutines)
		}
		if last.dir > second.dir+slack.dir {
			t.Errorf("daemon %d: its state dir grew from %d KiB to %d KiB (the event log is not bounded)", i, second.dir>>10, last.dir>>10)
		}
		if n := strings.Count(d.Stderr.String(), "\n"); n > 200 {
			t.Errorf("daemon %d logged %d lines in %v: a log flood:\n%s", i, n, dur, tail(d.Stderr.String(), 30))
		}
	}
	minutes := int64(dur/time.Minute) + 1
	for i := range notes {
		if n := notes[i].Load(); n > 10*minutes {
			t.Errorf("daemon %d sent %d notifications in %v of a flapping bridge (at most %d): a notification storm", i, n, dur, 10*minutes)
		}
	}
	if refused.Load() > 0 || answered.Load() == 0 {
		t.Errorf("the caller with the token was answered %d times and missed %d (first: %v): locked out by the flood", answered.Load(), refused.Load(), firstMiss.Load())
	}
	t.Logf("in %v: %d flaps, %d huge messages, attacker cycles (drip body, drip headers, never read, refused, idle page GETs, huge queries refused, damaged epochs, outages read, large answers refused, browser GETs refused, trip presses, runs whose grandchild ended) %d %d %d %d %d %d %d %d %d %d %d %d, token caller answered %d, notifications %d and %d",
		dur, flaps.Load(), huge.Load(), cycles[0].Load(), cycles[1].Load(), cycles[2].Load(), cycles[3].Load(), cycles[4].Load(), cycles[5].Load(), cycles[6].Load(),
		cycles[7].Load(), cycles[8].Load(), cycles[9].Load(), cycles[10].Load(), cycles[11].Load(),
		answered.Load(), notes[0].Load(), notes[1].Load())
	if flaps.Load() == 0 || huge.Load() == 0 || cycles[3].Load() == 0 || cycles[4].Load() == 0 || cycles[5].Load() == 0 || cycles[6].Load() == 0 ||
		cycles[7].Load() == 0 || cycles[8].Load() == 0 || cycles[9].Load() == 0 || cycles[10].Load() == 0 || cycles[11].Load() == 0 {
		t.Errorf("an attacker never got through a cycle (flaps %d, huge %d, refused %d, idle page GETs %d, huge queries refused %d, damaged epochs %d, outages read %d, large answers refused %d, browser GETs refused %d, trip presses %d, runs whose grandchild ended %d): the soak did not test what it says",
			flaps.Load(), huge.Load(), cycles[3].Load(), cycles[4].Load(), cycles[5].Load(), cycles[6].Load(),
			cycles[7].Load(), cycles[8].Load(), cycles[9].Load(), cycles[10].Load(), cycles[11].Load())
	}
	if n := up.secret.Load(); n != 0 {
		t.Errorf("a browser's page GETs reached the upstream %d times through the tokenless daemon; want each refused before the call", n)
	}
	if st, err := decodeState(filepath.Join(fileDir, "maint.json")); err != nil || st.Phase != breaker.ForcedOpen || st.OpenPeriod != 0 {
		t.Errorf("maint after %d trip presses: %s for %s (%v); want still tripped until reset, as the person left it", cycles[10].Load(), st.Phase, time.Duration(st.OpenPeriod), err)
	}
	pids, _ := os.ReadFile(grandchildren)
	for f := range strings.FieldsSeq(string(pids)) {
		if argv, err := os.ReadFile("/proc/" + f + "/cmdline"); err == nil && strings.HasPrefix(string(argv), "sleep\x00300") {
			if pid, err := strconv.Atoi(f); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
			t.Errorf("a run's setsid grandchild (pid %s) outlived its run's timeout", f)
		}
	}
}

// soakSample is what one daemon held at a moment.
type soakSample struct {
	rss, fds, goroutines, dir int64
}

func (s soakSample) String() string {
	return fmt.Sprintf("RSS %d MiB, %d descriptors, %d goroutines, state dir %d KiB", s.rss>>20, s.fds, s.goroutines, s.dir>>10)
}

func peak(s []soakSample) soakSample {
	var p soakSample
	for _, x := range s {
		p.rss, p.fds, p.goroutines, p.dir = max(p.rss, x.rss), max(p.fds, x.fds), max(p.goroutines, x.goroutines), max(p.dir, x.dir)
	}
	return p
}

// sampleDaemon reads the daemon's resident set and descriptors from /proc,
// its goroutines from its /metrics, and the size of its state dir.
func sampleDaemon(d *testenv.Daemon, dir, token string) soakSample {
	pid := d.Cmd.Process.Pid
	s := soakSample{rss: testenv.StatusField(pid, "VmRSS")}
	if fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid)); err == nil {
		s.fds = int64(len(fds))
	}
	req, _ := http.NewRequest("GET", "http://"+d.Addr+"/metrics", nil)
	req.Header.Set("X-Fusebox-Token", token)
	if resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req); err == nil {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "go_goroutines "); ok {
				f, _ := strconv.ParseFloat(v, 64)
				s.goroutines = int64(f)
			}
		}
		resp.Body.Close()
	}
	filepath.WalkDir(dir, func(_ string, e fs.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			if info, err := e.Info(); err == nil {
				s.dir += info.Size()
			}
		}
		return nil
	})
	return s
}

// soakUpstream answers /ok, /big (1 MiB), /list (10 MB of JSON, a weather
// API's list, chunked) and /secret (counting its calls), hangs on /hang
// until its caller gives up, and resets every connection to /reset.
type soakUpstream struct {
	*httptest.Server
	secret *atomic.Int64
}

func newSoakUpstream(t *testing.T) soakUpstream {
	big := strings.Repeat("b", 1<<20)
	var list strings.Builder
	list.WriteString(`{"list":[`)
	for i := 0; list.Len() < 10_000_000; i++ {
		if i > 0 {
			list.WriteByte(',')
		}
		fmt.Fprintf(&list, `{"dt":%d,"main":{"temp":%d.5,"humidity":%d},"weather":[{"id":800,"main":"Clear"}]}`, 1700000000+i*3600, i%30, i%100)
	}
	list.WriteString(`]}`)
	secret := &atomic.Int64{}
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			fmt.Fprint(w, `{"ok":true}`)
		case "/big":
			fmt.Fprint(w, big)
		case "/list":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, list.String())
		case "/secret":
			secret.Add(1)
			fmt.Fprint(w, `{"temp":7}`)
		case "/hang":
			select {
			case <-r.Context().Done():
			case <-time.After(time.Minute):
			}
		case "/reset":
			c, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				if tc, ok := c.(*net.TCPConn); ok {
					tc.SetLinger(0)
				}
				c.Close()
			}
		}
	}))
	t.Cleanup(s.Close)
	return soakUpstream{s, secret}
}

// dialCtx dials addr, or returns nil (after a short pause, so that a
// refusing daemon is not spun on) when it cannot.
func dialCtx(ctx context.Context, addr string) net.Conn {
	c, err := (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, "tcp", addr)
	if err != nil {
		sleepCtx(ctx, 100*time.Millisecond)
		return nil
	}
	return c
}

// waitClosedByPeer reads nothing until the peer closes c, its read
// deadline passes or ctx ends, then closes it. It reads one byte at a
// time only to notice the close, so the daemon's writes fill the buffers.
func waitClosedByPeer(ctx context.Context, c net.Conn) {
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			c.Close()
		case <-done:
		}
	}()
	// A peek every 2 s: the daemon's answers pile up in the socket buffers
	// meanwhile, as a client that never reads leaves them.
	one := make([]byte, 1)
	for ctx.Err() == nil {
		sleepCtx(ctx, 2*time.Second)
		if _, err := c.Read(one); err != nil {
			break
		}
	}
	close(done)
	c.Close()
}

// sleepCtx sleeps for d, or until ctx ends: false when ctx ended.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

func tail(s string, lines int) string {
	l := strings.Split(s, "\n")
	if len(l) > lines {
		l = l[len(l)-lines:]
	}
	return strings.Join(l, "\n")
}
