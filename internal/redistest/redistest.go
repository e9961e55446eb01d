// Package redistest starts a real redis-server for tests, on a free
// loopback port, without persistence, and stops it by its PID.
package redistest

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// Server is one redis-server a test started. Its methods are not safe for
// concurrent use.
type Server struct {
	t    testing.TB
	bin  string
	Port int
	cmd  *exec.Cmd
	done chan struct{}
}

// Start starts redis-server on a free port of 127.0.0.1 and returns once it
// answers PING. The test's cleanup stops it. It skips (testenv.Skip) when
// redis-server is not installed.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		testenv.Skip(t, "redis-server is not installed (apt-get install redis-server)")
	}
	s := &Server{t: t, bin: bin}
	var last error
	for range 5 { // a free port may be taken before the server binds it
		s.Port = testenv.FreePort(t)
		if last = s.start(); last == nil {
			t.Cleanup(s.Kill)
			return s
		}
	}
	t.Fatalf("start redis-server: %v", last)
	return nil
}

// Addr is host:port.
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.Port) }

// URL is the redis:// URL of database 0.
func (s *Server) URL() string { return "redis://" + s.Addr() + "/0" }

func (s *Server) start() error {
	cmd := exec.Command(s.bin, "--port", strconv.Itoa(s.Port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--daemonize", "no", "--loglevel", "warning", "--enable-debug-command", "local")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if reply, err := s.try("PING"); err == nil && reply == "+PONG" {
			s.cmd, s.done = cmd, done
			return nil
		}
		select {
		case <-done:
			return fmt.Errorf("redis-server exited: %s", out.String())
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			<-done
			return fmt.Errorf("redis-server did not answer PING in 10s: %s", out.String())
		}
	}
}

// Kill stops the server with SIGKILL, by its PID, and waits for it to exit.
// Killing a stopped server does nothing.
func (s *Server) Kill() {
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Kill()
	<-s.done
	s.cmd = nil
}

// Restart kills the server and starts an empty one on the same port.
func (s *Server) Restart() {
	s.t.Helper()
	s.Kill()
	if err := s.start(); err != nil {
		s.t.Fatalf("restart redis-server: %v", err)
	}
}

// Do sends one command and returns the first line of its reply ("+OK",
// ":3", "-ERR ...").
func (s *Server) Do(args ...string) string {
	s.t.Helper()
	reply, err := s.try(args...)
	if err != nil {
		s.t.Fatalf("redis %s: %v", strings.Join(args, " "), err)
	}
	return reply
}

// Info returns one field of INFO, such as "total_connections_received".
func (s *Server) Info(field string) string {
	s.t.Helper()
	c, err := net.DialTimeout("tcp", s.Addr(), time.Second)
	if err != nil {
		s.t.Fatalf("redis INFO: %v", err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprint(c, "*1\r\n$4\r\nINFO\r\n")
	r := bufio.NewReader(c)
	head, err := r.ReadString('\n')
	if err != nil || !strings.HasPrefix(head, "$") {
		s.t.Fatalf("redis INFO: %q, %v", head, err)
	}
	n, _ := strconv.Atoi(strings.TrimSpace(head[1:]))
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		s.t.Fatalf("redis INFO: %v", err)
	}
	for _, line := range strings.Split(string(body), "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return v
		}
	}
	s.t.Fatalf("redis INFO has no %s", field)
	return ""
}

func (s *Server) try(args ...string) (string, error) {
	c, err := net.DialTimeout("tcp", s.Addr(), time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := c.Write([]byte(b.String())); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return strings.TrimRight(line, "\r\n"), err
}
