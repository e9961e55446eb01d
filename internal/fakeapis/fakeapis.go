// Package fakeapis serves stand-ins for the APIs fusebox is shown against:
// those the worked examples of docs/call.md call — OpenWeatherMap, wttr.in,
// Open-Meteo and Home Assistant — so the examples run as documented on a
// machine without those services, and the weather API and backup that
// `fusebox demo` walks through. Tests use it for both.
//
// Each API can be made to fail, fail for a while, or answer slowly (Down,
// FailNext, Slow, Up); over HTTP, POST /_fail/NAME makes it fail, POST
// /_slow/NAME?for=DURATION makes it answer only after DURATION, and POST
// /_heal/NAME heals it.
package fakeapis

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"time"
)

// The APIs, by the names the Server's methods and controls take.
const (
	OpenWeatherMap = "openweathermap" // GET /data/2.5/weather?appid=KEY
	Wttr           = "wttr"           // GET /Berlin
	OpenMeteo      = "open-meteo"     // GET /v1/forecast
	HomeAssistant  = "home-assistant" // GET /api/states/ENTITY with the token
	Weather        = "weather"        // GET /weather: the demo's weather API
	Backup         = "backup"         // GET /backup: the demo's backup
)

var _ http.Handler = (*Server)(nil)

// Server is the handler of every fake API. It is safe for concurrent use.
// The zero value is not usable; use New.
type Server struct {
	APIKey string // OpenWeatherMap's appid
	Token  string // Home Assistant's long-lived access token

	mu       sync.Mutex
	modes    map[string]mode
	hits     map[string]int
	failures map[string]int
}

// mode is how an API answers; the zero value is up.
type mode struct {
	fail  int           // requests left to answer 503; negative: every one
	delay time.Duration // before a good answer
}

// New returns a Server, every API up, that accepts apiKey and token.
func New(apiKey, token string) *Server {
	return &Server{APIKey: apiKey, Token: token,
		modes: map[string]mode{}, hits: map[string]int{}, failures: map[string]int{}}
}

// Up makes api answer at once, as it should.
func (s *Server) Up(api string) { s.set(api, mode{}) }

// Down makes api answer every request 503.
func (s *Server) Down(api string) { s.set(api, mode{fail: -1}) }

// FailNext makes api answer its next n requests 503, then as it should.
func (s *Server) FailNext(api string, n int) { s.set(api, mode{fail: n}) }

// Slow makes api answer as it should, after d; a request cancelled before
// then gets no answer.
func (s *Server) Slow(api string, d time.Duration) { s.set(api, mode{delay: d}) }

func (s *Server) set(api string, m mode) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.modes[api] = m
}

// Hits returns how many requests reached api.
func (s *Server) Hits(api string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[api]
}

// Failures returns how many requests api answered 503 because it was down
// or failing.
func (s *Server) Failures(api string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failures[api]
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if name, ok := strings.CutPrefix(r.URL.Path, "/_fail/"); ok && r.Method == http.MethodPost {
		s.Down(name)
		return
	}
	if name, ok := strings.CutPrefix(r.URL.Path, "/_slow/"); ok && r.Method == http.MethodPost {
		d, err := time.ParseDuration(r.URL.Query().Get("for"))
		if err != nil || d <= 0 {
			http.Error(w, "want ?for=DURATION, like ?for=5s", http.StatusBadRequest)
			return
		}
		s.Slow(name, d)
		return
	}
	if name, ok := strings.CutPrefix(r.URL.Path, "/_heal/"); ok && r.Method == http.MethodPost {
		s.Up(name)
		return
	}
	api := apiOf(r.URL.Path)
	if api == "" {
		http.NotFound(w, r)
		return
	}
	fail, delay := s.arrive(api)
	if fail {
		unavailable(w, api)
		return
	}
	if delay > 0 {
		t := time.NewTimer(delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			return
		}
	}
	s.answer(w, r, api)
}

// arrive counts a request to api and says whether it fails, and otherwise
// how long its answer takes.
func (s *Server) arrive(api string) (fail bool, delay time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hits[api]++
	m := s.modes[api]
	if m.fail == 0 {
		return false, m.delay
	}
	if m.fail > 0 {
		m.fail--
		s.modes[api] = m
	}
	s.failures[api]++
	return true, 0
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
	case path == "/weather":
		return Weather
	case path == "/backup":
		return Backup
	}
	return ""
}

// unavailable answers 503 as api does. The stand-ins of docs/call.md say when to
// come back; the demo's API does not, so that the demo shows fusebox's own
// backoff.
func unavailable(w http.ResponseWriter, api string) {
	if api == Weather || api == Backup {
		http.Error(w, `{"error":"bridge restarting"}`, http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Retry-After", "1")
	http.Error(w, "service unavailable", http.StatusServiceUnavailable)
}

func (s *Server) answer(w http.ResponseWriter, r *http.Request, api string) {
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
	case Weather:
		writeJSON(w, http.StatusOK, map[string]any{"main": map[string]any{"temp": 21.5}})
	case Backup:
		writeJSON(w, http.StatusOK, map[string]any{"main": map[string]any{"temp": 21.3}})
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
