package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/redirect"
)

// WebhookBody is the JSON object of the json and homeassistant formats.
type WebhookBody struct {
	Circuit     string  `json:"circuit"`
	Event       Kind    `json:"event"`
	Title       string  `json:"title"`
	Message     string  `json:"message"`
	Time        string  `json:"time"`
	Since       string  `json:"since"`
	DownSeconds float64 `json:"down_seconds"`
	// LastFailureAt and DownAtLeastSeconds bound a closing's outage from
	// below: it came back after its last failure.
	LastFailureAt      string  `json:"last_failure_at,omitempty"`
	DownAtLeastSeconds float64 `json:"down_at_least_seconds,omitempty"`
	Reason             string  `json:"reason,omitempty"`
	LastFailure        string  `json:"last_failure,omitempty"`
	FailedProbes       int     `json:"failed_probes"`
	Changes            int     `json:"changes,omitempty"` // flapping and settled: transitions since since
}

// Body returns the json and homeassistant formats' object for m.
func Body(m Message) WebhookBody {
	b := WebhookBody{
		Circuit: m.Circuit, Event: m.Kind, Title: m.Title(), Message: m.Text(),
		Time: m.Time.UTC().Format(timeFormat), Since: m.Since.UTC().Format(timeFormat),
		DownSeconds: float64(m.Down.Milliseconds()) / 1000, Reason: m.Reason, LastFailure: m.LastFailure,
		FailedProbes: m.FailedProbes, Changes: m.Changes,
	}
	if !m.LastFailureAt.IsZero() {
		b.LastFailureAt, b.DownAtLeastSeconds = m.LastFailureAt.UTC().Format(timeFormat), float64(m.DownAtLeast.Milliseconds())/1000
	}
	return b
}

const timeFormat = "2006-01-02T15:04:05.000Z07:00"

// webhookSink posts messages to one webhook.
type webhookSink struct {
	hook   Webhook
	client *http.Client
}

func (w *webhookSink) String() string { return "webhook " + redactURL(w.hook.URL) }

func (w *webhookSink) Send(ctx context.Context, _ breaker.Event, m *Message) error {
	if m == nil {
		return nil
	}
	req, err := w.request(ctx, *m)
	if err != nil {
		return err
	}
	for k, v := range w.hook.Headers {
		req.Header.Set(k, v)
	}
	return send(w.client, req, w.hook.Redirects, w.hook.Headers)
}

// send sends req with client under the redirect policy p (headers being
// the configured ones) and wants a 2xx.
func send(client *http.Client, req *http.Request, p redirect.Policy, headers map[string]string) error {
	hc := *client
	hc.CheckRedirect = redirect.Check(p, headers)
	resp, err := hc.Do(req)
	if err != nil {
		return withoutURL(err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if reason := redirect.Refused(p, resp, redactURL); reason != "" {
		return errors.New(reason)
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}

func (w *webhookSink) request(ctx context.Context, m Message) (*http.Request, error) {
	var body []byte
	contentType := "application/json"
	switch w.hook.Format {
	case Ntfy:
		body, contentType = []byte(m.Text()), "text/plain; charset=utf-8"
	case Gotify:
		priority := 8
		if m.Up() {
			priority = 4
		}
		body, _ = json.Marshal(map[string]any{"title": m.Title(), "message": m.Text(), "priority": priority})
	default:
		body, _ = json.Marshal(Body(m))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.hook.URL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("User-Agent", "fusebox")
	if w.hook.Format == Ntfy {
		req.Header.Set("Title", m.Title())
		switch {
		case m.Up():
			req.Header.Set("Tags", "white_check_mark")
			req.Header.Set("Priority", "default")
		default:
			req.Header.Set("Tags", "warning")
			req.Header.Set("Priority", "high")
		}
	}
	return req, nil
}

// withoutURL drops the URL from a client's error: its path or query may
// hold a token (an ntfy topic is one).
func withoutURL(err error) error {
	var uerr *url.Error
	if errors.As(err, &uerr) {
		return fmt.Errorf("%s: %w", uerr.Op, uerr.Err)
	}
	return err
}

// redactURL keeps a URL's scheme and host, for logs: its path and query may
// hold a token.
func redactURL(s string) string {
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		return "REDACTED"
	}
	host, _, _ := strings.Cut(rest, "/")
	host, _, _ = strings.Cut(host, "?")
	if _, h, ok := strings.Cut(host, "@"); ok {
		host = h
	}
	return scheme + "://" + host + "/…"
}
