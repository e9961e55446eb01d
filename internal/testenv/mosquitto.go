package testenv

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Mosquitto starts a Mosquitto broker on a free port of 127.0.0.1, anonymous
// access allowed, and returns its address (host:port). It is stopped, by
// its PID, when the test ends. Without mosquitto on PATH (or in /usr/sbin)
// the test skips through Skip.
func Mosquitto(t testing.TB) string {
	t.Helper()
	return MosquittoOn(t, FreePort(t))
}

// MosquittoOn is Mosquitto on the given port of 127.0.0.1: one a client
// was told of before the broker runs.
func MosquittoOn(t testing.TB, port int) string {
	t.Helper()
	return StartMosquitto(t, port).Addr
}

// Broker is a running Mosquitto that a test may stop before it ends (a
// broker that goes away; StartMosquitto on the same port brings one back,
// empty).
type Broker struct {
	Addr string
	stop func()
	term func()
}

// Stop kills the broker, by its PID, and waits for it to exit.
func (b *Broker) Stop() { b.stop() }

// Terminate asks the broker to stop (SIGTERM, by its PID: it tells its
// clients it is shutting down) and waits for it to exit.
func (b *Broker) Terminate() { b.term() }

// StartMosquitto is MosquittoOn, returning the broker so that the test
// can stop it.
func StartMosquitto(t testing.TB, port int) *Broker {
	t.Helper()
	return StartMosquittoWith(t, port, "allow_anonymous true\n")
}

// StartMosquittoWith is StartMosquitto with lines of mosquitto.conf
// (allow_anonymous, password_file, acl_file...), in place of anonymous
// access for all.
func StartMosquittoWith(t testing.TB, port int, lines string) *Broker {
	t.Helper()
	bin, err := exec.LookPath("mosquitto")
	if err != nil {
		if _, serr := os.Stat("/usr/sbin/mosquitto"); serr != nil {
			Skip(t, "mosquitto is not installed (apt-get install mosquitto)")
		}
		bin = "/usr/sbin/mosquitto"
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "mosquitto.conf")
	text := fmt.Sprintf("listener %d 127.0.0.1\npersistence false\n", port) + lines
	if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	logs, err := os.Create(filepath.Join(dir, "mosquitto.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	cmd := exec.Command(bin, "-c", conf)
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("start mosquitto: %v", err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cmd.Process.Kill()
			<-done
		})
	}
	term := func() {
		once.Do(func() {
			cmd.Process.Signal(syscall.SIGTERM)
			<-done
		})
	}
	t.Cleanup(stop)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return &Broker{Addr: addr, stop: stop, term: term}
		}
		select {
		case <-done:
			b, _ := os.ReadFile(logs.Name())
			t.Fatalf("mosquitto exited: %s", b)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("mosquitto does not listen on %s: %v", addr, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
