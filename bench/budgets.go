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
	"time"
)

// Budgets that compose (issue 34): the example weather chain, whose
// primary hangs (accepts, never answers), called once by `fusebox call`
// on a fresh state dir, then through `fusebox serve` by a caller that
// waits a while and says so in X-Fusebox-Wait.

// budgetsConfig is bench/scripts/budgets.yaml, shared with budgets.sh,
// with the upstreams' URLs put in.
func budgetsConfig(t *tools, hang, wttr string) ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(filepath.Dir(t.script), "budgets.yaml"))
	if err != nil {
		return nil, fmt.Errorf("read the budgets config: %w", err)
	}
	return []byte(strings.NewReplacer("HANG", hang, "WTTR", wttr).Replace(string(b))), nil
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

func budgetsRound(ctx context.Context, t *tools) (roundResult, error) {
	hang, wttr, stopUp, err := budgetUpstreams()
	if err != nil {
		return roundResult{}, err
	}
	defer stopUp()
	cfg, err := budgetsConfig(t, hang, wttr)
	if err != nil {
		return roundResult{}, err
	}
	var figs []figure
	var rows [][]string

	// The first call after the primary starts hanging.
	dir, err := newScratch(t.work, "budgets-call")
	if err != nil {
		return roundResult{}, err
	}
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), cfg, 0o600); err != nil {
		return roundResult{}, err
	}
	log.Printf("budgets: fusebox call weather, its primary hanging")
	cmd := exec.CommandContext(ctx, t.fusebox, "call", "--json", "weather")
	cmd.Env = isolatedEnv(dir)
	start := time.Now()
	out, err := cmd.Output()
	took := time.Since(start)
	var answer struct{ Source string }
	json.Unmarshal(out, &answer)
	code := exitStatus(err)
	// A call the fallback did not answer counts as never answered: +Inf.
	firstOK := float64(took)
	if code != 0 || answer.Source != "wttr" {
		firstOK = inf
	}
	figs = append(figs, figure{Key: "first call", Label: "the first call after the primary starts hanging is answered by the chain's fallback within its 20s deadline",
		Value: firstOK, Format: fmtAnswered, Met: atMost(float64(20 * time.Second))})
	firstCall := fmt.Sprintf("`fusebox call weather` exited %d after %s, answered by %s.", code, fmtMs(took), orNothing(answer.Source))

	// The caller's wait, through the daemon.
	before := 0
	for i, c := range budgetCalls {
		dir, err := newScratch(t.work, "budgets-serve-"+strconv.Itoa(i))
		if err != nil {
			return roundResult{}, err
		}
		if err := os.WriteFile(filepath.Join(dir, "config.yaml"), cfg, 0o600); err != nil {
			return roundResult{}, err
		}
		log.Printf("budgets: fusebox serve, %s", c.label())
		r, err := callThroughServe(ctx, t, dir, c)
		if err != nil {
			return roundResult{}, err
		}
		if !r.GaveUp {
			before++
		}
		rows = append(rows, []string{c.label(), r.String()})
		figs = append(figs, figure{Key: c.label(), Value: float64(r.Took), Format: fmtDur})
	}
	figs = append(figs, figure{Key: "before", Label: "every answer through the daemon comes before the caller gives up", Value: float64(before),
		Format: func(v float64) string { return fmtCount(v) + " of " + strconv.Itoa(len(budgetCalls)) }, Met: atLeast(float64(len(budgetCalls)))})

	var b strings.Builder
	fmt.Fprintf(&b, "Against a hanging upstream (accepts, never answers) and a wttr stand-in on loopback, each call on a fresh state dir. "+
		"The first call after the primary starts hanging: %s\n\n", firstCall)
	b.WriteString("Through `fusebox serve`, a caller that waits and says so in `X-Fusebox-Wait` (it gives up after its wait); " +
		"`hang` has the default policy (3 attempts of 10s), `weather` is the chain.\n\n")
	b.WriteString(mdTable([]string{"name, caller's wait", "answer"}, "ll", rows))
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
func callThroughServe(ctx context.Context, t *tools, dir string, c budgetCall) (serveAnswer, error) {
	cmd := exec.CommandContext(ctx, t.fusebox, "serve", "--listen", "127.0.0.1:0")
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
	fmt.Fprintf(&b, "The first call after the primary starts hanging took %s. Through the daemon, ", s.get("first call"))
	for i, c := range budgetCalls {
		sep := ", "
		if i == len(budgetCalls)-1 {
			sep = "; "
		}
		fmt.Fprintf(&b, "%s: %s%s", c.label(), s.get(c.label()), sep)
	}
	fmt.Fprintf(&b, "answers before the caller gave up: %s.", s.get("before"))
	return b.String()
}
