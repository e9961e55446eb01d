package config

import (
	"os"
	"path/filepath"
	"testing"
)

// smallConfig is a typical config: a few circuits, one endpoint, one chain.
const smallConfig = `state: /var/lib/fusebox
defaults:
  attempts: 3
  backoff: 1s
  timeout: 10s
  open_for: 30s
circuits:
  zigbee2mqtt:
    attempts: 5
    open_for: 3m
  backup-nas:
    timeout: 2m
    trip_after: 2
  openweather:
    http:
      url: https://api.openweathermap.org/data/2.5/weather?q=Berlin&appid=${OWM_API_KEY}
      expect: {status: [200], jq: '.main.temp != null'}
      extract: '.main.temp'
chains:
  weather: {endpoints: [openweather], stale: 6h}
`

func BenchmarkLoadSmall(b *testing.B) {
	path := filepath.Join(b.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(smallConfig), 0o600); err != nil {
		b.Fatal(err)
	}
	b.Setenv("OWM_API_KEY", "key")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Load(path); err != nil {
			b.Fatal(err)
		}
	}
}
