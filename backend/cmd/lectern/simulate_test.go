package main

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSimulateCommand(t *testing.T) {
	t.Parallel()
	args := []string{"simulate", "--series", "60", "--weeks", "2", "--seed", "7"}
	code, out, errOut := runCmd(t, nil, "", args...)
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, regexp.MustCompile(`(?i)adaptive`), out)
	require.Regexp(t, regexp.MustCompile(`(?i)round-robin`), out)

	again, out2, _ := runCmd(t, nil, "", args...)
	require.Equal(t, 0, again)
	require.Equal(t, out, out2, "the same seed gives the same report")

	code, _, errOut = runCmd(t, nil, "", "simulate", "--mix", "weekly=2,nonsense=1")
	require.Equal(t, 2, code)
	require.NotEmpty(t, errOut)
}
