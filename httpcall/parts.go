package httpcall

import (
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
// URL and body. A subpath stays below the URL's path, on its host: no
// segment may be empty, "." or "..", or hold a backslash, a "%" or a NUL.
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
			// No escapes either: a server that decodes twice must not
			// find a ".." in "%252e%252e".
			if s == "" || s == "." || s == ".." || strings.ContainsAny(s, "\\%\x00") {
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
		if u.RawQuery == "" {
			u.RawQuery = opt.Query.Encode()
		} else {
			q := u.Query()
			for k, vs := range opt.Query {
				if _, taken := q[k]; taken {
					return nil, fmt.Errorf("%w: query parameter %q is set by the config", ErrNotAllowed, k)
				}
				q[k] = vs
			}
			u.RawQuery = q.Encode()
		}
	}
	if opt.Body != nil && !ep.PassBody {
		return nil, fmt.Errorf("%w: a request body (set pass_body)", ErrNotAllowed)
	}
	return &parts{url: u.String(), body: opt.Body}, nil
}
