// Package spec holds the plain descriptions config produces and the packages
// that act on them compile: an HTTP endpoint or fallback chain (httpcall), a
// circuit's notification rules (notify, notify/mqtt). They are data only,
// values already expanded, so that config depends on neither httpcall nor
// notify, and a program may build them without a config file.
package spec
