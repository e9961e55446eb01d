package reliability

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// fault is an upstream that misbehaves in one way, on a real socket on
// 127.0.0.1.
type fault struct {
	name  string
	serve func(conn net.Conn, done <-chan struct{}) // nil: nothing listens (connection refused)
	// What `fusebox call --url` must log, and what `fusebox run -- curl`
	// must exit with and log.
	callReason []string // each in stderr
	runCode    []int
	runReason  string
	// untimed cases are about what the upstream answers, the body cap
	// and memory, not time: they run under untimedPolicy.
	untimed bool
}

const hugeBody = 100 << 20 // 100 MiB

// faultPolicy is the timed cases': three attempts of at most
// 500ms within 1.5s, logged one by one (-v) to see each attempt's reason.
var faultPolicy = []string{"-v", "--attempts", "3", "--backoff", "10ms", "--max-delay", "20ms", "--timeout", "500ms", "--deadline", "1500ms"}

// faultDeadline is how long a case may take: the deadline, plus room for
// fusebox's start-up and curl's SIGTERM on a busy machine (both cores taken
// by other work). A wrong implementation, one that lets an attempt outlive
// its timeout, takes 100s (a byte a second) or forever.
const faultDeadline = 1500*time.Millisecond + 15*time.Second

// untimedPolicy is faultPolicy with time enough for a busy machine to start
// curl and move 100 MiB through it: what the untimed cases assert is the
// reason an upstream's refusal, reset or garbage is given, and that a body
// is capped (call) or passed through whole (run) in bounded memory. A 500ms
// attempt timeout made a busy machine fail them on time instead (a curl
// that had not started within it).
var untimedPolicy = []string{"-v", "--attempts", "3", "--backoff", "10ms", "--max-delay", "20ms", "--timeout", "60s", "--deadline", "60s"}

const untimedDeadline = 60*time.Second + 500*time.Millisecond

// policy returns the flags f runs under and how long it may take.
func (f fault) policy() ([]string, time.Duration) {
	if f.untimed {
		return untimedPolicy, untimedDeadline
	}
	return faultPolicy, faultDeadline
}

var faults = []fault{
	{name: "connection refused",
		callReason: []string{`reason="attempts exhausted after 3 attempts: connection refused"`},
		runCode:    []int{7}, runReason: `reason="exit status 7: curl: (7) Failed to connect to 127.0.0.1`, untimed: true},
	{name: "reset mid-response", serve: func(c net.Conn, _ <-chan struct{}) {
		readRequest(c)
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 1048576\r\n\r\n")
		c.Write(bytes.Repeat([]byte("x"), 64<<10))
		time.Sleep(20 * time.Millisecond)
		c.(*net.TCPConn).SetLinger(0) // close with RST
		c.Close()
	}, callReason: []string{`reason="attempts exhausted after 3 attempts: reading the body: connection reset"`},
		runCode: []int{18, 56}, runReason: `reason="exit status `, untimed: true},
	{name: "accept, then never answer", serve: func(c net.Conn, done <-chan struct{}) {
		<-done
	}, callReason: []string{`attempt=1 attempts=3 reason="timeout after 500ms: no response"`,
		// The deadline ends the call: in the third attempt, or, on a busy
		// machine, before it starts ("deadline reached after 2 attempts").
		`deadline`, `: no response"`},
		runCode: []int{124}, runReason: `reason="timeout after 500ms: killed by signal 15 (SIGTERM)"`},
	{name: "headers, then stall", serve: func(c net.Conn, done <-chan struct{}) {
		readRequest(c)
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"temp\":")
		<-done
	}, callReason: []string{`attempt=1 attempts=3 reason="timeout after 500ms: body not received in full"`,
		// The deadline ends the call: in the third attempt, or, on a busy
		// machine, before it starts ("deadline reached after 2 attempts").
		`deadline`, `: body not received in full"`},
		runCode: []int{124}, runReason: `reason="timeout after 500ms: killed by signal 15 (SIGTERM)"`},
	{name: "100 MiB body with Content-Length", serve: func(c net.Conn, done <-chan struct{}) {
		readRequest(c)
		fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: %d\r\n\r\n", hugeBody)
		stream(c, hugeBody, done)
	}, callReason: []string{`reason="not retryable after 1 attempt: body larger than 10485760 bytes"`}, untimed: true},
	{name: "100 MiB body until close", serve: func(c net.Conn, done <-chan struct{}) {
		readRequest(c)
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nConnection: close\r\n\r\n")
		stream(c, hugeBody, done)
		c.Close()
	}, callReason: []string{`reason="not retryable after 1 attempt: body larger than 10485760 bytes"`}, untimed: true},
	{name: "a byte a second", serve: func(c net.Conn, done <-chan struct{}) {
		readRequest(c)
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 100\r\n\r\n")
		for range 100 {
			if _, err := c.Write([]byte("x")); err != nil {
				return
			}
			select {
			case <-done:
				return
			case <-time.After(time.Second):
			}
		}
	}, callReason: []string{`attempt=1 attempts=3 reason="timeout after 500ms: body not received in full"`,
		// The deadline ends the call: in the third attempt, or, on a busy
		// machine, before it starts ("deadline reached after 2 attempts").
		`deadline`, `: body not received in full"`},
		runCode: []int{124}, runReason: `reason="timeout after 500ms: killed by signal 15 (SIGTERM)"`},
	{name: "invalid HTTP", serve: func(c net.Conn, _ <-chan struct{}) {
		readRequest(c)
		io.WriteString(c, "HELLO FROM A TELNET SERVICE\r\n\r\n")
		c.Close()
	}, callReason: []string{`reason="attempts exhausted after 3 attempts: net/http: HTTP/1.x transport connection broken: malformed HTTP status code \"FROM\""`},
		runCode: []int{1, 8}, runReason: `reason="exit status `, untimed: true},
}

// TestUpstreamFaults runs each fault through `fusebox call --url` and through
// `fusebox run -- curl`: every call ends within its deadline, with the
// reason logged, and fusebox's memory stays far below the 100 MiB a server
// sends.
func TestUpstreamFaults(t *testing.T) {
	curl, curlErr := exec.LookPath("curl")
	for _, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel() // most cases wait out a 1.5s deadline
			url := "http://" + listen(t, f.serve) + "/data"
			policy, limit := f.policy()
			t.Run("call --url", func(t *testing.T) {
				state := filepath.Join(t.TempDir(), "state")
				args := append([]string{"call", "--url", url}, policy...)
				cmd := fbCmd(state, nil, append(args, "upstream")...)
				var stdout, stderr bytes.Buffer
				cmd.Stdout, cmd.Stderr = &stdout, &stderr
				p, err := testenv.RunWatched(cmd, nil)
				if err != nil {
					t.Fatal(err)
				}
				p.Stdout, p.Stderr = stdout.String(), stderr.String()
				checkFault(t, p, limit, []int{69}, f.callReason...)
				if p.Stdout != "" {
					t.Errorf("stdout %q, want nothing", p.Stdout)
				}
			})
			t.Run("run -- curl", func(t *testing.T) {
				if curlErr != nil {
					testenv.Skip(t, "curl is not installed")
				}
				state := filepath.Join(t.TempDir(), "state")
				cmd := fbCmd(state, nil, testenv.RunArgs("upstream", policy, curl, "-sS", url)...)
				var out counter
				var stderr bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &stderr
				p, err := testenv.RunWatched(cmd, nil)
				if err != nil {
					t.Fatal(err)
				}
				p.Stderr = stderr.String()
				if f.runCode == nil { // curl gets the whole body; fusebox prints it once
					checkFault(t, p, limit, []int{0})
					if out.n != hugeBody {
						t.Errorf("stdout had %d bytes, want %d", out.n, hugeBody)
					}
					return
				}
				checkFault(t, p, limit, f.runCode, f.runReason)
			})
		})
	}
}

// checkFault checks how a fault case ended, within limit, and logs its
// figures.
func checkFault(t *testing.T, p testenv.Proc, limit time.Duration, codes []int, reasons ...string) {
	t.Helper()
	ok := false
	for _, c := range codes {
		ok = ok || p.Code == c
	}
	if !ok {
		t.Errorf("exit %d, want one of %v\n%s", p.Code, codes, p.Stderr)
	}
	for _, reason := range reasons {
		if !strings.Contains(p.Stderr, reason) {
			t.Errorf("stderr does not hold %s:\n%s", reason, p.Stderr)
		}
	}
	if p.Took > limit {
		t.Errorf("took %s, more than the %s its deadline allows", p.Took, limit)
	}
	// The cap is 10 MiB: a process holding the 100 MiB body would show it.
	// A process may exit before the poller's first reading (on a busy
	// machine, the poller may wait for a core): then rusage's maxrss, an
	// upper bound, stands in.
	peak := p.HWM
	if peak == 0 {
		peak = p.MaxRSS
	}
	if bound := int64(64<<20) * testenv.RaceMemory; peak > bound {
		t.Errorf("fusebox's peak RSS %s (VmHWM %s, rusage %s), want under %s", mib(peak), mib(p.HWM), mib(p.MaxRSS), mib(bound))
	}
	last := ""
	if lines := logLines(p.Stderr); len(lines) > 0 {
		last = lines[len(lines)-1]
	}
	t.Logf("%s: exit %d in %s, fusebox peak RSS %s (rusage maxrss %s); %s", t.Name(), p.Code, p.Took.Round(time.Millisecond), mib(p.HWM), mib(p.MaxRSS), last)
}

// listen serves each connection to 127.0.0.1:PORT with serve, until the test
// ends; a nil serve returns a port nothing listens on.
func listen(t *testing.T, serve func(net.Conn, <-chan struct{})) string {
	t.Helper()
	if serve == nil {
		return fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	}
	addr, _ := testenv.ServeConns(t, serve)
	return addr
}

// readRequest reads a request's head, so that the client is not reset for
// unread data.
func readRequest(c net.Conn) {
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
		return
	}
	c.SetReadDeadline(time.Time{})
}

// stream writes n bytes to c, stopping when the client goes away.
func stream(c net.Conn, n int, done <-chan struct{}) {
	chunk := bytes.Repeat([]byte("0123456789abcdef"), 4096) // 64 KiB
	for n > 0 {
		select {
		case <-done:
			return
		default:
		}
		k, err := c.Write(chunk[:min(n, len(chunk))])
		if err != nil {
			return
		}
		n -= k
	}
}

// counter counts what is written to it.
type counter struct{ n int }

func (c *counter) Write(p []byte) (int, error) { c.n += len(p); return len(p), nil }
