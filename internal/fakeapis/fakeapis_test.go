package fakeapis_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/internal/fakeapis"
)

// serve starts s on a real socket on 127.0.0.1 until the test ends.
func serve(t *testing.T, s *fakeapis.Server) string {
	t.Helper()
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return srv.URL
}

type response struct {
	status     int
	retryAfter string
	body       string
}

func do(t *testing.T, method, url string, header ...string) response {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{resp.StatusCode, resp.Header.Get("Retry-After"), string(body)}
}

func get(t *testing.T, url string, header ...string) response {
	t.Helper()
	return do(t, http.MethodGet, url, header...)
}

func TestEveryAPIAnswersAsDocumented(t *testing.T) {
	url := serve(t, fakeapis.New("key", "token"))
	for _, c := range []struct {
		name   string
		path   string
		header []string
		status int
		body   string
	}{
		{"OpenWeatherMap with the key", "/data/2.5/weather?q=Berlin&appid=key", nil, 200, `{"main":{"humidity":40,"temp":21.5},"name":"Berlin"}`},
		{"OpenWeatherMap with a wrong key", "/data/2.5/weather?appid=nope", nil, 401, `{"cod":401,"message":"Invalid API key."}`},
		{"wttr.in", "/Berlin?format=j1", nil, 200, `{"current_condition":[{"humidity":"41","temp_C":"21"}]}`},
		{"Open-Meteo", "/v1/forecast?latitude=52.52", nil, 200, `{"current":{"temperature_2m":21.4}}`},
		{"Home Assistant with the token", "/api/states/sensor.outdoor", []string{"Authorization", "Bearer token"}, 200,
			`{"attributes":{"friendly_name":"Outdoor temperature","unit_of_measurement":"°C"},"entity_id":"sensor.outdoor","state":"21.2"}`},
		{"Home Assistant without the token", "/api/states/sensor.outdoor", nil, 401, `{"message":"Unauthorized"}`},
		{"the demo's weather API", "/weather", nil, 200, `{"main":{"temp":21.5}}`},
		{"the demo's backup", "/backup", nil, 200, `{"main":{"temp":21.3}}`},
		{"an unknown path", "/nothing", nil, 404, "404 page not found"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := get(t, url+c.path, c.header...)
			if r.status != c.status || strings.TrimSpace(r.body) != c.body {
				t.Errorf("got %d %q, want %d %q", r.status, r.body, c.status, c.body)
			}
		})
	}
}

func TestDownAnswers503UntilUp(t *testing.T) {
	for _, c := range []struct {
		api, path  string
		retryAfter string
		body       string
	}{
		{fakeapis.OpenMeteo, "/v1/forecast", "1", "service unavailable"},
		{fakeapis.Weather, "/weather", "", `{"error":"bridge restarting"}`}, // the demo shows fusebox's own backoff
	} {
		t.Run(c.api, func(t *testing.T) {
			s := fakeapis.New("", "")
			url := serve(t, s) + c.path
			s.Down(c.api)
			for range 3 {
				if r := get(t, url); r.status != 503 || r.retryAfter != c.retryAfter || strings.TrimSpace(r.body) != c.body {
					t.Errorf("down: got %+v, want 503, Retry-After %q, %q", r, c.retryAfter, c.body)
				}
			}
			s.Up(c.api)
			if r := get(t, url); r.status != 200 {
				t.Errorf("up again: got %+v, want 200", r)
			}
			if h, f := s.Hits(c.api), s.Failures(c.api); h != 4 || f != 3 {
				t.Errorf("Hits %d, Failures %d; want 4 and 3", h, f)
			}
		})
	}
}

func TestFailAndHealControls(t *testing.T) {
	s := fakeapis.New("key", "")
	url := serve(t, s)
	weather := url + "/data/2.5/weather?appid=key"
	if r := get(t, url+"/_fail/"+fakeapis.OpenWeatherMap); r.status != 404 {
		t.Errorf("GET /_fail: %d, want 404: only POST controls", r.status)
	}
	if r := do(t, http.MethodPost, url+"/_fail/"+fakeapis.OpenWeatherMap); r.status != 200 {
		t.Fatalf("POST /_fail: %d", r.status)
	}
	if r := get(t, weather); r.status != 503 {
		t.Errorf("after /_fail: %d, want 503", r.status)
	}
	if r := get(t, url+"/Berlin"); r.status != 200 {
		t.Errorf("another API after /_fail: %d, want 200", r.status)
	}
	if r := do(t, http.MethodPost, url+"/_heal/"+fakeapis.OpenWeatherMap); r.status != 200 {
		t.Fatalf("POST /_heal: %d", r.status)
	}
	if r := get(t, weather); r.status != 200 {
		t.Errorf("after /_heal: %d, want 200", r.status)
	}
	if h := s.Hits(fakeapis.OpenWeatherMap); h != 2 {
		t.Errorf("Hits %d, want 2: controls are not requests to the API", h)
	}
}

func TestSlowControl(t *testing.T) {
	s := fakeapis.New("key", "")
	url := serve(t, s)
	if r := do(t, http.MethodPost, url+"/_slow/"+fakeapis.Wttr+"?for=soon"); r.status != 400 {
		t.Errorf("POST /_slow?for=soon: %d, want 400", r.status)
	}
	if r := do(t, http.MethodPost, url+"/_slow/"+fakeapis.Wttr+"?for=150ms"); r.status != 200 {
		t.Fatalf("POST /_slow?for=150ms: %d", r.status)
	}
	start := time.Now()
	if r := get(t, url+"/Berlin"); r.status != 200 || time.Since(start) < 150*time.Millisecond {
		t.Errorf("after /_slow: %d after %s, want 200 after at least 150ms", r.status, time.Since(start))
	}
	if r := do(t, http.MethodPost, url+"/_heal/"+fakeapis.Wttr); r.status != 200 {
		t.Fatalf("POST /_heal: %d", r.status)
	}
	if r := get(t, url+"/data/2.5/weather?appid=key"); r.status != 200 {
		t.Errorf("another API: %d, want 200", r.status)
	}
}

func TestFailNextFailsExactlyNOfConcurrentRequests(t *testing.T) {
	s := fakeapis.New("", "")
	url := serve(t, s) + "/backup"
	s.FailNext(fakeapis.Backup, 3)
	var wg sync.WaitGroup
	var mu sync.Mutex
	statuses := map[int]int{}
	for range 10 {
		wg.Go(func() {
			r := get(t, url)
			mu.Lock()
			statuses[r.status]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if statuses[503] != 3 || statuses[200] != 7 {
		t.Errorf("statuses %v, want 3×503 and 7×200", statuses)
	}
	if h, f := s.Hits(fakeapis.Backup), s.Failures(fakeapis.Backup); h != 10 || f != 3 {
		t.Errorf("Hits %d, Failures %d; want 10 and 3", h, f)
	}
	if r := get(t, url); r.status != 200 {
		t.Errorf("after the failures: %d, want 200", r.status)
	}
}

func TestSlowAnswersAfterTheDelay(t *testing.T) {
	s := fakeapis.New("", "")
	url := serve(t, s) + "/weather"
	s.Slow(fakeapis.Weather, 100*time.Millisecond)
	start := time.Now()
	r := get(t, url)
	if took := time.Since(start); took < 100*time.Millisecond || r.status != 200 {
		t.Errorf("got %d after %s, want 200 after at least 100ms", r.status, took)
	}
	if f := s.Failures(fakeapis.Weather); f != 0 {
		t.Errorf("Failures %d, want 0: slow is not failing", f)
	}
}

func TestSlowGivesUpOnACancelledRequest(t *testing.T) {
	s := fakeapis.New("", "")
	srv := httptest.NewServer(s) // closed below: that is the check
	s.Slow(fakeapis.Weather, time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/weather", nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	for deadline := time.Now().Add(10 * time.Second); s.Hits(fakeapis.Weather) == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the request never reached the server")
		}
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("request: %v, want context.Canceled", err)
	}
	// Close waits for every handler: one still waiting out its hour would
	// hold it.
	closed := make(chan struct{})
	go func() { srv.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("the handler still waits after its request was cancelled")
	}
}
