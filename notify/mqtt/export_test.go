package mqtt

import (
	"log/slog"

	"github.com/fusebox-hq/fusebox/notify"
)

// Dial is a connection of its own, without a Pool or a Controller: what
// the tests of one connection open.
func Dial(cfg notify.MQTT, o Origin, logger *slog.Logger) (*Conn, error) {
	return dial(cfg, o, logger, nil)
}
