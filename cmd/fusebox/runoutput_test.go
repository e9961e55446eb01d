package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/internal/fakeapis"
	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// cronPolicy is run's default policy (3 attempts, trip after 3, the open
// period doubling) with its waits cut from seconds to milliseconds, so that
// an outage of a few probes takes seconds.
var cronPolicy = []string{"--backoff", "20ms", "--max-delay", "100ms", "--open-for", "300ms", "--open-max", "5m"}

// cronMailBound is how many runs of one outage may write on stderr (each a
// mail under cron): the one that opened the circuit and the one that closed
// it, and one to spare for a run that failed while the circuit was still
// closed.
const cronMailBound = 3

// TestRunCronOutageMailsFromAtMostThreeRuns drives the cron line of
// docs/schedulers.md, `fusebox run NAME -- curl -fsS URL`, as cron does:
// ticks of ten jobs started at once, against a loopback HTTP server that
// goes down for several probes of the circuit, then comes back until a probe
// closes the circuit. A job that writes anything on stderr is a mail. The
// ticks are counted by what the server saw (its probes) and by the circuit's
// state, not by the clock.
func TestRunCronOutageMailsFromAtMostThreeRuns(t *testing.T) {
	t.Parallel() // waits on processes and timers: it runs beside the others
	curl, api, url := weatherForCurl(t)
	state := t.TempDir()
	job := testenv.RunArgs("zigbee2mqtt", cronPolicy, curl, "-fsS", url)

	var mails []string // one per job that wrote on stderr
	jobs, ticks := 0, 0
	tick := func() {
		ticks++
		var mu sync.Mutex
		var wg sync.WaitGroup
		for range 10 {
			wg.Go(func() {
				cmd := fbCmd(state, nil, job...)
				var stderr strings.Builder
				cmd.Stderr = &stderr
				err := cmd.Run() // exit 0, 75 or curl's: stderr is what mails
				mu.Lock()
				defer mu.Unlock()
				jobs++
				if _, ok := err.(*exec.ExitError); err != nil && !ok {
					mails = append(mails, "cannot run fusebox: "+err.Error())
				}
				if stderr.Len() > 0 {
					mails = append(mails, fmt.Sprintf("tick %d:\n%s", ticks, stderr.String()))
				}
			})
		}
		wg.Wait()
	}

	if tick(); len(mails) != 0 {
		t.Fatalf("a healthy tick mailed:\n%s", strings.Join(mails, "\n"))
	}
	api.Down(fakeapis.Weather)
	before := api.Hits(fakeapis.Weather)
	tick()
	firstTick := api.Hits(fakeapis.Weather)
	// Every later request is a probe, one per open period: wait for three,
	// 300ms + 600ms + 1.2s of outage.
	for api.Hits(fakeapis.Weather)-firstTick < 3 {
		if ticks == 2000 {
			t.Fatalf("after %d ticks only %d probes reached the server", ticks, api.Hits(fakeapis.Weather)-firstTick)
		}
		tick()
	}
	probes := api.Hits(fakeapis.Weather) - firstTick
	api.Up(fakeapis.Weather)
	for statusOf(t, state, "zigbee2mqtt")["state"] != "closed" {
		if ticks == 4000 {
			t.Fatalf("the circuit never closed in %d ticks", ticks)
		}
		tick()
	}
	outage := len(mails)
	if tick(); len(mails) != outage {
		t.Errorf("a healthy tick after the outage mailed:\n%s", strings.Join(mails[outage:], "\n"))
	}

	report := fmt.Sprintf("%d ticks of 10 jobs (%d jobs), %d requests in the first tick, %d failed probes: %d mails\n%s",
		ticks, jobs, firstTick-before, probes, len(mails), strings.Join(mails, "\n"))
	t.Log(report)
	if len(mails) > cronMailBound {
		t.Errorf("want mails from at most %d runs: %s", cronMailBound, report)
	}
	all := strings.Join(mails, "\n")
	for _, want := range []string{"circuit opened", "curl: (22)", "circuit closed"} {
		if !strings.Contains(all, want) {
			t.Errorf("no mail says %q: the news is lost: %s", want, report)
		}
	}
	if st := statusOf(t, state, "zigbee2mqtt"); !strings.Contains(fmt.Sprint(st["last_failure"]), "curl: (22)") {
		t.Errorf("status last_failure %v: want curl's stderr line, printed or not", st["last_failure"])
	}
}

// TestRunOnATerminalPassesStderrThroughAsItComes: a person at a terminal
// sees the command's stderr as it writes it (a prompt, a progress line),
// not once the run has ended.
func TestRunOnATerminalPassesStderrThroughAsItComes(t *testing.T) {
	master, tty := openPTY(t)
	fifo := filepath.Join(t.TempDir(), "go")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := fbCmd(t.TempDir(), nil, testenv.RunArgs("asking", nil, "sh", "-c", `echo asking >&2; read line < "$0"`, fifo)...)
	cmd.Stderr = tty
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	seen := make(chan error, 1)
	go func() {
		r := bufio.NewReader(master)
		for {
			line, err := r.ReadString('\n')
			if strings.Contains(line, "asking") {
				seen <- nil
				return
			}
			if err != nil {
				seen <- err
				return
			}
		}
	}()
	select {
	case err := <-seen:
		if err != nil {
			t.Fatalf("the terminal closed before the command's stderr line arrived: %v", err)
		}
	case <-time.After(time.Minute): // only keeps a held stderr from hanging the suite
		cmd.Process.Kill()
		t.Fatal("the command's stderr line did not reach the terminal while it ran: it was held")
	}
	if err := os.WriteFile(fifo, []byte("answer\n"), 0); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("run: %v", err)
	}
}
