package main

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/internal/redistest"
	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// monitor watches the commands srv is sent (MONITOR) until stop, which
// returns those of clients other than the test's own, in order, as
// "command" or, for a script, "evalsha"; the commands a script calls
// inside Redis are left out (they cost no round trip), and so is the
// connection each came on, counted in conns.
func monitor(t *testing.T, srv *redistest.Server) (stop func() (cmds []string, conns int)) {
	t.Helper()
	c, err := net.DialTimeout("tcp", srv.Addr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprint(c, "*1\r\n$7\r\nMONITOR\r\n")
	r := bufio.NewReader(c)
	if line, err := r.ReadString('\n'); err != nil || !strings.HasPrefix(line, "+OK") {
		t.Fatalf("MONITOR: %q, %v", line, err)
	}
	return func() ([]string, int) {
		const end = "end-of-the-run-watched"
		srv.Do("ECHO", end)
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(time.Minute))
		addrs := map[string]bool{}
		var cmds []string
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatalf("MONITOR: %v, after %q", err, cmds)
			}
			if strings.Contains(line, end) {
				return cmds, len(addrs)
			}
			// +1733130000.123456 [0 127.0.0.1:40000] "evalsha" "…" …
			_, rest, _ := strings.Cut(line, "[")
			from, rest, _ := strings.Cut(rest, "] ")
			if strings.HasSuffix(from, " lua") {
				continue
			}
			addrs[from] = true
			name, _, _ := strings.Cut(strings.Trim(rest, "\r\n"), " ")
			cmds = append(cmds, strings.ToLower(strings.Trim(name, `"`)))
		}
	}
}

// Issue 29: a fail-fast run on Redis is a connect and three round trips
// (HELLO, the read of the state, the count of the skip) and a healthy run
// four (HELLO, two reads, the count; the fast path's read before the
// config went with it), each command one script; the
// process dials once. Counted from Redis's own MONITOR, so that a new round
// trip anywhere in the process shows.
func TestRedisRunsCostTheirRoundTripsAndNoMore(t *testing.T) {
	srv := redistest.Start(t)
	h := newHost(t, srv)
	if p := h.fb(t, "trip", "--new", "nas"); p.Code != 0 {
		t.Fatalf("trip: exit %d:\n%s", p.Code, p.Stderr)
	}
	for _, c := range []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"fail-fast", testenv.RunArgs("nas", nil, "true"), exitOpen, []string{"hello", "evalsha", "evalsha"}},
		{"healthy", testenv.RunArgs("ok", nil, "true"), 0, []string{"hello", "evalsha", "evalsha", "evalsha"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h.fb(t, c.args...) // Redis has the scripts: a fresh Redis costs one more round trip for each
			stop := monitor(t, srv)
			p := h.fb(t, c.args...)
			cmds, conns := stop()
			if p.Code != c.code {
				t.Fatalf("exit %d, want %d:\n%s", p.Code, c.code, p.Stderr)
			}
			if strings.Join(cmds, " ") != strings.Join(c.want, " ") || conns != 1 {
				t.Errorf("the run sent %q on %d connections; want %q on 1", cmds, conns, c.want)
			}
		})
	}
}
