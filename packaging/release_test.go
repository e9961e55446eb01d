package packaging_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// TestReleaseBuildsAnArchiveAndADebThatRuns runs release.sh for
// linux/amd64 alone and checks what a user downloads: the archive, the
// .deb as dpkg-deb reads it (fields, files, maintainer scripts), and the
// binary unpacked from the .deb running the demo.
func TestReleaseBuildsAnArchiveAndADebThatRuns(t *testing.T) {
	t.Parallel()
	out := release(t)
	const version = releaseVersion
	archive := filepath.Join(out, "fusebox-"+version+"-linux-amd64.tar.gz")
	deb := filepath.Join(out, "fusebox_"+version+"_amd64.deb")

	t.Run("SHA256SUMS covers both files", func(t *testing.T) {
		sums, err := os.ReadFile(filepath.Join(out, "SHA256SUMS"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{archive, deb} {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(b)
			if line := hex.EncodeToString(sum[:]) + "  " + filepath.Base(f) + "\n"; !strings.Contains(string(sums), line) {
				t.Errorf("SHA256SUMS lacks %q:\n%s", line, sums)
			}
		}
	})

	t.Run("the archive holds a static binary, the man pages, the units, the docs and the licenses", func(t *testing.T) {
		files := tarFiles(t, archive)
		top := "fusebox-" + version + "-linux-amd64/"
		for _, want := range append([]string{"fusebox", "README.md", "LICENSE", "NOTICE", "THIRD-PARTY-LICENSES", "man/fusebox.1", "man/fusebox-run.1", "systemd/fusebox.service"}, docPages(t)...) {
			if _, ok := files[top+want]; !ok {
				t.Errorf("archive lacks %s%s; it has %v", top, want, keys(files))
			}
		}
		if license, err := os.ReadFile("../LICENSE"); err != nil || !bytes.Equal(files[top+"LICENSE"], license) || !bytes.Contains(license, []byte("Apache License\n                           Version 2.0")) {
			t.Errorf("the archive's LICENSE is not the checkout's Apache License 2.0 (%v)", err)
		}
		if bin, ok := files[top+"fusebox"]; ok {
			checkStatic(t, bin)
			checkThirdPartyLicenses(t, bin, string(files[top+"THIRD-PARTY-LICENSES"]))
		}
	})

	t.Run("control fields", func(t *testing.T) {
		for field, want := range map[string]string{
			"Package": "fusebox", "Version": version, "Architecture": "amd64",
			"Section": "utils", "Priority": "optional",
		} {
			if got := dpkgDeb(t, "--field", deb, field); got != want {
				t.Errorf("%s: %q, want %q", field, got, want)
			}
		}
		for _, field := range []string{"Maintainer", "Description", "Installed-Size"} {
			if got := dpkgDeb(t, "--field", deb, field); got == "" {
				t.Errorf("%s is empty", field)
			}
		}
	})

	t.Run("contents", func(t *testing.T) {
		list := dpkgDeb(t, "--contents", deb)
		want := []string{"-rwxr-xr-x root/root", "./usr/bin/fusebox"}
		if !lineWith(list, want...) {
			t.Errorf("no line with %q in:\n%s", want, list)
		}
		for _, f := range []string{"fusebox.service", "fusebox-job@.service", "fusebox-job@.timer"} {
			if !lineWith(list, "-rw-r--r-- root/root", "./usr/lib/systemd/system/"+f) {
				t.Errorf("no unit %s, 0644 root, in:\n%s", f, list)
			}
		}
		if !lineWith(list, "-rw-r--r-- root/root", "./etc/fusebox/config.yaml") {
			t.Errorf("no config, 0644 root, at /etc/fusebox/config.yaml:\n%s", list)
		}
		for _, p := range append([]string{"README.md", "copyright", "changelog.gz", "THIRD-PARTY-LICENSES.gz"}, docPages(t)...) {
			if !lineWith(list, "-rw-r--r-- root/root", "./usr/share/doc/fusebox/"+p) {
				t.Errorf("no %s, 0644 root, in /usr/share/doc/fusebox:\n%s", p, list)
			}
		}
		pages, _ := filepath.Glob("../docs/man/*.1")
		if len(pages) == 0 {
			t.Fatal("no man pages in docs/man")
		}
		for _, p := range pages {
			if !lineWith(list, "./usr/share/man/man1/"+filepath.Base(p)+".gz") {
				t.Errorf("no man page %s.gz in:\n%s", filepath.Base(p), list)
			}
		}
	})

	t.Run("maintainer scripts are executable and parse", func(t *testing.T) {
		ctl := t.TempDir()
		dpkgDeb(t, "--control", deb, ctl)
		for _, s := range []string{"postinst", "prerm", "postrm"} {
			p := filepath.Join(ctl, s)
			fi, err := os.Stat(p)
			if err != nil {
				t.Errorf("no %s: %v", s, err)
				continue
			}
			if fi.Mode()&0o111 != 0o111 {
				t.Errorf("%s is %v, want executable by all", s, fi.Mode())
			}
			if b, err := exec.Command("sh", "-n", p).CombinedOutput(); err != nil {
				t.Errorf("sh -n %s: %v\n%s", s, err, b)
			}
		}
		if b, _ := os.ReadFile(filepath.Join(ctl, "postinst")); !bytes.Contains(b, []byte("groupadd --system fusebox")) || !bytes.Contains(b, []byte("/var/lib/fusebox")) {
			t.Errorf("postinst creates no fusebox group or state dir:\n%s", b)
		}
	})

	t.Run("the config is a conffile", func(t *testing.T) {
		if got := dpkgDeb(t, "--info", deb, "conffiles"); got != "/etc/fusebox/config.yaml" {
			t.Errorf("conffiles: %q, want /etc/fusebox/config.yaml alone", got)
		}
	})

	t.Run("copyright and changelog", func(t *testing.T) {
		root := t.TempDir()
		dpkgDeb(t, "-x", deb, root)
		doc := filepath.Join(root, "usr/share/doc/fusebox")
		copyright, err := os.ReadFile(filepath.Join(doc, "copyright"))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{
			"Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n",
			"\nFiles: *\nCopyright: 2026 The fusebox authors\nLicense: Apache-2.0\n",
			"/usr/share/common-licenses/Apache-2.0",
		} {
			if !bytes.Contains(copyright, []byte(want)) {
				t.Errorf("copyright lacks %q:\n%s", want, copyright)
			}
		}
		changelog := gunzip(t, filepath.Join(doc, "changelog.gz"))
		if first, _, _ := strings.Cut(changelog, "\n"); first != "fusebox ("+version+") unstable; urgency=medium" {
			t.Errorf("changelog.gz starts %q, want this release's entry:\n%s", first, changelog)
		}
		bin, err := os.ReadFile(filepath.Join(root, "usr/bin/fusebox"))
		if err != nil {
			t.Fatal(err)
		}
		checkThirdPartyLicenses(t, bin, gunzip(t, filepath.Join(doc, "THIRD-PARTY-LICENSES.gz")))
	})

	t.Run("lintian finds no error", func(t *testing.T) {
		lintian(t, deb)
	})

	t.Run("the shipped config is valid and the daemon starts on it", func(t *testing.T) {
		root := t.TempDir()
		dpkgDeb(t, "-x", deb, root)
		bin := filepath.Join(root, "usr/bin/fusebox")
		config := filepath.Join(root, "etc/fusebox/config.yaml")
		state := t.TempDir()
		env := []string{"HOME=" + t.TempDir()}
		p := testenv.Run(t, testenv.FuseboxCmd(bin, state, env, "validate", "--config", config))
		if p.Code != 0 || !strings.Contains(p.Stdout, "ok (0 circuits") {
			t.Errorf("fusebox validate on the shipped config: exit %d\n%s%s", p.Code, p.Stdout, p.Stderr)
		}
		d := testenv.StartDaemon(t, testenv.FuseboxCmd(bin, state, env, "serve", "--listen", "127.0.0.1:0", "--config", config))
		if code, _, body := d.Get(t, "/api/circuits"); code != 200 || strings.TrimSpace(body) != "[]" {
			t.Errorf("GET /api/circuits of the daemon on the shipped config: %d %s", code, body)
		}
		if logged := d.Stop(t); len(troubleLines(logged)) > 0 {
			t.Errorf("the daemon on the shipped config logged trouble:\n%s", logged)
		}
		// Its commented example, uncommented, is a valid config too.
		b, err := os.ReadFile(config)
		if err != nil {
			t.Fatal(err)
		}
		_, example, ok := strings.Cut(string(b), "\n# defaults:")
		if !ok {
			t.Fatalf("the shipped config has no commented example from \"# defaults:\":\n%s", b)
		}
		uncommented := filepath.Join(t.TempDir(), "config.yaml")
		if err := os.WriteFile(uncommented, []byte(strings.ReplaceAll("# defaults:"+example, "\n# ", "\n")[2:]), 0o600); err != nil {
			t.Fatal(err)
		}
		p = testenv.Run(t, testenv.FuseboxCmd(bin, state, env, "validate", "--config", uncommented))
		if p.Code != 0 || !strings.Contains(p.Stdout, "ok (2 circuits, 1 of them HTTP endpoints") {
			t.Errorf("fusebox validate on the shipped config's example, uncommented: exit %d\n%s%s", p.Code, p.Stdout, p.Stderr)
		}
	})

	t.Run("the unpacked binary runs the demo", func(t *testing.T) {
		root := t.TempDir()
		dpkgDeb(t, "-x", deb, root)
		bin := filepath.Join(root, "usr/bin/fusebox")
		if b, err := os.ReadFile(filepath.Join(root, "usr/lib/systemd/system/fusebox.service")); err != nil || !bytes.Contains(b, []byte("ExecStart=/usr/bin/fusebox serve")) {
			t.Errorf("fusebox.service does not start /usr/bin/fusebox (%v):\n%s", err, b)
		}
		if v, err := exec.Command(bin, "--version").Output(); err != nil || string(v) != "fusebox "+version+"\n" {
			t.Errorf("fusebox --version: %q, %v; want the release's version stamped in", v, err)
		}
		demo := exec.Command(bin, "demo", "--fast")
		demo.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "TMPDIR=" + t.TempDir()}
		b, err := demo.CombinedOutput()
		if err != nil {
			t.Fatalf("fusebox demo --fast from the .deb: %v\n%s", err, b)
		}
		for _, want := range []string{"circuit opened circuit=weather-api", "answered 21.3 from backup-api", "1 probed and got an answer, 9 skipped"} {
			if !bytes.Contains(b, []byte(want)) {
				t.Errorf("demo output lacks %q:\n%s", want, b)
			}
		}
	})
}

// lintian fails the test on any error lintian reports on deb (an E:
// line), and logs the rest.
func lintian(t *testing.T, deb string) {
	t.Helper()
	if _, err := exec.LookPath("lintian"); err != nil {
		testenv.Skip(t, "checking the .deb needs lintian (apt-get install lintian): %v", err)
	}
	cmd := exec.Command("lintian", "--tag-display-limit", "0", deb)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	// lintian exits 2 when it reports an error (an E: line, below), 0 or
	// 1 otherwise; anything else is lintian's own trouble.
	if code := cmd.ProcessState.ExitCode(); code < 0 || code > 2 {
		t.Errorf("lintian %s: %v\n%s%s", filepath.Base(deb), err, out, stderr.Bytes())
	}
	for line := range strings.Lines(string(out)) {
		if strings.HasPrefix(line, "E: ") {
			t.Errorf("lintian: %s", strings.TrimSpace(line))
		}
	}
	t.Logf("lintian %s:\n%s", filepath.Base(deb), out)
}

// checkThirdPartyLicenses fails unless licenses, a release's
// THIRD-PARTY-LICENSES, has Go's license and one for every module bin
// links in, as go version -m lists them.
func checkThirdPartyLicenses(t *testing.T, bin []byte, licenses string) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "fusebox")
	if err := os.WriteFile(f, bin, 0o600); err != nil {
		t.Fatal(err)
	}
	info, err := exec.Command("go", "version", "-m", f).Output()
	if err != nil {
		t.Fatalf("go version -m: %v", err)
	}
	wants := []string{"\n==== Go go"}
	for line := range strings.Lines(string(info)) {
		if fields := strings.Fields(line); len(fields) >= 3 && (fields[0] == "dep" || fields[0] == "=>") {
			wants = append(wants, "\n==== "+fields[1]+" "+fields[2]+" (")
		}
	}
	if len(wants) < 3 {
		t.Fatalf("go version -m lists no module the binary links in:\n%s", info)
	}
	for _, want := range wants {
		if !strings.Contains(licenses, want) {
			t.Errorf("THIRD-PARTY-LICENSES lacks %q", strings.TrimSpace(want))
		}
	}
}

// gunzip returns the text of a .gz file.
func gunzip(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return string(b)
}

// troubleLines returns the lines of stderr that say fusebox is in trouble.
func troubleLines(stderr string) []string {
	var out []string
	for l := range strings.Lines(stderr) {
		if strings.Contains(l, "level=ERROR") || strings.Contains(l, "without circuit protection") || strings.Contains(l, "permission denied") {
			out = append(out, l)
		}
	}
	return out
}

// dpkgDeb runs dpkg-deb with args and returns its stdout, trimmed.
func dpkgDeb(t *testing.T, args ...string) string {
	t.Helper()
	var stderr bytes.Buffer
	cmd := exec.Command("dpkg-deb", args...)
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("dpkg-deb %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return strings.TrimSpace(string(b))
}

// lineWith reports whether a line of text holds every one of subs.
func lineWith(text string, subs ...string) bool {
	for line := range strings.Lines(text) {
		ok := true
		for _, s := range subs {
			ok = ok && strings.Contains(line, s)
		}
		if ok {
			return true
		}
	}
	return false
}

// tarFiles reads the regular files of a .tar.gz, by name.
func tarFiles(t *testing.T, path string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	tr := tar.NewReader(strings.NewReader(gunzip(t, path)))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if h.Uid != 0 || h.Gid != 0 {
			t.Errorf("%s is owned by %d:%d in the archive, want 0:0", h.Name, h.Uid, h.Gid)
		}
		if h.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			files[h.Name] = b
		}
	}
}

// checkStatic fails unless bin is an ELF executable with no interpreter
// (static, CGO_ENABLED=0) and no symbol table (stripped).
func checkStatic(t *testing.T, bin []byte) {
	t.Helper()
	f, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		t.Fatalf("the archive's fusebox is no ELF binary: %v", err)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("fusebox has a dynamic loader (PT_INTERP): not a static build")
		}
	}
	if s := f.Section(".symtab"); s != nil {
		t.Error("fusebox has a symbol table: not stripped (-s -w)")
	}
}

func keys(m map[string][]byte) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

// docPages returns the pages README.md links to, docs/*.md, as paths from
// the repository's root: a release ships them beside README.md, so that
// its links resolve where it is unpacked or installed.
func docPages(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob("../docs/*.md")
	if err != nil || len(pages) == 0 {
		t.Fatalf("no pages in docs/ (%v)", err)
	}
	for i, p := range pages {
		pages[i] = "docs/" + filepath.Base(p)
	}
	return pages
}
