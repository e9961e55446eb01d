// Package httpsyntax holds the few RFC 9110 grammar checks that fusebox
// makes itself on HTTP messages: the daemon on the requests it reads, the
// direct transport on the requests it writes.
package httpsyntax

import "strings"

// Token reports whether s is an RFC 9110 token: what a header's name or a
// method must be.
func Token(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0 {
			continue
		}
		return false
	}
	return true
}

// FieldValue reports whether s may stand as a header's value as it is: no
// control byte but the tab.
func FieldValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}
