package main

import (
	"context"
	"errors"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/config"
	"github.com/fusebox-hq/fusebox/notify"
	"github.com/fusebox-hq/fusebox/notify/mqtt"
	"github.com/fusebox-hq/fusebox/redact"
)

// notifySlack is added to the longest notify timeout to bound the wait for
// the listener at exit: the sender gives up at its timeout, this is what
// returning takes.
const notifySlack = 250 * time.Millisecond

// notifier wires a command's notifications: the listener its circuits get,
// and what runs once the call's output is written.
type notifier struct {
	sender *notify.Sender
	bound  time.Duration // the longest a command waits for notifications at exit
	redact *redact.Redactor
}

// newNotifier returns nil when the config asks for no notification.
func (a *app) newNotifier(cfg *config.Config, store fusebox.Store) *notifier {
	if cfg == nil {
		return nil
	}
	var bound time.Duration
	any := false
	for _, r := range allRules(cfg) {
		if !r.Empty() || len(r.Heartbeats) > 0 {
			any = true
			bound = max(bound, r.TimeoutOrDefault())
		}
	}
	if !any {
		return nil
	}
	return &notifier{
		sender: notify.NewSender(cfg.Notify, store.Events, notify.WithLogger(a.logger), notify.WithSink(mqtt.SinkFor(mqtt.Fusebox(versionString())))),
		redact: a.redactor,
		bound:  bound + notifySlack,
	}
}

func allRules(cfg *config.Config) []notify.Rules {
	rules := []notify.Rules{cfg.DefaultNotify}
	for _, c := range cfg.Circuits {
		rules = append(rules, c.Notify)
	}
	return rules
}

// listener is the option that hands the circuits' events to the sender.
func (n *notifier) listener() []fusebox.Option {
	if n == nil {
		return nil
	}
	return []fusebox.Option{fusebox.WithListener(n.sender.Listen)}
}

// finish runs after the call's result is written: it pings the circuits'
// heartbeats with how the call went (a call that ran nothing, on an open
// circuit, pings none) and waits, within the bound, for the transitions'
// notifications.
func (n *notifier) finish(circuits *fusebox.Circuits, names []string, err error) {
	if n == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), n.bound)
	defer cancel()
	if !errors.Is(err, fusebox.ErrOpen) {
		msg := ""
		if err != nil {
			msg = n.redact.String(err.Error())
		}
		for _, name := range names {
			n.sender.Heartbeat(ctx, name, err == nil, msg)
		}
	}
	circuits.Flush(ctx)
}
