package httpcall

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/fusebox-hq/fusebox/internal/memlimit"
)

// jqChildArg, as a binary's only argument, makes IsolateJQ evaluate one
// jq program for its parent instead of returning.
const jqChildArg = "__fusebox_jq_child"

// jqIsolated is set by IsolateJQ: programs whose steps are not known to be
// small run in a child process.
var jqIsolated bool

// IsolateJQ, called first thing in main, makes the expect.jq and extract
// programs of every Client of this process whose steps might allocate past
// the memory bound in one go run in a child process of this same binary,
// which is killed once its resident set passes the bound. When the process was
// started as such a child, IsolateJQ calls limit (when not nil) with that
// bound, so that the program may set its process-wide limits as a backstop
// (the fusebox command passes internal/memlimit's Child), then evaluates the
// program it is sent and exits. Call it before anything else in main, once.
func IsolateJQ(limit func(bound int64) error) {
	if len(os.Args) == 2 && os.Args[1] == jqChildArg {
		os.Exit(serveJQChild(os.Stdin, os.Stdout, limit))
	}
	jqIsolated = true
}

// jqExecutable returns this binary's path: on Linux the image this process
// runs, even once an upgrade has replaced the file.
func jqExecutable() string {
	if runtime.GOOS == "linux" {
		return "/proc/self/exe"
	}
	exe, _ := os.Executable()
	return exe
}

// jqRequest is the first line a child reads; the body follows it.
type jqRequest struct {
	JQ      string `json:"jq"`
	Extract bool   `json:"extract"`
	Limit   int64  `json:"limit"`
}

// inChild evaluates src on body in a child process, as evaluate does,
// killing it once its resident set passes seven eighths of jqMemory.
func inChild(ctx context.Context, src string, body []byte, asExtract bool, limit int64) ([]byte, error) {
	req, _ := json.Marshal(jqRequest{JQ: src, Extract: asExtract, Limit: limit})
	cmd := exec.CommandContext(ctx, jqExecutable(), jqChildArg)
	// The program and body go through stdin, not argv or the environment,
	// where other users could read them; the child sees none of ours.
	cmd.Env = []string{"GOTRACEBACK=none"}
	cmd.Stdin = io.MultiReader(bytes.NewReader(req), strings.NewReader("\n"), bytes.NewReader(body))
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &capped{buf: &stdout, room: limit + 64}
	cmd.Stderr = &capped{buf: &stderr, room: 4 << 10}
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start jq's process: %w", err)
	}
	over := watchChild(cmd.Process, raceMemory*(jqMemory-jqMemory/8))
	err := cmd.Wait()
	if <-over {
		return nil, errJQMemory
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err != nil {
		// Refused an address-space mapping (the limit's backstop), the Go
		// runtime throws, or faults in its own bookkeeping.
		died := stderr.String()
		if strings.Contains(died, "out of memory") || strings.Contains(died, "cannot allocate memory") || strings.Contains(died, "SIGSEGV") {
			return nil, errJQMemory
		}
		line, _, _ := strings.Cut(strings.TrimSpace(died), "\n")
		return nil, fmt.Errorf("jq's process: %w: %s", err, line)
	}
	status, out, _ := bytes.Cut(stdout.Bytes(), []byte("\n"))
	if string(status) != "ok" {
		return nil, errors.New(string(out))
	}
	return out, nil
}

// watchChild reads p's resident set every millisecond until it exits, and
// kills it once past limit bytes; the channel then says whether it did.
// The watcher is this process, not the child: a thread of the child would
// wait, as every goroutine does, while its collector stops the world for a
// step that copies a gigabyte. The last eighth of jqMemory is room for what
// a step faults in between two looks on a busy machine.
func watchChild(p *os.Process, limit int64) <-chan bool {
	over := make(chan bool, 1)
	statm, err := os.Open("/proc/" + strconv.Itoa(p.Pid) + "/statm")
	if err != nil { // not Linux: the child's own limit alone
		over <- false
		return over
	}
	go func() {
		defer statm.Close()
		for {
			rss, err := memlimit.StatmBytes(statm, 1)
			if err != nil { // it exited
				over <- false
				return
			}
			if rss > limit {
				p.Kill()
				over <- true
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	return over
}

// serveJQChild reads a jqRequest and a body from stdin, evaluates it, and
// writes "ok" and the rendered outputs, or "error" and the reason, to
// stdout. Its parent bounds its resident set, its copy of the body
// included, to jqMemory.
func serveJQChild(stdin io.Reader, stdout io.Writer, limit func(bound int64) error) int {
	if limit != nil {
		if err := limit(jqMemory); err != nil {
			fmt.Fprintf(stdout, "error\ncannot limit the memory of jq's process: %v", err)
			return 0
		}
	}
	out, err := func() ([]byte, error) {
		r := bufio.NewReader(stdin)
		line, err := r.ReadBytes('\n')
		if err != nil {
			return nil, fmt.Errorf("read the request: %w", err)
		}
		var req jqRequest
		if err := json.Unmarshal(line, &req); err != nil {
			return nil, fmt.Errorf("read the request: %w", err)
		}
		body, err := io.ReadAll(r)
		if err != nil {
			return nil, fmt.Errorf("read the body: %w", err)
		}
		p, err := compileJQ(req.JQ)
		if err != nil {
			return nil, err
		}
		v, err := decodeJSON(body)
		if err != nil {
			return nil, err
		}
		return render(context.Background(), p.code, v, req.Extract, req.Limit)
	}()
	if err != nil {
		fmt.Fprintf(stdout, "error\n%s", err)
		return 0
	}
	fmt.Fprintf(stdout, "ok\n%s", out)
	return 0
}

// capped keeps the first room bytes written to it, dropping the rest.
type capped struct {
	buf  *bytes.Buffer
	room int64
}

func (c *capped) Write(p []byte) (int, error) {
	if k := min(int64(len(p)), c.room); k > 0 {
		c.buf.Write(p[:k])
		c.room -= k
	}
	return len(p), nil
}
