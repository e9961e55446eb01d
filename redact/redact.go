// Package redact hides secrets in text before it is logged or shown: the
// values a configuration names as secret, and anything that looks like a
// credential (secret-looking query parameters, Authorization headers, Bearer
// and Basic tokens, passwords in URLs).
package redact

import (
	"bytes"
	"encoding/json"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// Marker replaces every hidden value.
const Marker = "REDACTED"

// MinSecretLen is the length below which a secret is ignored: hiding every
// "abc" in a log would hide more than it protects.
const MinSecretLen = 4

// Redactor hides known secrets and credential-looking values. It is immutable
// and safe for concurrent use. A nil *Redactor hides only credential-looking
// values.
type Redactor struct {
	secrets []string // the secrets and their escaped forms, longest first
	later   *later   // WithLater's secrets, nil when none are awaited
}

// later is what WithLater adds, found once, when first needed.
type later struct {
	once sync.Once
	more func() []string
	all  *Redactor
}

// WithLater returns a Redactor that hides r's secrets and, from the first
// text it redacts on, the secrets more returns: for secrets that cost
// something to find, such as the rest of a config fusebox run read only its
// own part of, while most runs print nothing. more is called at most once;
// r is unchanged.
func (r *Redactor) WithLater(more func() []string) *Redactor {
	out := &Redactor{later: &later{more: more}}
	if r != nil {
		out.secrets = r.secrets
		if r.later != nil { // both: r's own later first
			prev := r
			out.later.more = func() []string { return append(prev.known(), more()...) }
		}
	}
	return out
}

// known returns the secrets to hide, WithLater's found now if not yet.
func (r *Redactor) known() []string {
	if r.later == nil {
		return r.secrets
	}
	l := r.later
	l.once.Do(func() { l.all = (&Redactor{secrets: r.secrets}).With(l.more()...) })
	return l.all.secrets
}

// New returns a Redactor that hides the given secrets. Secrets shorter than
// MinSecretLen bytes are ignored, and so are the few that are part of Marker
// itself ("EDAC", "ACTED", ...), since no replacement could hide them.
func New(secrets ...string) *Redactor {
	return (*Redactor)(nil).With(secrets...)
}

// With returns a Redactor that hides r's secrets and the given ones; r is
// unchanged.
func (r *Redactor) With(secrets ...string) *Redactor {
	var all []string
	if r != nil {
		all = slices.Clone(r.known())
	}
	for _, s := range secrets {
		for _, v := range variants(s) {
			if len(v) >= MinSecretLen && !strings.Contains(Marker, v) && !slices.Contains(all, v) {
				all = append(all, v)
			}
		}
	}
	slices.SortStableFunc(all, func(a, b string) int { return len(b) - len(a) })
	return &Redactor{secrets: all}
}

// variants returns s and the forms it takes when escaped into a URL or a JSON
// string, so a secret is hidden however it got into the text.
func variants(s string) []string {
	if len(s) < MinSecretLen {
		return nil
	}
	out := []string{s, url.QueryEscape(s), url.PathEscape(s)}
	for _, html := range []bool{false, true} {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(html)
		if enc.Encode(s) == nil {
			q := strings.TrimSuffix(b.String(), "\n")
			out = append(out, q[1:len(q)-1])
		}
	}
	return out
}

// Credential-looking names: a query parameter, JSON key or header whose name
// is one of these, alone or after a prefix such as "x-api-", "client_" or
// "refresh_", has its value hidden.
const secretNames = `api_key|apikey|api-key|access_token|appid|password|passwd|secret|token|key|auth|signature`

// patterns are compiled on first use, not at package init: every cron run
// of fusebox links this package, and most never log anything.
var patterns = sync.OnceValue(func() *compiled {
	return &compiled{
		// Authorization: Bearer abc / authorization=abc
		authHeader: regexp.MustCompile(`(?i)(\b(?:proxy-)?authorization["']?\s*[:=]\s*["']?)((?:bearer|basic|token|digest|negotiate)\s+)?([^\s"',;\\]+)`),
		// Bearer abc, Basic dXNlcjpwYXNz
		bearer: regexp.MustCompile(`((?i:\bbearer)|\bBasic)(\s+)([A-Za-z0-9._~+/=-]+)`),
		// appid=abc, ?x-api-key=abc, client_secret=abc
		param: regexp.MustCompile(`(?i)((?:^|[^a-z0-9_.-])(?:[a-z0-9]+[_.-])*(?:` + secretNames + `)=)` + value(`&\s#"'<>\\`)),
		// X-Api-Key: abc. Fewer names than for parameters: "auth:" or "key:"
		// starts too many ordinary messages.
		header: regexp.MustCompile(`(?i)((?:^|[^a-z0-9_.-])(?:[a-z0-9]+[_.-])*(?:api_key|apikey|api-key|token|secret|password|passwd)[ \t]*:[ \t]*)` + value(`\s"',;\\<>(){}\[\]`)),
		// "token": "abc"
		json: regexp.MustCompile(`(?i)("(?:[a-z0-9]+[_.-])*(?:` + secretNames + `)"\s*:\s*")((?:[^"\\]|\\.)+)`),
		// https://user:pass@host
		userinfo: regexp.MustCompile(`(?i)(\b[a-z][a-z0-9+.-]*://[^/\s:@]*:)([^/\s@]+)(@)`),
	}
})

type compiled struct {
	authHeader, bearer, param, header, json, userinfo *regexp.Regexp
}

// secretName is compiled apart from patterns: IsSecretName runs for the
// headers and query parameters of every endpoint a fusebox call loads,
// which then most often logs nothing (a skip, a success), and compiling the
// text patterns with it was a quarter of a millisecond of such a call.
var secretName = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)^(?:[a-z0-9]+[_.-])*(?:` + secretNames + `)$`)
})

// value matches a credential: characters other than stop, where '.', ':',
// ',', ';' and ')' count only when more of it follows, so "appid=abc: failed"
// keeps its colon.
func value(stop string) string {
	c := `[^` + stop + `.:,;)]`
	return `(` + c + `+(?:[.:,;)]+` + c + `+)*)`
}

// String returns s with every known secret, and every credential-looking
// value, replaced by Marker. The result never contains a known secret.
func (r *Redactor) String(s string) string {
	re := patterns()
	s = re.authHeader.ReplaceAllString(s, "${1}${2}"+Marker)
	s = re.bearer.ReplaceAllString(s, "${1}${2}"+Marker)
	if strings.ContainsAny(s, "=:") {
		s = re.param.ReplaceAllString(s, "${1}"+Marker)
		s = re.header.ReplaceAllString(s, "${1}"+Marker)
		s = re.json.ReplaceAllString(s, "${1}"+Marker)
		s = re.userinfo.ReplaceAllString(s, "${1}"+Marker+"${3}")
	}
	if r == nil {
		return s
	}
	return r.hideCutSecrets(r.hideSecrets(s))
}

// hideCutSecrets hides what is left of a secret cut short where text was
// shortened: a prefix of one (MinSecretLen bytes or more) just before "..."
// or "…" (spaces between allowed), as jq's previews of values and fusebox's own shortened reasons
// end. A whole secret is hidden already; a part of one would still give
// away most of it.
func (r *Redactor) hideCutSecrets(s string) string {
	if !strings.Contains(s, "...") && !strings.Contains(s, "…") {
		return s
	}
	var b strings.Builder
	from := 0
	for i := 0; i < len(s); i++ {
		if !strings.HasPrefix(s[i:], "...") && !strings.HasPrefix(s[i:], "…") {
			continue
		}
		end := i // jq writes "abc ..."
		for end > from && s[end-1] == ' ' {
			end--
		}
		cut := 0
		for _, sec := range r.known() {
			for n := min(len(sec)-1, end-from); n >= MinSecretLen && n > cut; n-- {
				if s[end-n:end] == sec[:n] {
					cut = n
					break
				}
			}
		}
		if cut > 0 {
			b.WriteString(s[from : end-cut])
			b.WriteString(Marker)
			from = end
		}
	}
	if from == 0 {
		return s
	}
	b.WriteString(s[from:])
	return b.String()
}

// URL returns raw with the password in its user info, credential-looking
// query parameters and known secrets replaced by Marker. Text that does not
// parse as a URL is redacted as by String.
func (r *Redactor) URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return r.String(raw)
	}
	if u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), Marker)
		}
	}
	u.RawQuery = redactQuery(u.RawQuery)
	return r.String(u.String())
}

func redactQuery(q string) string {
	if q == "" {
		return q
	}
	parts := strings.Split(q, "&")
	for i, p := range parts {
		name, _, ok := strings.Cut(p, "=")
		if !ok {
			continue
		}
		if n, err := url.QueryUnescape(name); err == nil && IsSecretName(n) {
			parts[i] = name + "=" + Marker
		}
	}
	return strings.Join(parts, "&")
}

// IsSecretName reports whether a query parameter, header or flag of this name
// holds a credential: "appid", "token", "X-Api-Key", "client_secret",
// "Authorization", "Cookie", ...
func IsSecretName(name string) bool {
	switch strings.ToLower(name) {
	case "authorization", "proxy-authorization", "cookie", "set-cookie":
		return true
	}
	return secretName().MatchString(name)
}

// Args returns a copy of a command line fit for logging: every argument is
// redacted as by String, the value of a flag with a credential-looking name
// (--token=abc, --password abc) is hidden, and so is the password in curl's
// -u/--user user:password.
func (r *Redactor) Args(argv []string) []string {
	out := make([]string, len(argv))
	hideNext, userNext := false, false
	for i, a := range argv {
		switch {
		case hideNext && !strings.HasPrefix(a, "-"):
			out[i] = Marker
		case userNext:
			if name, _, ok := strings.Cut(a, ":"); ok {
				out[i] = r.String(name) + ":" + Marker
			} else {
				out[i] = r.String(a)
			}
		default:
			out[i] = r.arg(a)
		}
		hideNext, userNext = false, false
		name, _, hasValue := strings.Cut(a, "=")
		if !strings.HasPrefix(a, "-") || hasValue {
			continue
		}
		switch bare := strings.TrimLeft(name, "-"); {
		case a == "-u" || a == "--user" || a == "--proxy-user":
			userNext = true
		case len(bare) > 1 && IsSecretName(bare):
			hideNext = true
		}
	}
	return out
}

func (r *Redactor) arg(a string) string {
	if strings.HasPrefix(a, "-") {
		if name, _, ok := strings.Cut(a, "="); ok && IsSecretName(strings.TrimLeft(name, "-")) {
			return r.String(name) + "=" + Marker
		}
	}
	return r.String(a)
}

// Secrets returns s with the known secrets replaced by Marker and nothing
// else changed: for text that names credentials without holding them, such
// as a config error about a missing !secret.
func (r *Redactor) Secrets(s string) string { return r.hideSecrets(s) }

// hideSecrets replaces every stretch of s covered by known secrets
// (overlapping or adjacent occurrences merge into one) with Marker. Should the
// result hold a secret made up of a marker and the text around it, the text
// it took is hidden too, until no secret is left.
func (r *Redactor) hideSecrets(s string) string {
	secrets := r.known()
	var hidden []bool
	for _, sec := range secrets {
		marked := 0 // bytes before this are already marked for sec
		for from := 0; ; {
			k := strings.Index(s[from:], sec)
			if k < 0 {
				break
			}
			if hidden == nil {
				hidden = make([]bool, len(s))
			}
			start := from + k
			for j := max(start, marked); j < start+len(sec); j++ {
				hidden[j] = true
			}
			marked = start + len(sec)
			from = start + 1
		}
	}
	if hidden == nil {
		return s
	}
	for range len(s) + 1 {
		out, origin := render(s, hidden)
		progress, leaked := false, false
		for _, sec := range secrets {
			for from := 0; ; {
				k := strings.Index(out[from:], sec)
				if k < 0 {
					break
				}
				leaked = true
				for _, o := range origin[from+k : from+k+len(sec)] {
					if o >= 0 && !hidden[o] {
						hidden[o], progress = true, true
					}
				}
				from += k + 1
			}
		}
		if !leaked {
			return out
		}
		if !progress {
			break
		}
	}
	return Marker // unreachable while secrets are never part of Marker
}

// render returns s with each run of hidden bytes replaced by Marker, and for
// each byte of the result the index in s it came from (-1 inside a marker).
func render(s string, hidden []bool) (string, []int) {
	var b strings.Builder
	origin := make([]int, 0, len(s))
	for i := 0; i < len(s); i++ {
		if !hidden[i] {
			b.WriteByte(s[i])
			origin = append(origin, i)
			continue
		}
		for i+1 < len(s) && hidden[i+1] {
			i++
		}
		b.WriteString(Marker)
		for range len(Marker) {
			origin = append(origin, -1)
		}
	}
	return b.String(), origin
}
