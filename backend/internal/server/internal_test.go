package server

import (
	"io"
	"log/slog"
)

// The tests inside the package (of unexported parts) share these; the
// package's external tests build the server through apptest.

const testBase = "https://lectern.example.net"

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
