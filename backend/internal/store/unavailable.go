package store

import (
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
)

// IsUnavailable reports an error that says the database cannot be reached
// or is going away (refused, reset or dropped connections, one pgx closed
// after such a failure, a server shutting down, crashed or starting up), as
// opposed to a query that failed. It is the one place that decides it. The faces count it
// as errs.Unavailable (face.CodeOf) and answer 503 and "retry shortly": the
// request may well succeed a few seconds later, unchanged, and the pool
// reconnects by itself.
func IsUnavailable(err error) bool {
	if err == nil {
		return false
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return true
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		// Class 08: connection exception; 57P01-57P03: admin or crash
		// shutdown, cannot connect now (starting up or recovering).
		return strings.HasPrefix(pe.Code, "08") || pe.Code == "57P01" || pe.Code == "57P02" || pe.Code == "57P03"
	}
	var ne *net.OpError
	if errors.As(err, &ne) {
		return true
	}
	// A connection pgx already closed after an earlier failure answers
	// every later call, a transaction's BEGIN or COMMIT above all, with
	// "conn closed" and nothing of the network error that closed it.
	return errors.Is(err, pgconn.ErrConnClosed) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}
