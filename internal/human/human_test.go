package human_test

import (
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/internal/human"
)

func TestDurationsReadAtAGlance(t *testing.T) {
	for _, tt := range []struct {
		d     time.Duration
		round string
		str   string
	}{
		{1234567 * time.Microsecond, "1.2s", "1.2s"},
		{149999 * time.Microsecond, "150ms", "150ms"},
		{90*time.Second + 400*time.Millisecond, "1m30s", "1m30s"},
		{2*time.Minute + 300*time.Millisecond, "2m0s", "2m"},
		{2*time.Hour + 200*time.Millisecond, "2h0m0s", "2h"},
		{0, "0s", "0s"},
	} {
		if got := human.Round(tt.d).String(); got != tt.round {
			t.Errorf("Round(%v) = %s, want %s", tt.d, got, tt.round)
		}
		if got := human.String(tt.d); got != tt.str {
			t.Errorf("String(%v) = %s, want %s", tt.d, got, tt.str)
		}
	}
}
