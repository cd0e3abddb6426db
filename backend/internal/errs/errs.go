// Package errs names the kinds of failure a caller can be told about, after
// WTF Dial's wtf.Error: a domain package gives its sentinel errors a Code,
// wraps them with %w as they travel, and the faces (package face) answer
// each Code with one HTTP status. An error with no Code is the server's own
// failure (Internal): logged, and never shown to the caller.
//
// errs imports nothing but the standard library, so every package can name
// its errors with it; a database outage, which only the store can
// recognise, is told apart where statuses are decided (face.CodeOf).
package errs

import "errors"

// Code is the kind of a failure. The faces map each to a status in one
// table (face.Status); the comments say which.
type Code string

// The codes. Add one only for a kind a face answers differently.
const (
	// Internal is a failure of the server, not of the request (500).
	Internal Code = "internal"
	// Malformed is a request that cannot be read as what it must be (400).
	Malformed Code = "malformed"
	// Unauthorized is a request without a valid credential (401).
	Unauthorized Code = "unauthorized"
	// Forbidden is a request the caller may not make (403).
	Forbidden Code = "forbidden"
	// NotFound is a thing that does not exist, or not for this caller (404).
	NotFound Code = "not_found"
	// Conflict is a request that collides with the current state (409).
	Conflict Code = "conflict"
	// TooLarge is a request beyond a size limit (413).
	TooLarge Code = "too_large"
	// Invalid is a request that is well-formed but refused (422).
	Invalid Code = "invalid"
	// Unavailable is a dependency that cannot be reached for now, the
	// database above all; the same request may succeed shortly (503).
	Unavailable Code = "unavailable"
)

// Error is a failure with a Code and a message meant for the caller.
// Sentinels are *Error values (errors.Is compares them by identity); a
// package with fields of its own (bookmark.InvalidError) implements Coder
// instead.
type Error struct {
	Code    Code
	Message string
}

func (e *Error) Error() string { return e.Message }

// ErrorCode makes *Error a Coder.
func (e *Error) ErrorCode() Code { return e.Code }

// New returns an error with a code and a message, for a sentinel.
func New(code Code, message string) error { return &Error{Code: code, Message: message} }

// Coder is an error that names its Code.
type Coder interface {
	error
	ErrorCode() Code
}

// CodeOf returns the Code of the first Coder in err's chain: "" for nil,
// Internal for an error that names none.
func CodeOf(err error) Code {
	if err == nil {
		return ""
	}
	var c Coder
	if errors.As(err, &c) {
		return c.ErrorCode()
	}
	return Internal
}

// MessageOf returns the message of the first Coder in err's chain, without
// the context wrapped around it: "" for nil, and a fixed text for an error
// that names no Code, whose own text is for the log only.
func MessageOf(err error) string {
	if err == nil {
		return ""
	}
	var c Coder
	if errors.As(err, &c) {
		return c.Error()
	}
	return "internal error"
}
