package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// tools are the programs the scenarios run, built or found once per run.
type tools struct {
	work     string // the run's scratch dir
	repo     string // the fusebox checkout
	fusebox  string // built from the checkout, static
	hello    string // the static Go floor
	script   string // the classic bash breaker
	faketime string // libfaketime, "" when it is not installed
	self     string // this benchmark's own binary (the contention barrier)
}

// buildTools builds fusebox (CGO_ENABLED=0, like the release) and the hello
// floor into work, and finds everything else the scenarios need.
func buildTools(ctx context.Context, repo, work string) (*tools, error) {
	t := &tools{
		work:     work,
		repo:     repo,
		fusebox:  filepath.Join(work, "fusebox"),
		hello:    filepath.Join(work, "hello"),
		script:   filepath.Join(repo, "bench", "scripts", "classic-breaker.sh"),
		faketime: findFaketime(),
	}
	if _, err := os.Stat(t.script); err != nil {
		return nil, fmt.Errorf("find the classic bash script (is -repo the fusebox checkout?): %w", err)
	}
	if err := goBuild(ctx, repo, t.fusebox, "./cmd/fusebox"); err != nil {
		return nil, err
	}
	if err := goBuild(ctx, filepath.Join(repo, "bench"), t.hello, "./hello"); err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find own binary: %w", err)
	}
	t.self = self
	for _, tool := range []string{"bash", "curl", "md5sum", "date", "sleep"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Errorf("the benchmarks need %s: %w", tool, err)
		}
	}
	return t, nil
}

func goBuild(ctx context.Context, dir, out, pkg string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", out, pkg)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build %s in %s: %v\n%s", pkg, dir, err, b)
	}
	return nil
}

// findFaketime returns the path of libfaketime (Debian: apt-get install
// libfaketime), or "" when it is not installed.
func findFaketime() string {
	patterns := []string{
		"/usr/lib/*/faketime/libfaketime.so.1",
		"/usr/lib/faketime/libfaketime.so.1",
		"/usr/local/lib/faketime/libfaketime.so.1",
	}
	for _, p := range patterns {
		if m, _ := filepath.Glob(p); len(m) > 0 {
			return m[0]
		}
	}
	return ""
}

// exitStatus is a finished command's exit status: -1 when it was killed by a
// signal or could not start.
func exitStatus(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return -1
}

// isolatedEnv is the environment every fusebox run gets: state in dir/state,
// the empty config dir/config.yaml, and nothing of the user's.
func isolatedEnv(dir string) []string {
	return []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + dir,
		"LANG=C",
		"FUSEBOX_STATE_DIR=" + filepath.Join(dir, "state"),
		"FUSEBOX_CONFIG=" + filepath.Join(dir, "config.yaml"),
		"CB_DIR=" + dir,
	}
}

// newScratch makes dir with an empty config, so no user config is read.
func newScratch(parent, name string) (string, error) {
	dir := filepath.Join(parent, name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	return dir, os.WriteFile(filepath.Join(dir, "config.yaml"), nil, 0o600)
}
