package httpcall_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/httpcall"
	"github.com/fusebox-hq/fusebox/internal/testenv"
)

func TestNetworkFailures(t *testing.T) {
	reset := serve(t, func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		_ = conn.(*net.TCPConn).SetLinger(0) // close with RST
		conn.Close()
	})
	// Only the case about a timeout has a short one: on a busy machine a
	// refusal or a reset must not turn into a timeout.
	tests := []struct {
		name       string
		url        string
		timeout    time.Duration
		wantReason string
	}{
		{"connection refused", fmt.Sprintf("http://127.0.0.1:%d", testenv.FreePort(t)), time.Second, "attempts exhausted after 3 attempts: connection refused"},
		{"connection reset", reset.URL, time.Second, "attempts exhausted after 3 attempts: connection reset"},
		{"server never answers", "http://" + silentServer(t), 50 * time.Millisecond, "attempts exhausted after 3 attempts: timeout after 50ms: no response"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, []*httpcall.Endpoint{endpoint("svc", tt.url, func(e *httpcall.Endpoint) {
				e.Policy.Retry.Timeout = tt.timeout
			})}, nil)
			start := time.Now()
			res, ce := h.mustFail("svc")
			if took := time.Since(start); took > 2*time.Second { // below the 3s deadline
				t.Errorf("took %s", took)
			}
			if ce.Error() != "svc: "+tt.wantReason {
				t.Errorf("error %q, want %q", ce.Error(), "svc: "+tt.wantReason)
			}
			if res.Attempts != 3 || h.counts("svc").Failures != 3 {
				t.Errorf("%d attempts, %d counted; want 3 and 3", res.Attempts, h.counts("svc").Failures)
			}
		})
	}
}

func TestTimeoutNotInRetryOnIsNotRetried(t *testing.T) {
	h := newHarness(t, []*httpcall.Endpoint{endpoint("svc", "http://"+silentServer(t), func(e *httpcall.Endpoint) {
		e.Policy.Retry.Timeout = 30 * time.Millisecond
		e.RetryOn.Timeout = false
	})}, nil)
	if res, _ := h.mustFail("svc"); res.Attempts != 1 {
		t.Errorf("%d attempts, want 1", res.Attempts)
	}
}

// unreachable dials fail as they do on a machine whose network is down: the
// one fake here, since such a network cannot be made on 127.0.0.1.
func unreachable(errno syscall.Errno) *http.Transport {
	return &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		return nil, &net.OpError{Op: "dial", Net: network, Err: os.NewSyscallError("connect", errno)}
	}}
}

func TestLocalNetworkFailureDoesNotTrip(t *testing.T) {
	for errno, reason := range map[syscall.Errno]string{
		syscall.ENETUNREACH:  "local network: network unreachable",
		syscall.EHOSTUNREACH: "local network: no route to host",
	} {
		t.Run(reason, func(t *testing.T) {
			h := newHarness(t, []*httpcall.Endpoint{endpoint("svc", "http://192.0.2.1/", func(e *httpcall.Endpoint) {
				e.Method = "POST" // a dial failure is retried even for a POST
				e.Policy.Breaker.TripAfter = 1
			})}, nil, httpcall.WithTransport(unreachable(errno)))
			res, ce := h.mustFail("svc")
			wantContains(t, "error", ce.Error(), "attempts exhausted after 3 attempts: "+reason)
			st := h.state("svc")
			if res.Attempts != 3 || st.Phase != breaker.Closed || h.counts("svc").Failures != 0 || st.ConsecutiveFailures != 0 {
				t.Errorf("%d attempts, circuit %+v; want 3 attempts, closed, nothing counted", res.Attempts, st)
			}
		})
	}
}

// dnsServer answers every query on 127.0.0.1 with NXDOMAIN.
func dnsServer(t *testing.T) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		buf := make([]byte, 1500)
		for {
			n, addr, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if n < 12 {
				continue
			}
			resp := append([]byte(nil), buf[:n]...)
			resp[2] |= 0x84                   // a response, authoritative
			resp[3] = resp[3]&0x70 | 0x80 | 3 // recursion available, NXDOMAIN
			_, _ = pc.WriteTo(resp, addr)
		}
	})
	t.Cleanup(func() {
		pc.Close()
		wg.Wait()
	})
	return pc.LocalAddr().String()
}

// resolvingTransport resolves names with Go's resolver, asking dnsAddr over
// network (udp or tcp).
func resolvingTransport(network, dnsAddr string) *http.Transport {
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, dnsAddr)
	}}
	d := &net.Dialer{Resolver: r}
	return &http.Transport{DialContext: d.DialContext}
}

func TestDNS(t *testing.T) {
	tests := []struct {
		name       string
		network    string
		dns        string
		wantReason string
		wantCount  uint64
	}{
		{"name not found counts", "udp", dnsServer(t), "attempts exhausted after 3 attempts: DNS: no such host ha.fusebox.test", 3},
		// Over TCP to a port bound but not listening: refused at once, by a
		// reset. Over UDP the refusal is an ICMP message, which the kernel
		// rate-limits per destination (net.ipv4.icmp_ratelimit, 1 s here, and
		// every test sends to 127.0.0.1), and a closed port may be
		// taken by another test: in one CI run some queries got no answer
		// at all and the call ran into its deadline.
		{"no DNS server is local", "tcp", refusingTCPPort(t), "attempts exhausted after 3 attempts: local network: no DNS server reachable", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, []*httpcall.Endpoint{endpoint("ha", "http://ha.fusebox.test:8123/api/")}, nil,
				httpcall.WithTransport(resolvingTransport(tt.network, tt.dns)))
			_, ce := h.mustFail("ha")
			wantContains(t, "error", ce.Error(), tt.wantReason)
			if got := h.counts("ha").Failures; got != tt.wantCount {
				t.Errorf("%d failures counted, want %d", got, tt.wantCount)
			}
		})
	}
}

// refusingTCPPort returns a loopback address where a TCP socket is bound
// but not listening, for the test's lifetime: every connection to it is
// refused, and no other socket can take the port meanwhile.
func refusingTCPPort(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	syscall.CloseOnExec(fd)
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(sa.(*syscall.SockaddrInet4).Port))
}
