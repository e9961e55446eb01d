package main

import (
	"strings"
	"testing"
)

func TestBudgetsConfigPutsInTheUpstreams(t *testing.T) {
	cfg, err := budgetsConfig(&tools{script: "scripts/classic-breaker.sh"}, "http://127.0.0.1:1", "http://127.0.0.1:2")
	if err != nil {
		t.Fatal(err)
	}
	got := string(cfg)
	wantAll(t, "config", got, "url: http://127.0.0.1:1/api", "url: http://127.0.0.1:2/Berlin?format=j1", "deadline: 20s")
	if strings.Contains(got, "HANG/") || strings.Contains(got, "WTTR/") {
		t.Errorf("a placeholder is left:\n%s", got)
	}
}
