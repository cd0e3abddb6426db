package errs_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/errs"
)

var errGone = errs.New(errs.NotFound, "no such thing")

// typed is an error with fields of its own that names its code itself.
type typed struct{ field string }

func (t *typed) Error() string        { return "typed: " + t.field }
func (t *typed) ErrorCode() errs.Code { return errs.Invalid }

func TestCodeThroughWrapping(t *testing.T) {
	t.Parallel()
	wrapped := fmt.Errorf("load series asura:x: %w", fmt.Errorf("query: %w", errGone))
	require.Equal(t, errs.NotFound, errs.CodeOf(wrapped))
	require.ErrorIs(t, wrapped, errGone, "a sentinel stays one for errors.Is")
	require.Equal(t, "no such thing", errs.MessageOf(wrapped), "the message of the coded error, not the context around it")
	require.Equal(t, "load series asura:x: query: no such thing", wrapped.Error())

	tw := fmt.Errorf("put: %w", &typed{field: "title"})
	require.Equal(t, errs.Invalid, errs.CodeOf(tw))
	require.Equal(t, "typed: title", errs.MessageOf(tw))

	// The first code in the chain wins: the outer error says what the
	// caller is told.
	outer := fmt.Errorf("%w: %w", errs.New(errs.Conflict, "busy"), errGone)
	require.Equal(t, errs.Conflict, errs.CodeOf(outer))
}

func TestUnknownErrorsAreInternal(t *testing.T) {
	t.Parallel()
	require.Equal(t, errs.Code(""), errs.CodeOf(nil))
	require.Equal(t, "", errs.MessageOf(nil))
	plain := fmt.Errorf("dial: %w", errors.New("connection refused"))
	require.Equal(t, errs.Internal, errs.CodeOf(plain))
	require.Equal(t, "internal error", errs.MessageOf(plain), "an uncoded error's text is for the log only")
}
