package mqtt

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"sync"

	"github.com/eclipse/paho.golang/autopaho"
)

// packetLimit is a connection to a broker that bounds each packet the
// broker sends to max bytes. paho sizes its buffer by the length a
// packet's header claims (up to 256 MB) and reads the whole packet before
// anything compares it with the Maximum Packet Size the CONNECT asked for,
// and it has no read limit of its own: a broker that ignores the limit
// would cost the daemon the packet. packetLimit follows the stream's
// framing only (a byte of type and flags, a length in one to four 7-bit
// digits, then that many bytes), never the packets, and fails the read
// that completes a length over max, before paho has the length: paho
// drops the connection, which is logged once as lost and made again with
// backoff. After that, every read fails. Reads come from paho's one
// reading goroutine; it is not safe for concurrent reads.
//
// Writes come from several goroutines (publishes, subscribes, the
// pinger). paho writes a packet as its header and its body, in one writev
// on a *net.TCPConn, but as several Writes on any other net.Conn, and
// holds the connection's lock around them when the connection is a
// sync.Locker: packetLimit is one, or two packets written at once would
// interleave and the broker would drop the connection as malformed (0x81).
type packetLimit struct {
	net.Conn
	sync.Mutex // paho's lock around each packet's writes
	max        int64
	remaining  int64 // bytes of the current packet still to come
	inLength   bool  // reading the length's digits
	length     int64
	shift      uint
	err        error
}

func (c *packetLimit) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.Conn.Read(p)
	for i := 0; i < n; {
		switch {
		case c.remaining > 0:
			k := min(c.remaining, int64(n-i))
			c.remaining -= k
			i += int(k)
		case !c.inLength: // the type and flags
			c.inLength, c.length, c.shift = true, 0, 0
			i++
		default:
			d := p[i]
			i++
			c.length |= int64(d&0x7f) << c.shift
			c.shift += 7
			if d&0x80 != 0 && c.shift < 28 {
				continue
			}
			c.inLength = false
			if c.length > c.max {
				c.err = fmt.Errorf("the broker sent a packet of %d bytes, more than the %d asked for on connecting (Maximum Packet Size): not read", c.length, c.max)
				return 0, c.err
			}
			c.remaining = c.length
		}
	}
	return n, err
}

// dialLimited dials the broker as autopaho would for tcp:// and mqtt://
// (the schemes config accepts), within cfg.ConnectTimeout, and bounds the
// packets it may send to MaxPacket.
func dialLimited(ctx context.Context, cfg autopaho.ClientConfig, u *url.URL) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", u.Host)
	if err != nil {
		return nil, err
	}
	return &packetLimit{Conn: conn, max: MaxPacket}, nil
}
