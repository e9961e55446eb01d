package httpcall_test

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/httpcall"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	date := func(d time.Duration) string { return now.Add(d).Format(http.TimeFormat) }
	tests := []struct {
		in     string
		want   time.Duration
		wantOK bool
	}{
		{"120", 2 * time.Minute, true},
		{" 5 ", 5 * time.Second, true},
		{"0", 0, true},
		{"007", 7 * time.Second, true},
		{"86400", 24 * time.Hour, true},
		{"86401", 24 * time.Hour, true},          // capped
		{"9223372036", 24 * time.Hour, true},     // the most seconds a Duration holds, capped
		{"9223372037", 0, false},                 // one more would overflow
		{"99999999999999999999999999", 0, false}, // not even an int64
		{"-5", 0, false},
		{"+5", 0, false},
		{"1.5", 0, false},
		{"5s", 0, false},
		{"", 0, false},
		{"soon", 0, false},
		{date(90 * time.Second), 90 * time.Second, true},
		{date(-time.Hour), 0, true}, // in the past: go ahead
		{date(48 * time.Hour), 24 * time.Hour, true},
		{now.Add(30 * time.Second).Format(time.RFC850), 30 * time.Second, true},
		{now.Add(30 * time.Second).Format(time.ANSIC), 30 * time.Second, true},
		{"Fri, 31 Dec 9999 23:59:59 GMT", 24 * time.Hour, true},
		{"Mon, 01 Jan 0001 00:00:00 GMT", 0, true},
		{"Mon, 32 Jan 2030 00:00:00 GMT", 0, false},
	}
	for _, tt := range tests {
		got, ok := httpcall.ParseRetryAfter(tt.in, now)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("ParseRetryAfter(%q) = %s, %v; want %s, %v", tt.in, got, ok, tt.want, tt.wantOK)
		}
	}
}

func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"120", "0", "-1", "9223372037", "Wed, 21 Oct 2015 07:28:00 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994", "1e3", " 42\t"} {
		f.Add(s, int64(1893553445))
	}
	f.Fuzz(func(t *testing.T, v string, unix int64) {
		d, ok := httpcall.ParseRetryAfter(v, time.Unix(unix, 0))
		if !ok {
			if d != 0 {
				t.Fatalf("ParseRetryAfter(%q) = %s with false", v, d)
			}
			return
		}
		if d < 0 || d > httpcall.MaxRetryAfter {
			t.Fatalf("ParseRetryAfter(%q) = %s, outside [0, %s]", v, d, httpcall.MaxRetryAfter)
		}
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 && n <= 86400 && d != time.Duration(n)*time.Second {
			t.Fatalf("ParseRetryAfter(%q) = %s, want %ds", v, d, n)
		}
	})
}
