package notify

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

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
