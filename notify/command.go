package notify

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/fusebox-hq/fusebox/breaker"
)

// commandSink runs a command on a message: executed directly, never through
// a shell, with the message in its environment (Env). It is killed when the
// delivery's time is up.
type commandSink struct {
	onOpen, onClose []string
}

func (c *commandSink) String() string { return "command" }

func (c *commandSink) Send(ctx context.Context, _ breaker.Event, m *Message) error {
	if m == nil || m.Kind == Flapping {
		return nil // a flapping circuit runs no command until it settles
	}
	argv := c.onOpen
	if m.Up() {
		argv = c.onClose
	}
	if len(argv) == 0 {
		return nil
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), Env(*m)...)
	cmd.WaitDelay = 100 * time.Millisecond // a grandchild holding no pipe of ours cannot hold us
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w", argv[0], err)
	}
	return nil
}

// Env is the message as environment variables for a command: FUSEBOX_EVENT
// (opened, closed, probe_failed, settled), FUSEBOX_CIRCUIT, FUSEBOX_TIME and
// FUSEBOX_SINCE (RFC 3339), FUSEBOX_DOWN_SECONDS, FUSEBOX_LAST_FAILURE_AT
// and FUSEBOX_DOWN_AT_LEAST_SECONDS (empty when unknown), FUSEBOX_REASON,
// FUSEBOX_LAST_FAILURE, FUSEBOX_FAILED_PROBES, FUSEBOX_CHANGES (settled:
// the flapping's transitions, else 0), FUSEBOX_TITLE and FUSEBOX_MESSAGE.
func Env(m Message) []string {
	b := Body(m)
	return []string{
		"FUSEBOX_EVENT=" + string(m.Kind),
		"FUSEBOX_CIRCUIT=" + m.Circuit,
		"FUSEBOX_TIME=" + b.Time,
		"FUSEBOX_SINCE=" + b.Since,
		"FUSEBOX_DOWN_SECONDS=" + strconv.FormatFloat(b.DownSeconds, 'f', -1, 64),
		"FUSEBOX_LAST_FAILURE_AT=" + b.LastFailureAt,
		"FUSEBOX_DOWN_AT_LEAST_SECONDS=" + downAtLeast(b),
		"FUSEBOX_REASON=" + m.Reason,
		"FUSEBOX_LAST_FAILURE=" + m.LastFailure,
		"FUSEBOX_FAILED_PROBES=" + strconv.Itoa(m.FailedProbes),
		"FUSEBOX_CHANGES=" + strconv.Itoa(m.Changes),
		"FUSEBOX_TITLE=" + m.Title(),
		"FUSEBOX_MESSAGE=" + m.Text(),
	}
}

func downAtLeast(b WebhookBody) string {
	if b.LastFailureAt == "" {
		return ""
	}
	return strconv.FormatFloat(b.DownAtLeastSeconds, 'f', -1, 64)
}
