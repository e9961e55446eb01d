package mqtt

import (
	"errors"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// paho tells why a connection ended on a goroutine of its own, after
// autopaho has reported it down: in either order, the loss is logged once,
// with its reason; without one, once, after lostWait.
func TestALostConnectionIsLoggedOnceWithItsReasonInEitherOrder(t *testing.T) {
	reason := errors.New("the broker sent a packet of 200000000 bytes")
	synctest.Test(t, func(t *testing.T) {
		for _, order := range []string{"reason first", "loss first", "no reason"} {
			var logs testenv.Buffer
			c := &Conn{log: slog.New(slog.NewTextHandler(&logs, nil))}
			switch order {
			case "reason first":
				c.why(reason)
				c.lost()
			case "loss first":
				c.lost()
				c.why(reason)
			case "no reason":
				c.lost()
			}
			time.Sleep(2 * lostWait)
			synctest.Wait()
			got := logs.String()
			if n := strings.Count(got, "connection lost"); n != 1 {
				t.Errorf("%s: %d warnings of the loss, want 1:\n%s", order, n, got)
			}
			if want := order != "no reason"; strings.Contains(got, reason.Error()) != want {
				t.Errorf("%s: the warning names the reason: %v, want %v:\n%s", order, !want, want, got)
			}
		}
	})
}
