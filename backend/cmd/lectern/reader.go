package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"

	"github.com/lectern-reader/lectern/backend/internal/config"
	"github.com/lectern-reader/lectern/backend/internal/credential"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

func init() {
	commands["reader"] = command{summary: "manage Readers: reader add NAME [--owner]", run: cmdReader}
	commands["token"] = command{summary: "create an API token: token new READER [--name N]", run: cmdToken}
}

func cmdReader(ctx context.Context, env *cmdEnv, args []string) int {
	fs := newFlags("reader add NAME [--owner]", env,
		"Creates a Reader. The password is asked for twice on a terminal, or read from\n"+
			"the first line of standard input otherwise (echo \"$PW\" | lectern reader add ann).")
	owner := fs.Bool("owner", false, "make the Reader an Owner (admin)")
	if code, done := parse(fs, reorder(args)); done {
		return code
	}
	rest := fs.Args()
	if len(rest) != 2 || rest[0] != "add" {
		fs.Usage()
		return 2
	}
	name := rest[1]
	if err := credential.ValidName(name); err != nil {
		fmt.Fprintln(env.stderr, "lectern:", err)
		return 2
	}
	st, code := openStore(ctx, env)
	if st == nil {
		return code
	}
	defer st.Close()

	password, err := readPassword(env)
	if err != nil {
		fmt.Fprintln(env.stderr, "lectern:", err)
		return 1
	}
	hash, err := credential.HashPassword(password)
	if err != nil {
		fmt.Fprintln(env.stderr, "lectern:", err)
		return 1
	}
	r, err := st.CreateReader(ctx, name, hash, *owner)
	if errors.Is(err, store.ErrConflict) {
		fmt.Fprintf(env.stderr, "lectern: a Reader named %q already exists\n", name)
		return 1
	}
	if err != nil {
		fmt.Fprintln(env.stderr, "lectern:", err)
		return 1
	}
	role := "Reader"
	if r.IsOwner {
		role = "Owner"
	}
	fmt.Fprintf(env.stdout, "created %s %q; give them a token with: lectern token new %s\n", role, r.Name, r.Name)
	return 0
}

func cmdToken(ctx context.Context, env *cmdEnv, args []string) int {
	fs := newFlags("token new READER [--name N]", env,
		"Creates an API token for a Reader and prints it once: only its hash is stored.\n"+
			"Paste it into the userscript panel's settings.")
	name := fs.String("name", "", "a name to recognise the token by (e.g. \"laptop firefox\")")
	if code, done := parse(fs, reorder(args)); done {
		return code
	}
	rest := fs.Args()
	if len(rest) != 2 || rest[0] != "new" {
		fs.Usage()
		return 2
	}
	if len(*name) > 100 {
		fmt.Fprintln(env.stderr, "lectern: a token name may have at most 100 characters")
		return 2
	}
	st, code := openStore(ctx, env)
	if st == nil {
		return code
	}
	defer st.Close()
	r, err := st.ReaderByName(ctx, rest[1])
	if errors.Is(err, store.ErrNotFound) {
		fmt.Fprintf(env.stderr, "lectern: no Reader named %q (create one with: lectern reader add NAME)\n", rest[1])
		return 1
	}
	if err != nil {
		fmt.Fprintln(env.stderr, "lectern:", err)
		return 1
	}
	token, hash, err := credential.NewToken()
	if err != nil {
		fmt.Fprintln(env.stderr, "lectern:", err)
		return 1
	}
	if _, err := st.CreateToken(ctx, r.ID, *name, hash); err != nil {
		fmt.Fprintln(env.stderr, "lectern:", err)
		return 1
	}
	fmt.Fprintln(env.stdout, token)
	fmt.Fprintf(env.stderr, "token for %q created; it is shown only this once\n", r.Name)
	return 0
}

// openStore connects with DATABASE_URL and makes sure the schema is current,
// so an Owner can create the first Reader before the first 'serve'.
func openStore(ctx context.Context, env *cmdEnv) (*store.Store, int) {
	cfg, err := config.Load(config.Lookup(env.getenv), "admin")
	if err != nil {
		fmt.Fprintln(env.stderr, "lectern:", err)
		return nil, 1
	}
	if cfg.DatabaseURL == "" {
		fmt.Fprintln(env.stderr, "lectern: DATABASE_URL is required: the Postgres URL of this deployment")
		return nil, 1
	}
	if err := store.MigrateUp(ctx, cfg.DatabaseURL); err != nil {
		fmt.Fprintln(env.stderr, "lectern:", err)
		return nil, 1
	}
	st, err := store.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		fmt.Fprintln(env.stderr, "lectern:", err)
		return nil, 1
	}
	return st, 0
}

// readPassword asks twice on a terminal, or reads one line from a pipe.
func readPassword(env *cmdEnv) (string, error) {
	if f, ok := env.stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprint(env.stderr, "Password: ")
		a, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(env.stderr)
		if err != nil {
			return "", fmt.Errorf("read password: %w", err)
		}
		fmt.Fprint(env.stderr, "Again: ")
		b, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(env.stderr)
		if err != nil {
			return "", fmt.Errorf("read password: %w", err)
		}
		if string(a) != string(b) {
			return "", errors.New("the two passwords differ")
		}
		return string(a), nil
	}
	line, err := bufio.NewReader(io.LimitReader(env.stdin, credential.MaxPasswordLen+2)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("read password from standard input: %w", err)
	}
	line = strings.TrimRight(line, "\r\n")
	if line == "" {
		return "", errors.New("no password on standard input (pipe one, or run on a terminal to be asked)")
	}
	return line, nil
}

// reorder moves flags before positional arguments, so "reader add ann
// --owner" works as people type it (the flag package stops at the first
// positional argument).
func reorder(args []string) []string {
	var flags, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			pos = append(pos, args[i+1:]...)
			i = len(args)
		case strings.HasPrefix(a, "-"):
			flags = append(flags, a)
			if !strings.Contains(a, "=") && (a == "--name" || a == "-name") && i+1 < len(args) {
				flags = append(flags, args[i+1])
				i++
			}
		default:
			pos = append(pos, a)
		}
	}
	return append(flags, pos...)
}
