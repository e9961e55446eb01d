package logging_test

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/fusebox-hq/fusebox/logging"
)

func TestJournalStreamIsStderrNamedByDeviceAndInode(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "JOURNAL_STREAM" {
				return v
			}
			return ""
		}
	}
	for _, tc := range []struct {
		name   string
		value  string
		stderr *os.File
		want   bool
	}{
		{"stderr is the named stream", fmt.Sprintf("%d:%d", st.Dev, st.Ino), f, true},
		{"another inode", fmt.Sprintf("%d:%d", st.Dev, st.Ino+1), f, false},
		{"no JOURNAL_STREAM", "", f, false},
		{"no stderr file", fmt.Sprintf("%d:%d", st.Dev, st.Ino), nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := logging.JournalStream(env(tc.value), tc.stderr); got != tc.want {
				t.Errorf("JournalStream = %v, want %v", got, tc.want)
			}
		})
	}
}
