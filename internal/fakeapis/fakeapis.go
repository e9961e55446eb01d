// Package fakeapis serves stand-ins for the APIs the README's worked examples
// call — OpenWeatherMap, wttr.in, Open-Meteo and Home Assistant — so the
// examples run as documented on a machine without those services, and the
// tests run them too. Each API can be made to fail: POST /_fail/NAME (503
// from then on) and POST /_heal/NAME.
package fakeapis

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
)

// The APIs and what each answers.
const (
	OpenWeatherMap = "openweathermap"
	Wttr           = "wttr"
	OpenMeteo      = "open-meteo"
	HomeAssistant  = "home-assistant"
)

// Server is the handler of every fake API. The zero value is not usable; use
// New.
type Server struct {
	APIKey string // OpenWeatherMap's appid
	Token  string // Home Assistant's long-lived access token

	mu      sync.Mutex
	failing map[string]bool
	hits    map[string]int
}

// New returns a Server that accepts apiKey and token.
func New(apiKey, token string) *Server {
	return &Server{APIKey: apiKey, Token: token, failing: map[string]bool{}, hits: map[string]int{}}
}

// Hits returns how many requests reached the named API.
func (s *Server) Hits(api string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[api]
}

// SetFailing makes the named API answer 503 (or heals it).
func (s *Server) SetFailing(api string, failing bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failing[api] = failing
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if name, ok := strings.CutPrefix(r.URL.Path, "/_fail/"); ok && r.Method == http.MethodPost {
		s.SetFailing(name, true)
		return
	}
	if name, ok := strings.CutPrefix(r.URL.Path, "/_heal/"); ok && r.Method == http.MethodPost {
		s.SetFailing(name, false)
		return
	}
	api := apiOf(r.URL.Path)
	if api == "" {
		http.NotFound(w, r)
		return
	}
	s.mu.Lock()
	s.hits[api]++
	failing := s.failing[api]
	s.mu.Unlock()
	if failing {
		w.Header().Set("Retry-After", "1")
		http.Error(w, "service unavailable", http.StatusServiceUnavailable)
		return
	}
	switch api {
	case OpenWeatherMap:
		if r.URL.Query().Get("appid") != s.APIKey {
			writeJSON(w, http.StatusUnauthorized, map[string]any{"cod": 401, "message": "Invalid API key."})
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"name": "Berlin", "main": map[string]any{"temp": 21.5, "humidity": 40}})
	case Wttr:
		writeJSON(w, http.StatusOK, map[string]any{"current_condition": []any{map[string]any{"temp_C": "21", "humidity": "41"}}})
	case OpenMeteo:
		writeJSON(w, http.StatusOK, map[string]any{"current": map[string]any{"temperature_2m": 21.4}})
	case HomeAssistant:
		if r.Header.Get("Authorization") != "Bearer "+s.Token {
			writeJSON(w, http.StatusUnauthorized, map[string]any{"message": "Unauthorized"})
			return
		}
		entity := strings.TrimPrefix(r.URL.Path, "/api/states/")
		writeJSON(w, http.StatusOK, map[string]any{"entity_id": entity, "state": "21.2",
			"attributes": map[string]any{"unit_of_measurement": "°C", "friendly_name": "Outdoor temperature"}})
	}
}

func apiOf(path string) string {
	switch {
	case path == "/data/2.5/weather":
		return OpenWeatherMap
	case path == "/Berlin":
		return Wttr
	case path == "/v1/forecast":
		return OpenMeteo
	case strings.HasPrefix(path, "/api/states/"):
		return HomeAssistant
	}
	return ""
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
