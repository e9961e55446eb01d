package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// TestTwoUsersShareOneCircuit runs fusebox as two real users of one group
// (Home Assistant and Node-RED, say) on a state dir owned by the first and
// shared with `fusebox state init --group`: a failure run by one trips the
// circuit for the other, and when it is half-open exactly one of them
// probes while the other is skipped.
func TestTwoUsersShareOneCircuit(t *testing.T) {
	group, created := testenv.Group(t, 2)
	creds := map[string]*syscall.Credential{}
	var users []string
	for _, u := range created {
		users = append(users, u.Name)
		creds[u.Name] = u.Cred
	}
	a, b := users[0], users[1]

	// A dir both users can reach, holding the binary, the state dir and
	// markers the commands leave.
	base, err := os.MkdirTemp("", "fusebox-two-users-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	os.Chmod(base, 0o755)
	bin := filepath.Join(base, "fusebox")
	copyFile(t, fuseboxBin, bin, 0o755)
	marks := filepath.Join(base, "marks")
	os.Mkdir(marks, 0o777)
	os.Chmod(marks, 0o777)
	state := filepath.Join(base, "state")

	if out, err := exec.Command(bin, "state", "init", "--group", group, state).CombinedOutput(); err != nil {
		t.Fatalf("state init: %v\n%s", err, out)
	}
	if err := os.Chown(state, int(creds[a].Uid), -1); err != nil { // owned by A, shared with the group
		t.Fatal(err)
	}
	as := func(u string, args ...string) *exec.Cmd {
		cmd := testenv.FuseboxCmd(bin, state, []string{"HOME=" + base}, args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: creds[u]}
		cmd.Dir = base
		return cmd
	}
	run := func(u string, args ...string) (int, string) {
		t.Helper()
		out, err := as(u, args...).CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("%s: fusebox %v: %v", u, args, err)
		}
		return code, string(out)
	}
	// Open long enough for B's run to meet it open on a busy machine.
	policy := []string{"--attempts", "1", "--trip-after", "1", "--open-for", "5s"}

	// A's failure opens the circuit for B.
	tripped := time.Now()
	if code, out := run(a, testenv.RunArgs("bridge", policy, "false")...); code != 1 || strings.Contains(out, "level=ERROR") {
		t.Fatalf("%s: exit %d, want 1 and no trouble with the store:\n%s", a, code, out)
	}
	if code, out := run(b, testenv.RunArgs("bridge", policy, "touch", filepath.Join(marks, "ran"))...); code != exitOpen || out != "" {
		t.Fatalf("%s on the circuit %s tripped, %s after the trip began (open for 5s): exit %d, want 75 and nothing:\n%s",
			b, a, time.Since(tripped).Round(time.Millisecond), code, out)
	}
	if _, err := os.Stat(filepath.Join(marks, "ran")); err == nil {
		t.Fatal("the command ran on an open circuit")
	}
	testenv.WaitFor(t, "the circuit to be half-open", func() bool {
		_, out := run(b, "status", "--json", "bridge")
		var rows []map[string]any
		return json.Unmarshal([]byte(out), &rows) == nil && len(rows) == 1 && rows[0]["state"] == "half_open"
	})

	// Both at once: one probes (and holds the probe until released), the
	// other is skipped.
	probe := `id -un > "$0/probe-$(id -un)"; while [ ! -e "$0/release" ]; do sleep 0.01; done`
	type result struct {
		user string
		code int
		out  string
	}
	done := make(chan result, 2)
	for _, u := range users {
		cmd := as(u, testenv.RunArgs("bridge", policy, "sh", "-c", probe, marks)...)
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() {
			err := cmd.Wait()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			}
			done <- result{u, code, out.String()}
		}()
	}
	skipped := <-done // the prober waits for release
	if skipped.code != exitOpen {
		os.WriteFile(filepath.Join(marks, "release"), nil, 0o644)
		t.Fatalf("%s: exit %d, want 75 (the other probes):\n%s", skipped.user, skipped.code, skipped.out)
	}
	testenv.WaitFor(t, "the probe to start", func() bool {
		probes, _ := filepath.Glob(filepath.Join(marks, "probe-*"))
		return len(probes) > 0
	})
	os.WriteFile(filepath.Join(marks, "release"), nil, 0o644)
	prober := <-done
	if prober.code != 0 {
		t.Errorf("%s probed: exit %d, want 0:\n%s", prober.user, prober.code, prober.out)
	}
	probes, _ := filepath.Glob(filepath.Join(marks, "probe-*"))
	if len(probes) != 1 || filepath.Base(probes[0]) != "probe-"+prober.user {
		t.Errorf("probes %v, want exactly one, by %s", probes, prober.user)
	}
	if _, out := run(skipped.user, "status", "--json", "bridge"); !strings.Contains(out, `"state": "closed"`) {
		t.Errorf("%s sees the circuit after the probe:\n%s", skipped.user, out)
	}

	// Each user's files are the group's, and the other's to write.
	entries := 0
	filepath.WalkDir(state, func(path string, d os.DirEntry, err error) error {
		if err != nil || path == state {
			return err
		}
		fi, _ := d.Info()
		st := fi.Sys().(*syscall.Stat_t)
		want := os.FileMode(0o660)
		if d.IsDir() {
			want = 0o770 | os.ModeSetgid
		}
		if fi.Mode()&(os.ModePerm|os.ModeSetgid) != want || int(st.Gid) != int(creds[a].Groups[0]) {
			t.Errorf("%s: mode %s, gid %d; want %s and the group's", path, fi.Mode(), st.Gid, want)
		}
		entries++
		return nil
	})
	t.Logf("%s and %s shared %d entries of %s; %s probed", a, b, entries, state, prober.user)
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(fmt.Errorf("copy %s: %w", from, err))
	}
}
