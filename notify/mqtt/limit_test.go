package mqtt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/autopaho"
	"github.com/eclipse/paho.golang/packets"
)

// conn is a net.Conn whose reads come from r, at most chunk bytes each.
type chunkConn struct {
	net.Conn
	r     io.Reader
	chunk int
	read  int
}

func (c *chunkConn) Read(p []byte) (int, error) {
	n, err := c.r.Read(p[:min(len(p), c.chunk)])
	c.read += n
	return n, err
}

// Packets within the limit reach paho's reader whole, however the reads
// cut them; a header claiming more is refused before paho has its length,
// and before the bytes after it are read.
func TestPacketsPastTheLimitAreNotRead(t *testing.T) {
	var stream bytes.Buffer
	small := []*packets.ControlPacket{
		{FixedHeader: packets.FixedHeader{Type: packets.PINGRESP}, Content: &packets.Pingresp{}},
		{FixedHeader: packets.FixedHeader{Type: packets.PUBLISH}, Content: &packets.Publish{Topic: "t", Payload: bytes.Repeat([]byte("x"), 200_000), Properties: &packets.Properties{}}},
		{FixedHeader: packets.FixedHeader{Type: packets.PUBLISH}, Content: &packets.Publish{Topic: "u", Payload: []byte("online"), Properties: &packets.Properties{}}},
	}
	for _, p := range small {
		if _, err := p.WriteTo(&stream); err != nil {
			t.Fatal(err)
		}
	}
	good := stream.Len()
	// A PUBLISH whose length says 200 MB (0x30, then 200,000,000 in
	// 7-bit digits), and the start of its body.
	stream.Write([]byte{0x30, 0x80, 0x84, 0xaf, 0x5f})
	stream.WriteString(strings.Repeat("z", 4096))

	for _, chunk := range []int{1, 7, 64 << 10} {
		c := &chunkConn{r: bytes.NewReader(stream.Bytes()), chunk: chunk}
		lc := &packetLimit{Conn: c, max: MaxPacket}
		for i := range small {
			cp, err := packets.ReadPacket(lc)
			if err != nil || cp.Type != small[i].Type {
				t.Fatalf("reads of %d bytes: packet %d: %v, %v; want it read", chunk, i, cp, err)
			}
		}
		_, err := packets.ReadPacket(lc)
		if err == nil || !strings.Contains(err.Error(), "a packet of 200000000 bytes, more than the 1048576 asked for") {
			t.Fatalf("reads of %d bytes: the 200 MB packet: %v, want it refused", chunk, err)
		}
		if c.read > good+5+chunk {
			t.Errorf("reads of %d bytes: %d bytes read, want at most the good packets, the header and one read (%d)", chunk, c.read, good+5+chunk)
		}
		if _, again := lc.Read(make([]byte, 10)); !errors.Is(again, err) {
			t.Errorf("reads of %d bytes: a read after the refusal: %v, want the refusal", chunk, again)
		}
	}
}

// Packets written at once from several goroutines, as paho's publishes,
// subscribes and pinger do, reach the broker whole through the read limit's
// connection: each one's header and body stay together.
func TestPacketsWrittenAtOnceReachTheBrokerWhole(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	const writers, each = 8, 2000
	got := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- err
			return
		}
		defer c.Close()
		for i := range writers * each {
			p, err := packets.ReadPacket(c)
			if err != nil {
				got <- fmt.Errorf("packet %d: %w", i, err)
				return
			}
			pub, ok := p.Content.(*packets.Publish)
			if !ok || !strings.HasPrefix(string(pub.Payload), pub.Topic+":") {
				got <- fmt.Errorf("packet %d: %v, not one writer's whole publish", i, p)
				return
			}
		}
		got <- nil
	}()
	u := &url.URL{Scheme: "mqtt", Host: ln.Addr().String()}
	conn, err := dialLimited(context.Background(), autopaho.ClientConfig{ConnectTimeout: time.Minute}, u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			topic := fmt.Sprintf("w%d", w)
			for i := range each {
				p := &packets.ControlPacket{FixedHeader: packets.FixedHeader{Type: packets.PUBLISH},
					Content: &packets.Publish{Topic: topic, Payload: fmt.Appendf(nil, "%s:%d", topic, i), Properties: &packets.Properties{}}}
				if _, err := p.WriteTo(conn); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := <-got; err != nil {
		t.Fatal(err)
	}
}
