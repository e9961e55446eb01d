package httpcall

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/url"
	"strings"
	"syscall"

	"github.com/fusebox-hq/fusebox/breaker"
)

// failureKind sorts the ways a request can fail before a response arrives.
type failureKind int

const (
	kindConnect  failureKind = iota // refused, reset, DNS name not found, closed early
	kindTimeout                     // nothing came back in time
	kindLocal                       // this machine's own network is down
	kindTLS                         // certificate or handshake problem: retrying will not help
	kindCanceled                    // the caller gave up
)

// transportFailure is a request that got no response.
type transportFailure struct {
	kind   failureKind
	reason string // short, for people; holds no URL
	// dial is set when the connection was never made, so the request cannot
	// have reached the server and retrying even a POST is safe.
	dial  bool
	cause breaker.Cause
}

// classify explains err, returned by an HTTP round trip made with ctx. Once
// ctx has expired the failure is a timeout, whatever err says (a transport
// reports the cancellation it saw).
func classify(ctx context.Context, err error) transportFailure {
	var op *net.OpError
	dial := errors.As(err, &op) && op.Op == "dial"
	f := transportFailure{kind: kindConnect, dial: dial}
	var dns *net.DNSError
	isDNS := errors.As(err, &dns)
	switch {
	case errors.Is(ctx.Err(), context.Canceled):
		f.kind, f.reason = kindCanceled, "canceled"
	case isDNS && dns.IsNotFound:
		f.reason, f.cause = "DNS: no such host "+dns.Name, CauseDNS
	case isDNS && localDNSFailure(dns):
		f.kind, f.reason = kindLocal, "local network: no DNS server reachable ("+dns.Err+")"
	case isDNS && dns.IsTimeout:
		f.kind, f.reason = kindTimeout, "DNS lookup of "+dns.Name+" timed out"
	case isDNS:
		f.reason, f.cause = "DNS lookup of "+dns.Name+" failed: "+dns.Err, CauseDNS
	case ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		f.kind, f.reason = kindTimeout, "no response"
		if dial {
			f.reason = "could not connect"
		}
	case errors.Is(err, context.Canceled):
		f.kind, f.reason = kindCanceled, "canceled"
	case errors.Is(err, syscall.ENETUNREACH):
		f.kind, f.reason = kindLocal, "local network: network unreachable"
	case errors.Is(err, syscall.EHOSTUNREACH):
		f.kind, f.reason = kindLocal, "local network: no route to host"
	case errors.Is(err, syscall.ENETDOWN):
		f.kind, f.reason = kindLocal, "local network: network is down"
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		f.kind, f.reason = kindLocal, "local network: no usable local address"
	case errors.Is(err, syscall.ECONNREFUSED):
		f.reason = "connection refused"
	case errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNABORTED):
		f.reason = "connection reset"
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		f.reason = "connection closed before the response"
	case isTLSFailure(err):
		f.kind, f.reason = kindTLS, "TLS: "+innermost(err)
	default:
		f.reason = innermost(err)
	}
	if f.cause == "" {
		f.cause = map[failureKind]breaker.Cause{kindConnect: CauseConnect, kindTimeout: breaker.CauseTimeout,
			kindLocal: CauseLocal, kindTLS: CauseTLS}[f.kind]
	}
	return f
}

// localDNSFailure reports whether a lookup failed because no DNS server
// could be reached from here, rather than because of the name or the server.
// The resolver keeps only the text of the underlying error.
func localDNSFailure(e *net.DNSError) bool {
	for _, s := range []string{"connection refused", "network is unreachable", "no route to host", "network is down"} {
		if strings.Contains(e.Err, s) {
			return true
		}
	}
	return false
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func isTLSFailure(err error) bool {
	var (
		rec  tls.RecordHeaderError
		ver  *tls.CertificateVerificationError
		ua   x509.UnknownAuthorityError
		host x509.HostnameError
		inv  x509.CertificateInvalidError
	)
	return errors.As(err, &rec) || errors.As(err, &ver) || errors.As(err, &ua) || errors.As(err, &host) || errors.As(err, &inv)
}

// innermost returns the text of err without the URL that *url.Error adds
// (it may hold secrets) and without the "dial tcp 1.2.3.4:80:" prefixes.
func innermost(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		err = op.Err
	}
	return err.Error()
}
