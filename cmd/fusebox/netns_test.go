package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// The two-hosts tests of redis_test.go share one network stack. These put
// each host in a network namespace of its own, with its own address, and
// the redis-server in a third, bound only to its namespace's address:
//
//	ns a  10.231.0.2/30 ──veth── 10.231.0.1/30  ns srv  10.231.0.9/32 (lo, redis-server)
//	ns b  10.231.0.6/30 ──veth── 10.231.0.5/30
//
// Each host reaches Redis over its veth by a route, so a call from either
// crosses a network. The 10.231.0.0/28 addresses exist only inside the
// namespaces the test creates; the host's own interfaces are never touched,
// and every namespace (with its veths) and the redis-server are removed in
// the test's cleanup.
const (
	netnsRedisAddr = "10.231.0.9"
	netnsRedisPort = "6379" // the namespace is the test's own: no port to share
)

// netnsHost is a host in a network namespace of its own.
type netnsHost struct {
	host
	ns string
}

// fb runs the fusebox binary inside h's namespace.
func (h netnsHost) fb(t *testing.T, args ...string) testenv.Proc {
	t.Helper()
	return testenv.Run(t, h.cmd(args...))
}

func (h netnsHost) cmd(args ...string) *exec.Cmd {
	return inNetns(h.ns, h.host.cmd(args...))
}

// status reads the circuit's row inside h's namespace: the test process
// itself cannot reach Redis.
func (h netnsHost) status(t *testing.T, name string) map[string]any {
	t.Helper()
	p := h.fb(t, "status", "--json", name)
	if p.Code != 0 {
		t.Fatalf("status in %s: exit %d: %s", h.ns, p.Code, p.Stderr)
	}
	return decodeRow(t, p.Stdout)
}

// inNetns makes cmd run inside the network namespace ns. `ip netns exec`
// execs the command after setns, so its PID is the command's own.
func inNetns(ns string, cmd *exec.Cmd) *exec.Cmd {
	ip, _ := exec.LookPath("ip")
	cmd.Args = append([]string{ip, "netns", "exec", ns}, cmd.Args...)
	cmd.Path = ip
	return cmd
}

// ip runs ip(8) with args, failing the test on an error.
func ip(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// netnsTopology creates the namespaces srv, a and b of the picture above,
// named after the test's PID, and returns their names. Without root or ip(8),
// or where the kernel refuses a namespace, it skips through testenv.Skip.
func netnsTopology(t *testing.T) (srv, a, b string) {
	t.Helper()
	testenv.Heavy(t) // ip netns add: namespaces named in /run/netns, the host's
	if os.Geteuid() != 0 {
		testenv.Skip(t, "network namespaces need root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		testenv.Skip(t, "ip(8) is not installed (apt-get install iproute2)")
	}
	prefix := fmt.Sprintf("fusebox-test-%d-", os.Getpid())
	srv, a, b = prefix+"srv", prefix+"a", prefix+"b"
	for _, ns := range []string{srv, a, b} {
		if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
			testenv.Skip(t, "cannot create a network namespace: ip netns add %s: %v: %s", ns, err, out)
		}
		t.Cleanup(func() {
			if out, err := exec.Command("ip", "netns", "delete", ns).CombinedOutput(); err != nil {
				t.Errorf("ip netns delete %s: %v: %s", ns, err, out)
			}
		})
		ip(t, "-n", ns, "link", "set", "lo", "up")
	}
	// Each veth is created inside srv with its peer moved straight into the
	// host's namespace, so no interface ever appears in the host's own.
	for _, l := range []struct{ ns, srvSide, hostSide string }{
		{a, "10.231.0.1/30", "10.231.0.2/30"},
		{b, "10.231.0.5/30", "10.231.0.6/30"},
	} {
		side := "to-" + l.ns[len(prefix):]
		ip(t, "-n", srv, "link", "add", side, "type", "veth", "peer", "name", "eth0", "netns", l.ns)
		ip(t, "-n", srv, "addr", "add", l.srvSide, "dev", side)
		ip(t, "-n", srv, "link", "set", side, "up")
		ip(t, "-n", l.ns, "addr", "add", l.hostSide, "dev", "eth0")
		ip(t, "-n", l.ns, "link", "set", "eth0", "up")
		gateway, _, _ := strings.Cut(l.srvSide, "/")
		ip(t, "-n", l.ns, "route", "add", netnsRedisAddr+"/32", "via", gateway)
	}
	ip(t, "-n", srv, "addr", "add", netnsRedisAddr+"/32", "dev", "lo")
	return srv, a, b
}

// startRedisIn starts redis-server inside ns, bound to netnsRedisAddr only,
// and returns once it accepts connections. The cleanup kills it by its PID.
func startRedisIn(t *testing.T, ns string) {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		testenv.Skip(t, "redis-server is not installed (apt-get install redis-server)")
	}
	logPath := filepath.Join(t.TempDir(), "redis.log")
	logs, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	cmd := inNetns(ns, exec.Command(bin, "--port", netnsRedisPort, "--bind", netnsRedisAddr,
		"--save", "", "--appendonly", "no", "--daemonize", "no", "--loglevel", "notice",
		// Protected mode refuses every client not on loopback when the
		// server has no password; this one listens only inside the
		// test's own namespaces.
		"--protected-mode", "no"))
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("start redis-server in %s: %v", ns, err)
	}
	var exited atomic.Bool
	done := make(chan struct{})
	go func() { cmd.Wait(); exited.Store(true); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
	})
	testenv.WaitFor(t, "redis-server to accept connections in "+ns, func() bool {
		b, _ := os.ReadFile(logPath)
		if exited.Load() {
			t.Fatalf("redis-server exited in %s:\n%s", ns, b)
		}
		return strings.Contains(string(b), "Ready to accept connections")
	})
}

// TestRedisAcrossNetworkNamespaces is the "two hosts" done for real:
// two network stacks, each with its own address, reaching one redis-server
// over a veth. A failure seen in one trips the circuit for the other, and of
// 20 callers spread over both, exactly one probes.
func TestRedisAcrossNetworkNamespaces(t *testing.T) {
	srv, nsA, nsB := netnsTopology(t)
	startRedisIn(t, srv)
	url := "redis://" + netnsRedisAddr + ":" + netnsRedisPort + "/0?dial_timeout=10s&read_timeout=10s&write_timeout=10s"
	a, b := netnsHost{newHostAt(t, url), nsA}, netnsHost{newHostAt(t, url), nsB}

	t.Run("a failure in one namespace trips the circuit for the other", func(t *testing.T) {
		policy := []string{"--attempts", "1", "--trip-after", "1", "--open-for", "10m"}
		if p := a.fb(t, testenv.RunArgs("zigbee", policy, "false")...); p.Code != 1 || strings.Contains(p.Stderr, "unreachable") {
			t.Fatalf("in %s: exit %d, want the command's 1 with Redis reached:\n%s", a.ns, p.Code, p.Stderr)
		}
		ran := filepath.Join(t.TempDir(), "ran")
		p := b.fb(t, testenv.RunArgs("zigbee", policy, "touch", ran)...)
		if p.Code != exitOpen {
			t.Fatalf("in %s: exit %d, want 75 (skipped on the circuit tripped in %s):\n%s", b.ns, p.Code, a.ns, p.Stderr)
		}
		if _, err := os.Stat(ran); err == nil {
			t.Errorf("%s ran the command on an open circuit", b.ns)
		}
		if st := b.status(t, "zigbee"); st["state"] != "open" || st["skipped"] != float64(1) || st["total_failures"] != float64(1) {
			t.Errorf("status in %s: %v; want open, 1 failure (from %s) and 1 skip", b.ns, st, a.ns)
		}
	})

	t.Run("of 20 callers over both namespaces exactly one probes", func(t *testing.T) {
		hosts := []netnsHost{a, b}
		// The probe's lease (timeout + 2s) outlasts the wait for the 20.
		policy := []string{"--attempts", "1", "--open-for", "300ms", "--trip-after", "1", "--timeout", "2m"}
		if p := b.fb(t, testenv.RunArgs("bridge", policy, "false")...); p.Code != 1 || strings.Contains(p.Stderr, "unreachable") {
			t.Fatalf("tripping run in %s: exit %d:\n%s", b.ns, p.Code, p.Stderr)
		}
		testenv.WaitFor(t, "the open period to end", func() bool { return a.status(t, "bridge")["state"] == "half_open" })

		// The probe's command blocks until every caller has decided (run
		// its command or exited), so the other 19 find the lease held
		// however slow the machine is.
		probeRace(t, 20, func(i int, command string) int {
			p := hosts[i%2].fb(t, testenv.RunArgs("bridge", policy, "sh", "-c", command)...)
			if strings.Contains(p.Stderr, "unreachable") {
				t.Errorf("caller %d in %s fell back to its local dir:\n%s", i, hosts[i%2].ns, p.Stderr)
			}
			return p.Code
		})
		if st := a.status(t, "bridge"); st["state"] != "closed" {
			t.Errorf("after the probe succeeded, status in %s: %v, want closed", a.ns, st["state"])
		}
	})
	a.neverFellBack(t)
	b.neverFellBack(t)
}
