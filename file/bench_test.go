package file_test

import (
	"testing"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/file"
)

func BenchmarkLoad(b *testing.B) {
	s := open(b, b.TempDir())
	mustUpdate(b, s, "db")
	for b.Loop() {
		if _, err := s.Load(ctx, "db"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkUpdate(b *testing.B) {
	for _, fsync := range []bool{true, false} {
		name := "fsync=off"
		if fsync {
			name = "fsync=on"
		}
		b.Run(name, func(b *testing.B) {
			s := open(b, b.TempDir(), file.WithFsync(fsync))
			for b.Loop() {
				if _, err := s.Update(ctx, "db", func(st *breaker.State) ([]breaker.Event, bool) {
					st.ConsecutiveFailures++
					return nil, true
				}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkCount(b *testing.B) {
	s := open(b, b.TempDir())
	for b.Loop() {
		if err := s.Count(ctx, "db", fusebox.Counts{Skips: 1}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOpenLoadCount is what a run skipped on an open circuit asks
// of the store, each in a process of its own: a fresh Store every time.
func BenchmarkOpenLoadCount(b *testing.B) {
	dir := b.TempDir()
	mustUpdate(b, open(b, dir), "db")
	for b.Loop() {
		s := open(b, dir)
		if _, err := s.Load(ctx, "db"); err != nil {
			b.Fatal(err)
		}
		if err := s.Count(ctx, "db", fusebox.Counts{Skips: 1}); err != nil {
			b.Fatal(err)
		}
	}
}
