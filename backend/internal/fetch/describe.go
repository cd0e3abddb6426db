package fetch

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"syscall"

	"github.com/lectern-reader/lectern/backend/internal/fetch/gate"
)

// Describe says in words what went wrong with a fetch, for the people who
// read a poll's problem (the Series page, the Owner console): "Could not
// reach asurascans.com (DNS lookup failed)" rather than Go's nested
// "fetch https://…: Get "https://…": resolve …: lookup … no such host". The
// raw error is the log's; a failure it cannot name keeps the raw text.
func Describe(err error) string {
	if err == nil {
		return ""
	}
	host := hostOf(err)
	reach := func(why string) string { return fmt.Sprintf("Could not reach %s (%s)", host, why) }
	var (
		dns    *net.DNSError
		status *StatusError
		unk    x509.UnknownAuthorityError
		inv    x509.CertificateInvalidError
		name   x509.HostnameError
		verify *tls.CertificateVerificationError
		ne     net.Error
	)
	switch {
	case errors.As(err, &status):
		return fmt.Sprintf("%s answered HTTP %d (%s)", host, status.Status, statusText(status.Status))
	case gate.Class(err) != "":
		return fmt.Sprintf("Refused to connect to %s (%s)", host, refusalText(gate.Class(err)))
	case errors.As(err, &dns):
		if host == "" {
			host = dns.Name
		}
		if dns.IsTimeout {
			return reach("DNS lookup timed out")
		}
		return reach("DNS lookup failed")
	case errors.Is(err, syscall.ECONNREFUSED):
		return reach("connection refused")
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return reach("connection reset")
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return reach("no route to the host")
	case errors.As(err, &unk), errors.As(err, &inv), errors.As(err, &name), errors.As(err, &verify):
		return reach("its TLS certificate is not trusted")
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return reach("timed out")
	case errors.Is(err, ErrTooLarge):
		return fmt.Sprintf("%s sent a page larger than the cap (FETCH_MAX_BYTES)", host)
	case errors.Is(err, ErrForeignHost):
		return fmt.Sprintf("%s sent Lectern to a host that is not the Site's", host)
	}
	return err.Error()
}

// hostOf is the host the failed request was for, or "the Site".
func hostOf(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		if u, perr := url.Parse(ue.URL); perr == nil && u.Hostname() != "" {
			return u.Hostname()
		}
	}
	var se *StatusError
	if errors.As(err, &se) {
		if u, perr := url.Parse(se.URL); perr == nil && u.Hostname() != "" {
			return u.Hostname()
		}
	}
	var dns *net.DNSError
	if errors.As(err, &dns) && dns.Name != "" {
		return dns.Name
	}
	var re *gate.RefusedError
	if errors.As(err, &re) && re.Target != "" {
		if h, _, serr := net.SplitHostPort(re.Target); serr == nil {
			return h
		}
		return re.Target
	}
	return "the Site"
}

func statusText(code int) string {
	if t := http.StatusText(code); t != "" {
		return t
	}
	return "unexpected status"
}

func refusalText(class string) string {
	switch class {
	case gate.ClassLoopback, gate.ClassPrivate, gate.ClassLinkLocal, gate.ClassUniqueLocal, gate.ClassCGNAT,
		gate.ClassUnspecified, gate.ClassMulticast, gate.ClassReserved:
		return "its address is not public: " + class
	case gate.ClassTimeout:
		return "it did not answer in time"
	case gate.ClassTooLarge:
		return "the answer is larger than the cap"
	}
	return class
}
