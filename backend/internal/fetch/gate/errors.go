package gate

import (
	"context"
	"errors"
	"fmt"
	"net"
)

// ErrRefused is matched (errors.Is) by every refusal of the gate, whatever
// its class. A refusal is a decision about the destination or its answer, not
// a network failure: retrying the same address will be refused again.
var ErrRefused = errors.New("destination refused")

// ErrStatus is wrapped by a fetch whose answer was not 200 OK; the error
// is a *StatusError, which names the status.
var ErrStatus = errors.New("unexpected HTTP status")

// StatusError is a fetch answered with a status other than 200 OK. Callers
// decide from Status (a 403 from an image host is a refusal, a 503 is
// worth retrying).
type StatusError struct {
	Status int
}

func (e *StatusError) Error() string { return fmt.Sprintf("%s: %d", ErrStatus, e.Status) }

// Is makes errors.Is(err, ErrStatus) hold for every StatusError.
func (e *StatusError) Is(target error) bool { return target == ErrStatus }

// Refusal classes, the label of the "destination-gate refusals by class"
// metric.
const (
	ClassScheme      = "scheme"       // not https
	ClassUserinfo    = "userinfo"     // user:pass@ in the URL
	ClassMalformed   = "malformed"    // unparseable URL, empty host, non-canonical numeric host
	ClassPort        = "port"         // a port other than 443
	ClassLoopback    = "loopback"     // 127.0.0.0/8, ::1
	ClassPrivate     = "private"      // RFC 1918
	ClassLinkLocal   = "link_local"   // 169.254.0.0/16 (cloud metadata), fe80::/10
	ClassUniqueLocal = "unique_local" // fc00::/7
	ClassCGNAT       = "cgnat"        // 100.64.0.0/10
	ClassUnspecified = "unspecified"  // 0.0.0.0/8, ::
	ClassMulticast   = "multicast"    // 224.0.0.0/4, ff00::/8
	ClassReserved    = "reserved"     // every other special-purpose range
	ClassTooLarge    = "too_large"    // body or declared length over the cap
	ClassNotImage    = "not_image"    // type or bytes not one of the five image types
	ClassTimeout     = "timeout"      // the whole fetch outlived its deadline
	ClassRedirects   = "redirects"    // more than five redirects
)

// RefusedError is a refusal with its class. It matches ErrRefused.
type RefusedError struct {
	Class string
	// Target is what was refused: a URL, a host or an IP:port.
	Target string
	// Err is the detail, when there is one (the ssrf guard's verdict, a
	// context deadline, ...).
	Err error
}

func (e *RefusedError) Error() string {
	msg := fmt.Sprintf("destination refused (%s): %s", e.Class, e.Target)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Is makes errors.Is(err, ErrRefused) true for every RefusedError.
func (e *RefusedError) Is(target error) bool { return target == ErrRefused }

func (e *RefusedError) Unwrap() error { return e.Err }

// Class returns the refusal class carried by err, or "" when err is not a
// refusal (a network failure, an HTTP status, a cancelled context).
func Class(err error) string {
	var r *RefusedError
	if errors.As(err, &r) {
		return r.Class
	}
	return ""
}

func refuse(class, target string, err error) *RefusedError {
	return &RefusedError{Class: class, Target: target, Err: err}
}

// asTimeout turns a deadline that fired into a timeout refusal so a slow drip
// is counted with the refusals; any other error is returned as it is.
func asTimeout(target string, err error) error {
	if err == nil || Class(err) != "" {
		return err
	}
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return refuse(ClassTimeout, target, err)
	}
	return err
}
