package httpcall

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// parts are one request's own URL and body, from CallOptions.
type parts struct {
	url  string
	body []byte // nil: the endpoint's
}

// parts checks what opt adds against ep's leave and returns the request's
// URL and body. A subpath stays below the URL's path, on its host (see
// plainSegment), and a caller's query parameter may not be one the URL sets,
// in any spelling a server may take for it (see paramNames).
func (ep *endpoint) parts(opt CallOptions) (*parts, error) {
	base := ep.parsed // compile's
	if base == nil {
		var err error
		if base, err = url.Parse(ep.URL); err != nil {
			return nil, err
		}
	}
	u := *base // a copy: its Userinfo, shared, is never changed
	if opt.Subpath != "" {
		if !ep.AllowSubpath {
			return nil, fmt.Errorf("%w: a path below the URL (set allow_subpath)", ErrNotAllowed)
		}
		for _, s := range strings.Split(opt.Subpath, "/") {
			if !plainSegment(s) {
				return nil, fmt.Errorf("%w: path segment %q", ErrNotAllowed, s)
			}
		}
		// Path, not RawPath: the URL escapes what the segments hold
		// ("?" becomes %3F), and nothing in them is read as an escape.
		u.Path = strings.TrimSuffix(u.Path, "/") + "/" + opt.Subpath
		u.RawPath = ""
	}
	if len(opt.Query) > 0 {
		if !ep.PassQuery {
			return nil, fmt.Errorf("%w: query parameters (set pass_query)", ErrNotAllowed)
		}
		mine, err := CheckQuery(opt.Query)
		if err != nil {
			return nil, err
		}
		if u.RawQuery == "" {
			u.RawQuery = mine
		} else {
			q := u.Query()
			set := make(map[string]bool, 3*len(q))
			for k := range q {
				for _, n := range paramNames(k) {
					set[n] = n != ""
				}
			}
			for k := range opt.Query {
				for _, n := range paramNames(k) {
					if set[n] {
						return nil, fmt.Errorf("%w: query parameter %q is set by the config", ErrNotAllowed, k)
					}
				}
			}
			// The config's parameters first, as written: a server that
			// reads only so many (PHP's max_input_vars) reads them all.
			u.RawQuery += "&" + mine
		}
	}
	if opt.Body != nil && !ep.PassBody {
		return nil, fmt.Errorf("%w: a request body (set pass_body)", ErrNotAllowed)
	}
	return &parts{url: u.String(), body: opt.Body}, nil
}

// Bounds of a caller's query (CallOptions.Query), so that what a caller
// adds never crowds out the config's parameters, nor grows the request
// line past what servers take: each value of a repeated name counts.
const (
	MaxQueryParams = 100
	MaxQueryBytes  = 4 << 10 // encoded
)

// ErrQueryTooLarge: a caller's query past MaxQueryParams or MaxQueryBytes.
var ErrQueryTooLarge = errors.New("query too large")

// CheckQuery returns q encoded, or an error wrapping ErrQueryTooLarge when
// it has more than MaxQueryParams values or more than MaxQueryBytes
// encoded; it counts before it encodes anything.
func CheckQuery(q url.Values) (string, error) {
	n, size := 0, 0
	for k, vs := range q {
		n += max(len(vs), 1)
		for _, v := range vs {
			size += len(k) + len(v) + 2 // before escaping, which only grows it
		}
	}
	if n > MaxQueryParams {
		return "", fmt.Errorf("%w: %d parameters, more than the %d a caller may add", ErrQueryTooLarge, n, MaxQueryParams)
	}
	if size > MaxQueryBytes {
		return "", fmt.Errorf("%w: %d bytes, more than the %d a caller may add", ErrQueryTooLarge, size, MaxQueryBytes)
	}
	enc := q.Encode()
	if len(enc) > MaxQueryBytes {
		return "", fmt.Errorf("%w: %d bytes encoded, more than the %d a caller may add", ErrQueryTooLarge, len(enc), MaxQueryBytes)
	}
	return enc, nil
}

// plainSegment reports whether s, a segment of a caller's subpath, is one
// every server reads as a plain name below the URL's path. Refused: an empty
// segment; one of dots alone ("..", and "..." that Windows servers trim to
// it), counting the look-alike dots some servers fold to "." (U+2024,
// U+FE52, U+FF0E) and ignoring spaces and tabs they trim; a ";" anywhere
// (Tomcat and Jetty cut a segment's parameters off, and read "..;" as
// ".."); escapes ("%", so that a server decoding twice finds no ".." in
// "%252e%252e"), backslashes and control characters.
func plainSegment(s string) bool {
	if s == "" || strings.ContainsAny(s, ";\\%") {
		return false
	}
	dots := true
	for _, r := range s {
		switch {
		case r < 0x20 || r == 0x7f:
			return false
		case r == '.' || r == '\u2024' || r == '\ufe52' || r == '\uff0e' || r == ' ' || r == '\t':
		default:
			dots = false
		}
	}
	return !dots
}

// paramNames are the names, in lower case, that a server may take a query
// parameter k for: servers compare names without case (.NET's upper-case
// fold reads "appıd", a dotless i, as "APPID"), cut them at a NUL
// (PHP's are C strings) and trim the spaces around them; many make
// "appid[]" or "appid[0]" an array under "appid"; and PHP reads a name as
// phpName says.
func paramNames(k string) []string {
	k, _, _ = strings.Cut(strings.ToLower(strings.ToUpper(k)), "\x00")
	plain := strings.Trim(k, " \t\n\v\f\r")
	names := []string{plain, phpName(strings.TrimLeft(k, " "))}
	if i := strings.IndexByte(plain, '['); i > 0 && strings.IndexByte(plain[i:], ']') > 0 {
		names = append(names, plain[:i])
	}
	return names
}

// phpName is the name PHP registers a query parameter k under, its leading
// spaces skipped (main/php_variables.c): "." and " " read as "_" up to a
// "[", which starts an array's index when a "]" follows it, and otherwise
// reads as "_" too, the rest of the name kept as it is.
func phpName(k string) string {
	b := []byte(k)
	for i, c := range b {
		switch c {
		case ' ', '.':
			b[i] = '_'
		case '[':
			if strings.IndexByte(k[i:], ']') > 0 {
				return string(b[:i])
			}
			b[i] = '_'
			return string(b)
		}
	}
	return string(b)
}
