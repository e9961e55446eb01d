package reliability

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// jqMemory is httpcall's bound on one jq evaluation's memory.
const jqMemory = 128 << 20

// TestHostileJQStaysInItsBound runs `fusebox call` with extract: and
// expect.jq programs that would take all the machine's memory — a string
// doubled 40 times, one repeated a billion times, an array grown without
// end, a long string split into characters — and checks that each is
// stopped with its reason logged, and that the resident set of fusebox and
// the child process it evaluates such a program in, together, stays within
// the bound over a healthy call's: on a 1 GiB machine, what the bound
// promises is what the out-of-memory killer sees.
func TestHostileJQStaysInItsBound(t *testing.T) {
	if testenv.RaceBuild {
		// As httpcall's own bound tests: the race runtime reserves
		// terabytes of address space, so internal/memlimit sets no limit
		// on a race-built child. The plain run checks the bound.
		t.Skip("fusebox built with -race puts no address-space limit on its jq child")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"temp":21.5,"s":"`+strings.Repeat("x", 4<<20)+`"}`)
	}))
	defer srv.Close()
	const memory = "used more than 128 MiB of memory"
	cases := []struct{ name, block, reason string }{
		{"a string doubled 40 times", `extract: 'reduce range(40) as $i ("x"; . + .)'`, memory},
		{"recursion doubling a string", `extract: 'def f(s): f(s+s); f("x")'`, memory},
		{"a string doubled in expect.jq", `expect: {jq: 'reduce range(40) as $i ("x"; . + .) | length > 0'}`, memory},
		{"a string repeated a billion times", `extract: '"x" * 1e9 | length'`, memory},
		{"an ever-growing array (in-process, then in a child)", `extract: '[range(1e12)] | length'`, memory},
		{"an index half a billion deep", `extract: 'null | .[500000000] = 1 | length'`, memory},
		{"4 MiB split into characters", `extract: '.s | split("") | length'`, memory},
		{"an array doubled 40 times", `extract: 'reduce range(40) as $i ([1]; . + .) | length'`, memory},
		// Its JSON text would be 4 TiB; measuring it stops at max_body.
		{"the body a million times in one output", `extract: '. as $b | [range(1e6) | $b]'`, "output larger than 10485760 bytes"},
	}
	config := "circuits:\n  healthy:\n    attempts: 1\n    http: {url: '" + srv.URL + "', extract: '.temp'}\n"
	for i, c := range cases {
		config += fmt.Sprintf("  hostile-%d:\n    attempts: 1\n    timeout: 2m\n    deadline: 2m\n    http: {url: '%s', %s}\n", i, srv.URL, c.block)
	}
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	write(t, cfg, []byte(config))
	call := func(t *testing.T, name string) (testenv.Proc, treeUse) {
		cmd := fbCmd(filepath.Join(t.TempDir(), "state"), []string{"FUSEBOX_CONFIG=" + cfg}, "call", name)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		p, use, err := runWatchedTree(cmd)
		if err != nil {
			t.Fatal(err)
		}
		p.Stdout, p.Stderr = out.String(), errb.String()
		return p, use
	}
	healthy, healthyUse := call(t, "healthy")
	if healthy.Code != 0 || healthy.Stdout != "21.5\n" {
		t.Fatalf("healthy call: exit %d, stdout %q\n%s", healthy.Code, healthy.Stdout, healthy.Stderr)
	}
	t.Logf("healthy call: peak RSS %s in %s", mib(healthy.HWM), healthy.Took.Round(time.Millisecond))
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, use := call(t, fmt.Sprintf("hostile-%d", i))
			added := use.peak - healthyUse.peak
			t.Logf("%s: exit %d in %s; peak RSS of fusebox %s (%+.1f MiB over a healthy call), of its jq child %s; of both at once %+.1f MiB over a healthy call",
				c.name, p.Code, p.Took.Round(time.Millisecond), mib(p.HWM), float64(p.HWM-healthy.HWM)/(1<<20), mib(use.child), float64(added)/(1<<20))
			if p.Code != 69 || !strings.Contains(p.Stderr, c.reason) {
				t.Errorf("exit %d, want 69 and %q in:\n%s", p.Code, c.reason, p.Stderr)
			}
			if added > jqMemory || p.HWM-healthy.HWM > jqMemory {
				t.Errorf("fusebox and its child took %s more than a healthy call (fusebox alone %s): more than jq's bound of %s",
					mib(added), mib(p.HWM-healthy.HWM), mib(jqMemory))
			}
		})
	}
}

// treeUse is the memory of a process and its children.
type treeUse struct {
	peak  int64 // the largest sum of their resident sets seen at once
	child int64 // the largest peak resident set (VmHWM) of a child
}

// runWatchedTree is runWatched, also summing the resident sets of cmd's
// process and its children every millisecond.
func runWatchedTree(cmd *exec.Cmd) (testenv.Proc, treeUse, error) {
	stop := make(chan struct{})
	used := make(chan treeUse, 1)
	started := make(chan int, 1)
	go func() {
		pid := <-started
		var use treeUse
		for {
			sum := testenv.StatusField(pid, "VmRSS")
			for _, c := range children(pid) {
				sum += testenv.StatusField(c, "VmRSS")
				use.child = max(use.child, testenv.StatusField(c, "VmHWM"))
			}
			use.peak = max(use.peak, sum)
			select {
			case <-stop:
				used <- use
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	p, err := testenv.RunWatched(cmd, func(pid int) { started <- pid })
	if err != nil {
		close(stop)
		return p, treeUse{}, err
	}
	close(stop)
	use := <-used
	use.peak = max(use.peak, p.HWM) // the process's own exact peak, when larger
	return p, use, nil
}

// children lists the child processes of pid, from every thread's list.
func children(pid int) []int {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var out []int
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		for _, s := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(s); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}
