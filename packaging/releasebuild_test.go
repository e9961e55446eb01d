package packaging_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// releaseVersion is the version the shared release build stamps in,
// given to release.sh with a leading v, which it drops.
const releaseVersion = "1.2.3~test"

// releaseBuild is one run of release.sh for every platform, shared by the
// tests that check what it makes (the archives and .debs, each binary on
// its CPU, the .deb installed): a release build takes a minute or two on
// a busy machine, and the three read the same files. Its dir is removed
// by TestMain.
var releaseBuild struct {
	once sync.Once
	dir  string
	out  []byte
	err  error
}

// release returns the dir of the shared release build, running release.sh
// for it the first time a test asks; a test that cannot run it skips.
func release(t *testing.T) string {
	t.Helper()
	testenv.Heavy(t) // release.sh: a build for every platform, and dpkg-deb
	for _, tool := range []string{"dpkg-deb", "tar", "gzip", "sha256sum"} {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.Skip(t, "release.sh needs %s (apt-get install dpkg): %v", tool, err)
		}
	}
	b := &releaseBuild
	b.once.Do(func() {
		if b.dir, b.err = os.MkdirTemp("", "fusebox-release-test-"); b.err != nil {
			return
		}
		cmd := exec.Command("./release.sh", b.dir)
		cmd.Env = append(os.Environ(), "VERSION=v"+releaseVersion)
		b.out, b.err = cmd.CombinedOutput()
	})
	if b.err != nil {
		t.Fatalf("release.sh failed (%v; a kill means the test's -timeout ran out):\n%s", b.err, b.out)
	}
	return b.dir
}

// removeRelease removes the shared release build's dir, if a test made it.
func removeRelease() {
	if releaseBuild.dir != "" {
		os.RemoveAll(releaseBuild.dir)
	}
}

// releaseFile is the path of a file of the shared release build.
func releaseFile(t *testing.T, name string) string {
	t.Helper()
	return filepath.Join(release(t), name)
}
