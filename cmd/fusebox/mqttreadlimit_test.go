package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// oversizedBroker is a test peer on loopback, not a broker: to each
// connection it answers whatever comes first with a CONNACK (MQTT v5,
// success); to the first it then sends a PUBLISH whose header claims
// 200 MB, and as much of its body as the daemon reads. It reports each
// connection it accepts on conns.
func oversizedBroker(t *testing.T) (addr string, conns <-chan int) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	accepted := make(chan int, 16)
	go func() {
		for n := 1; ; n++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
			go func() {
				buf := make([]byte, 4096)
				if _, err := c.Read(buf); err != nil {
					return
				}
				c.Write([]byte{0x20, 0x03, 0x00, 0x00, 0x00})
				accepted <- n
				if n == 1 {
					// 200,000,000 in 7-bit digits, then the body.
					c.Write([]byte{0x30, 0x80, 0x84, 0xaf, 0x5f})
					chunk := bytes.Repeat([]byte("z"), 64<<10)
					for sent := 0; sent < 200_000_000; sent += len(chunk) {
						if _, err := c.Write(chunk); err != nil {
							return
						}
					}
				}
				for {
					if _, err := c.Read(buf); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String(), accepted
}

// A broker that ignores the Maximum Packet Size the daemon asked for and
// sends a 200 MB packet costs the daemon the packet's header: one warning,
// the connection dropped and made again, and a peak resident set under
// 32 MiB (211 MB before: paho read the whole packet before any check).
func TestServeReadsNoPacketPastTheLimitItAskedFor(t *testing.T) {
	addr, conns := oversizedBroker(t)
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	d := startServe(t, state, writeConfigPath(t, dir, fmt.Sprintf(`mqtt: {broker: 'tcp://%s'}
circuits:
  zigbee:
    health:
      mqtt: {topic: %s, up: '.state == "online"'}
`, addr, bridgeTopic)))
	if n := <-conns; n != 1 {
		t.Fatalf("connection %d first", n)
	}
	if n := <-conns; n != 2 {
		t.Fatalf("connection %d second", n)
	}
	peak := peakRSS(t, d.Cmd.Process.Pid)
	t.Logf("the daemon's peak RSS after the 200 MB packet and a reconnect: %.1f MiB", float64(peak)/(1<<20))
	testenv.WaitFor(t, "the warning about the packet", func() bool {
		return strings.Contains(d.Stderr.String(), "more than the 1048576 asked for")
	})
	if n := strings.Count(d.Stderr.String(), "more than the 1048576 asked for"); n != 1 {
		t.Errorf("%d lines about the packet, want one:\n%s", n, d.Stderr)
	}
	if bound := int64(32<<20) * testenv.RaceMemory; peak > bound { // a race-built daemon holds more
		t.Errorf("the daemon's peak RSS is %d MiB, want at most %d: it read the packet", peak>>20, bound>>20)
	}
}
