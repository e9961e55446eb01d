package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Budgets that compose (issue 34): the example weather chain, whose
// primary hangs (accepts, never answers), called once by `fusebox call`
// on a fresh state dir, then through `fusebox serve` by a caller that
// waits a while and says so in X-Fusebox-Wait.

// budgetsBefore is the revision before issue 34's budgets: each round
// runs its fusebox beside the checkout's, so the before and the after are
// figures of one run.
const budgetsBefore = "b7e297c"

// budgetsExample is the config the scenario runs: the example config as
// shipped, so the figures are of the chain users copy.
const budgetsExample = "packaging/examples/config.yaml"

// budgetsConfig writes into dir packaging/examples/config.yaml as shipped,
// its APIs pointed at the stand-ins, its chain without fresh: (so that
// every call reaches them), and an endpoint of the default policy, hang,
// beside its circuits; with the secret files it names. Each text replaced
// must be there once, or the example has changed under the scenario.
func budgetsConfig(t *tools, dir, hang, wttr string) error {
	b, err := os.ReadFile(filepath.Join(t.repo, budgetsExample))
	if err != nil {
		return fmt.Errorf("read the example config: %w", err)
	}
	cfg := string(b)
	for _, r := range [][2]string{
		{"https://api.openweathermap.org", hang},
		{"https://wttr.in", wttr},
		{"http://127.0.0.1:8123", wttr},
		{"    fresh: 10m\n", ""},
		{"circuits:\n", "circuits:\n  hang:\n    http:\n      url: " + hang + "/api\n"},
	} {
		if n := strings.Count(cfg, r[0]); n != 1 {
			return fmt.Errorf("%s has %q %d times, not once: the budgets scenario needs updating", budgetsExample, r[0], n)
		}
		cfg = strings.Replace(cfg, r[0], r[1], 1)
	}
	for name, body := range map[string]string{"config.yaml": cfg, "owm_api_key": "key\n", "ha_token": "token\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			return err
		}
	}
	return nil
}

// buildBefore builds budgetsBefore's fusebox once per bench run, from git
// archive of the checkout's history into the scratch dir.
func buildBefore(ctx context.Context, t *tools) (string, error) {
	bin := filepath.Join(t.work, "fusebox-"+budgetsBefore)
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	src := filepath.Join(t.work, "src-"+budgetsBefore)
	if err := os.MkdirAll(src, 0o700); err != nil {
		return "", err
	}
	log.Printf("budgets: building fusebox %s", budgetsBefore)
	x := exec.CommandContext(ctx, "sh", "-c", `git -C "$1" archive "$2" | tar -x -C "$3"`, "sh", t.repo, budgetsBefore, src)
	if out, err := x.CombinedOutput(); err != nil {
		return "", fmt.Errorf("unpack fusebox %s: %v\n%s", budgetsBefore, err, out)
	}
	if err := goBuild(ctx, src, bin, "./cmd/fusebox"); err != nil {
		return "", err
	}
	return bin, nil
}

// budgetCall is one call through the daemon: the circuit or chain, the
// wait the caller declares (0: none, and it waits noWait), and the wait
// it gives up after.
type budgetCall struct {
	Name string
	Wait time.Duration
}

// noWait is how long a caller that declares no wait waits.
const noWait = time.Minute

var budgetCalls = []budgetCall{
	{"hang", 0},
	{"hang", 5 * time.Second}, {"weather", 5 * time.Second},
	{"hang", 10 * time.Second}, {"weather", 10 * time.Second},
	{"hang", 30 * time.Second}, {"weather", 30 * time.Second},
}

func (c budgetCall) label() string {
	if c.Wait == 0 {
		return c.Name + ", no wait declared (the caller waits " + noWait.String() + ")"
	}
	return c.Name + ", wait " + c.Wait.String()
}

// budgetUpstreams starts the hanging upstream and the wttr stand-in on
// loopback.
func budgetUpstreams() (hang, wttr string, stop func(), err error) {
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", "", nil, err
	}
	var held []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := hl.Accept()
			if err != nil {
				for _, c := range held {
					c.Close()
				}
				return
			}
			held = append(held, c) // accepted, never answered
		}
	}()
	wl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		hl.Close()
		return "", "", nil, err
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"current_condition":[{"temp_C":"7"}]}`)
	})}
	go srv.Serve(wl)
	stop = func() {
		hl.Close()
		<-done
		srv.Close()
	}
	return "http://" + hl.Addr().String(), "http://" + wl.Addr().String(), stop, nil
}

// budgetsRun is what one fusebox binary gave in a round: the first call
// (its exit status, time and answering endpoint) and each call through
// its daemon, in budgetCalls' order.
type budgetsRun struct {
	Code   int
	Took   time.Duration
	Source string
	Serve  []serveAnswer
}

func (r budgetsRun) firstCall() string {
	return fmt.Sprintf("exit %d after %s, answered by %s", r.Code, fmtMs(r.Took), orNothing(r.Source))
}

// budgetsOf runs the first call and then every call of budgetCalls through
// a daemon of its own, those at once: each is bounded by its caller's wait,
// not by the CPU, so running them together changes none of them.
func budgetsOf(ctx context.Context, t *tools, bin, tag, hang, wttr string) (budgetsRun, error) {
	var r budgetsRun
	dir, err := newScratch(t.work, "budgets-"+tag+"-call")
	if err != nil {
		return r, err
	}
	if err := budgetsConfig(t, dir, hang, wttr); err != nil {
		return r, err
	}
	log.Printf("budgets: fusebox call weather (%s), its primary hanging", tag)
	cmd := exec.CommandContext(ctx, bin, "call", "--json", "weather")
	cmd.Env = isolatedEnv(dir)
	start := time.Now()
	out, err := cmd.Output()
	r.Took = time.Since(start)
	var answer struct{ Source string }
	json.Unmarshal(out, &answer)
	r.Code, r.Source = exitStatus(err), answer.Source

	log.Printf("budgets: fusebox serve (%s), %d callers at once", tag, len(budgetCalls))
	r.Serve = make([]serveAnswer, len(budgetCalls))
	errs := make([]error, len(budgetCalls))
	var wg sync.WaitGroup
	for i, c := range budgetCalls {
		dir, err := newScratch(t.work, "budgets-"+tag+"-serve-"+strconv.Itoa(i))
		if err == nil {
			err = budgetsConfig(t, dir, hang, wttr)
		}
		if err != nil {
			return r, err
		}
		wg.Go(func() { r.Serve[i], errs[i] = callThroughServe(ctx, bin, dir, c) })
	}
	wg.Wait()
	return r, errors.Join(errs...)
}

func budgetsRound(ctx context.Context, t *tools) (roundResult, error) {
	before, err := buildBefore(ctx, t)
	if err != nil {
		return roundResult{}, err
	}
	hang, wttr, stopUp, err := budgetUpstreams()
	if err != nil {
		return roundResult{}, err
	}
	defer stopUp()
	was, err := budgetsOf(ctx, t, before, budgetsBefore, hang, wttr)
	if err != nil {
		return roundResult{}, err
	}
	now, err := budgetsOf(ctx, t, t.fusebox, "now", hang, wttr)
	if err != nil {
		return roundResult{}, err
	}

	// A first call the fallback did not answer counts as never answered: +Inf.
	firstOK := float64(now.Took)
	if now.Code != 0 || now.Source != "wttr" {
		firstOK = inf
	}
	figs := []figure{
		{Key: "first call", Label: "the first call after the primary starts hanging is answered by the chain's fallback within its 20s deadline",
			Value: firstOK, Format: fmtAnswered, Met: atMost(float64(20 * time.Second))},
		{Key: "first call before", Value: float64(was.Took), Format: fmtDur},
	}
	rows := [][]string{{"`fusebox call weather`", was.firstCall(), now.firstCall()}}
	answered := 0
	for i, c := range budgetCalls {
		if !now.Serve[i].GaveUp {
			answered++
		}
		rows = append(rows, []string{c.label(), was.Serve[i].String(), now.Serve[i].String()})
		figs = append(figs, figure{Key: c.label(), Value: float64(now.Serve[i].Took), Format: fmtDur},
			figure{Key: c.label() + " before", Value: float64(was.Serve[i].Took), Format: fmtDur})
	}
	figs = append(figs, figure{Key: "before", Label: "every answer through the daemon comes before the caller gives up", Value: float64(answered),
		Format: func(v float64) string { return fmtCount(v) + " of " + strconv.Itoa(len(budgetCalls)) }, Met: atLeast(float64(len(budgetCalls)))})

	var b strings.Builder
	fmt.Fprintf(&b, "Against a hanging upstream (accepts, never answers) and a wttr stand-in on loopback, each call on a fresh state dir, "+
		"with fusebox %s (before issue 34) and the checkout's. The first row is the first call after the primary starts hanging; "+
		"the others go through `fusebox serve`, to a caller that waits and says so in `X-Fusebox-Wait` (it gives up after its wait); "+
		"`hang` has the default policy (3 attempts of 10s), `weather` is the example's chain.\n\n", budgetsBefore)
	b.WriteString(mdTable([]string{"call, caller's wait", "before (" + budgetsBefore + ")", "now"}, "lll", rows))
	return roundResult{Detail: b.String(), Figures: figs}, nil
}

// fmtAnswered prints the time to the fallback's answer; +Inf is none.
func fmtAnswered(v float64) string {
	if math.IsInf(v, 1) {
		return "not answered by the fallback"
	}
	return fmtDur(v)
}

func orNothing(s string) string {
	if s == "" {
		return "nothing"
	}
	return s
}

// serveAnswer is what a caller got through the daemon.
type serveAnswer struct {
	Status     int
	Took       time.Duration
	RetryAfter string
	Source     string
	GaveUp     bool
}

func (a serveAnswer) String() string {
	if a.GaveUp {
		return "the caller gave up after " + fmtMs(a.Took)
	}
	s := fmt.Sprintf("%d after %s", a.Status, fmtMs(a.Took))
	if a.Source != "" {
		s += " from " + a.Source
	}
	if a.RetryAfter != "" {
		s += ", Retry-After " + a.RetryAfter
	}
	return s
}

// callThroughServe starts a daemon on dir's config, calls c through it as
// the caller would, and stops the daemon by its PID.
func callThroughServe(ctx context.Context, bin, dir string, c budgetCall) (serveAnswer, error) {
	cmd := exec.CommandContext(ctx, bin, "serve", "--listen", "127.0.0.1:0")
	cmd.Env = isolatedEnv(dir)
	addr, stop, err := startListener(cmd, "fusebox serve")
	if err != nil {
		return serveAnswer{}, err
	}
	defer stop()
	wait := c.Wait
	if wait == 0 {
		wait = noWait
	}
	cctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	req, err := http.NewRequestWithContext(cctx, http.MethodGet, "http://"+addr+"/call/"+c.Name, nil)
	if err != nil {
		return serveAnswer{}, err
	}
	if c.Wait > 0 {
		req.Header.Set("X-Fusebox-Wait", c.Wait.String())
	}
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	took := time.Since(start)
	if errors.Is(err, context.DeadlineExceeded) {
		return serveAnswer{Took: took, GaveUp: true}, nil
	}
	if err != nil {
		return serveAnswer{}, fmt.Errorf("call %s through fusebox serve: %w", c.Name, err)
	}
	resp.Body.Close()
	return serveAnswer{Status: resp.StatusCode, Took: took, RetryAfter: resp.Header.Get("Retry-After"), Source: resp.Header.Get("X-Fusebox-Source")}, nil
}

// budgetsProse is what the budgets rounds show.
func budgetsProse(s summary) string {
	var b strings.Builder
	fmt.Fprintf(&b, "The first call after the primary starts hanging took %s (%s: %s). Through the daemon, now (before): ",
		s.get("first call"), budgetsBefore, s.get("first call before"))
	for i, c := range budgetCalls {
		sep := ", "
		if i == len(budgetCalls)-1 {
			sep = "; "
		}
		fmt.Fprintf(&b, "%s: %s (%s)%s", c.label(), s.get(c.label()), s.get(c.label()+" before"), sep)
	}
	fmt.Fprintf(&b, "answers before the caller gave up: %s.", s.get("before"))
	return b.String()
}
