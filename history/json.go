package history

import (
	"encoding/json"
	"time"
)

// MarshalJSON writes durations as seconds (duration_seconds,
// saved_seconds), beside the fields' own names.
func (o Outage) MarshalJSON() ([]byte, error) {
	type plain Outage
	return json.Marshal(struct {
		plain
		DurationSeconds float64 `json:"duration_seconds"`
		SavedSeconds    float64 `json:"saved_seconds"`
	}{plain(o), seconds(o.Duration), seconds(o.Saved)})
}

func seconds(d time.Duration) float64 { return float64(d.Milliseconds()) / 1000 }
