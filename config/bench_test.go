package config

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/goccy/go-yaml/lexer"
	"github.com/goccy/go-yaml/parser"

	"github.com/fusebox-hq/fusebox/httpcall"
	"github.com/fusebox-hq/fusebox/mem"
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

// twentyCircuits is a household's config: twenty circuits, ten of them HTTP
// endpoints with a jq check and extraction, and a chain. `run` on any of
// them pays for loading all of it.
func twentyCircuits() string {
	var b strings.Builder
	b.WriteString("defaults:\n  attempts: 3\n  timeout: 10s\ncircuits:\n")
	for i := range 20 {
		if i%2 == 0 {
			fmt.Fprintf(&b, "  job-%d:\n    attempts: %d\n    open_for: %dm\n", i, 2+i%3, 1+i)
			continue
		}
		fmt.Fprintf(&b, "  api-%d:\n    http:\n      url: http://127.0.0.1:%d/v1/sensor/%d?token=${TOKEN}\n", i, 8000+i, i)
		fmt.Fprintf(&b, "      headers: {Accept: application/json}\n")
		fmt.Fprintf(&b, "      expect: {status: [200], jq: '.ok == true and (.items | length) > 0'}\n")
		fmt.Fprintf(&b, "      extract: '.items[0].value'\n")
	}
	b.WriteString("chains:\n  sensors: {endpoints: [api-1, api-3, api-5], stale: 1h}\n")
	return b.String()
}

func BenchmarkLoadTwentyCircuits(b *testing.B) {
	path := filepath.Join(b.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(twentyCircuits()), 0o600); err != nil {
		b.Fatal(err)
	}
	b.Setenv("TOKEN", "t")
	for _, c := range []struct {
		name string
		load func(string) (*Config, error)
	}{{"Load", Load}, {"LoadForRun", func(path string) (*Config, error) { return LoadForRun(path, "api-7") }}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.load(path); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	// What LoadForRun cannot do without: the parse of the whole file into
	// its AST, and its tokens alone.
	data := []byte(twentyCircuits())
	b.Run("AST", func(b *testing.B) {
		for b.Loop() {
			if _, err := parser.ParseBytes(data, 0); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Tokens", func(b *testing.B) {
		for b.Loop() {
			if len(lexer.Tokenize(string(data))) == 0 {
				b.Fatal("no tokens")
			}
		}
	})
}

// BenchmarkLoadAndBuildClient is what fusebox call and serve pay before
// their first request: the household's config loaded, its twenty jq
// programs compiled (once, by config), and the client built on them.
func BenchmarkLoadAndBuildClient(b *testing.B) {
	path := filepath.Join(b.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(twentyCircuits()), 0o600); err != nil {
		b.Fatal(err)
	}
	b.Setenv("TOKEN", "t")
	store := mem.New()
	b.ReportAllocs()
	for b.Loop() {
		c, err := Load(path)
		if err != nil {
			b.Fatal(err)
		}
		var endpoints []*httpcall.Endpoint
		for _, name := range slices.Sorted(maps.Keys(c.Circuits)) {
			if ep := c.Circuits[name].Endpoint; ep != nil {
				endpoints = append(endpoints, ep)
			}
		}
		if _, err := httpcall.New(store, endpoints, slices.Collect(maps.Values(c.Chains))); err != nil {
			b.Fatal(err)
		}
	}
}
