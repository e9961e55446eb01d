package notify

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// HeartbeatKind is the protocol of a heartbeat URL.
type HeartbeatKind string

// The heartbeat kinds.
const (
	// Healthchecks is healthchecks.io's ping protocol (also self-hosted
	// Healthchecks): GET URL after a good run, POST URL/fail with the
	// reason after a failed one.
	Healthchecks HeartbeatKind = "healthchecks"
	// UptimeKuma is an Uptime Kuma push monitor's URL: GET it with
	// status=up or status=down and msg.
	UptimeKuma HeartbeatKind = "uptime_kuma"
)

// HeartbeatKinds lists the heartbeat kinds, for config errors.
var HeartbeatKinds = []HeartbeatKind{Healthchecks, UptimeKuma}

// Heartbeat is a URL pinged after each run of a circuit, so that a monitor
// notices when runs stop coming, or fail.
type Heartbeat struct {
	URL       string
	Kind      HeartbeatKind // default Healthchecks
	Redirects Redirects     // which redirects are followed; "" is RedirectsSameHost
}

// Ping tells hb how a run went: ok, or failed with msg.
func Ping(ctx context.Context, client *http.Client, hb Heartbeat, ok bool, msg string) error {
	u, err := url.Parse(hb.URL)
	if err != nil {
		return fmt.Errorf("heartbeat URL: %w", err)
	}
	method, body := http.MethodGet, ""
	switch hb.Kind {
	case UptimeKuma:
		q := u.Query()
		status := "up"
		if !ok {
			status = "down"
		}
		if msg == "" {
			msg = "OK"
		}
		q.Set("status", status)
		q.Set("msg", msg)
		q.Set("ping", "")
		u.RawQuery = q.Encode()
	default:
		if !ok {
			u.Path = strings.TrimSuffix(u.Path, "/") + "/fail"
			method, body = http.MethodPost, msg
		}
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("User-Agent", "fusebox")
	return send(client, req, hb.Redirects, nil)
}
