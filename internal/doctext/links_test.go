package doctext

import (
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// TestDocsLinksResolve: every relative link of README.md and docs/*.md
// names a file of the repository, and a link to a heading (page.md#anchor,
// or #anchor on the page itself) names a heading that page has.
func TestDocsLinksResolve(t *testing.T) {
	root := Root(t)
	for _, page := range Pages(t) {
		for _, link := range links(Read(t, page)) {
			if strings.Contains(link, "://") || strings.HasPrefix(link, "mailto:") {
				continue
			}
			target, anchor, _ := strings.Cut(link, "#")
			file := page
			if target != "" {
				file = path.Join(path.Dir(page), target)
				if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(file))); err != nil {
					t.Errorf("%s links to %s: %v", page, link, err)
					continue
				}
			}
			if anchor != "" && strings.HasSuffix(file, ".md") {
				if !anchors(Read(t, file))[anchor] {
					t.Errorf("%s links to %s: %s has no heading #%s", page, link, file, anchor)
				}
			}
		}
	}
}

var (
	linkRE   = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	inlineRE = regexp.MustCompile("`[^`\n]*`")
)

// links returns the targets of text's markdown links, outside code.
func links(text string) []string {
	var out []string
	fenced := false
	for line := range strings.Lines(text) {
		if strings.HasPrefix(strings.TrimLeft(line, " \t"), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		// A link's text may be code ([`examples/weather.yaml`](...)): drop
		// code spans but keep what follows them.
		line = inlineRE.ReplaceAllString(line, "code")
		for _, m := range linkRE.FindAllStringSubmatch(line, -1) {
			out = append(out, m[1])
		}
	}
	return out
}

// anchors returns the anchors GitHub gives text's headings: lower case,
// punctuation dropped, spaces made hyphens, a repeated one numbered.
func anchors(text string) map[string]bool {
	seen := map[string]int{}
	out := map[string]bool{}
	fenced := false
	for line := range strings.Lines(text) {
		if strings.HasPrefix(strings.TrimLeft(line, " \t"), "```") {
			fenced = !fenced
			continue
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		heading := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(heading) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteRune('-')
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			out[a+"-"+strconv.Itoa(n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

func TestAnchorsAreGitHubs(t *testing.T) {
	got := anchors("# fusebox\n## Serve n8n, Node-RED and Home Assistant: `fusebox serve`\n```sh\n# not a heading\n```\n### 1b. The burst: a retry budget\n## Exit status\n## Exit status\n")
	for _, want := range []string{"fusebox", "serve-n8n-node-red-and-home-assistant-fusebox-serve", "1b-the-burst-a-retry-budget", "exit-status", "exit-status-1"} {
		if !got[want] {
			t.Errorf("no anchor %q in %v", want, got)
		}
	}
	if got["not-a-heading"] {
		t.Errorf("a comment in a code block made an anchor: %v", got)
	}
}

func TestLinksSkipCode(t *testing.T) {
	got := links("see [`a.yaml`](examples/a.yaml) and [b](b.md#x)\n```sh\n[c](nowhere)\n```\n`[d](nowhere)`\n")
	if strings.Join(got, " ") != "examples/a.yaml b.md#x" {
		t.Errorf("links: %q", got)
	}
}
