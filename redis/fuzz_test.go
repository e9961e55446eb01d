package redis_test

import (
	"strings"
	"testing"

	"github.com/fusebox-hq/fusebox/redis"
)

// FuzzOpen: whatever the state URL, Open does not panic, and its error never
// shows the URL's password.
func FuzzOpen(f *testing.F) {
	for _, s := range []string{
		"redis://127.0.0.1:6379/0", "rediss://u:hunter2@h:6380/1", "redis://u:hunter2@h/notadb",
		"redis://u:hunter2@[::1", "redis://:hunter2@h:1/0?dial_timeout=x", "redis://u:p%zz@h", "redis:///",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		s, err := redis.Open(raw)
		if err == nil {
			s.Close()
			return
		}
		if p := redis.Password(raw); len(p) >= 4 && strings.Contains(err.Error(), p) {
			t.Errorf("Open(%q) = %v: shows the password", raw, err)
		}
		// A URL too broken to parse still must not show its userinfo.
		if _, rest, ok := strings.Cut(raw, "://"); ok {
			if user, _, ok := strings.Cut(rest, "@"); ok {
				if _, pass, ok := strings.Cut(user, ":"); ok && len(pass) >= 5 && !strings.ContainsAny(pass, "/?#") &&
					strings.Contains(err.Error(), pass) {
					t.Errorf("Open(%q) = %v: shows what stands for the password", raw, err)
				}
			}
		}
	})
}
