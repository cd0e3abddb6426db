# Lectern. `make run` starts it; `make test` runs every test.
.PHONY: run test build lint bench fuzz demo docs userscripts clean

VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)

run:
	VERSION=$(VERSION) scripts/run.sh

test:
	scripts/test.sh

build:
	CGO_ENABLED=0 go build -trimpath -ldflags "$(LDFLAGS)" -o bin/lectern ./backend/cmd/lectern

lint:
	gofmt -l . | (! grep .)
	go vet ./...
	go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

userscripts:
	node userscripts/build.mjs

# Lectern with local fixture Sites (no live Site is reached) and a demo Reader;
# prints how to open a Site page with the panel. DEMO_FLAGS="-inject=false" etc.
demo:
	@if [ -z "$${DATABASE_URL:-}" ]; then scripts/ensure-postgres.sh >/dev/null; fi
	@mkdir -p bin
	go build -o bin/demo ./backend/cmd/demo
	bin/demo $(DEMO_FLAGS)

# Rewrites docs/configuration.md's table from the code (a test checks it).
docs:
	UPDATE_DOCS=1 go test -count=1 -run TestConfigurationDocMatchesTheStruct ./backend/cmd/lectern

clean:
	rm -rf bin

# Every go test -fuzz target for FUZZTIME each (default 30s); FUZZ=regexp
# picks targets. Findings land in <package>/testdata/fuzz/ as regression
# seeds, which plain `go test` (and so CI) replays.
fuzz:
	scripts/fuzz.sh

# Load figures with their references measured in the same run (no thresholds).
bench:
	go run ./backend/cmd/bench -d 60s mixed
	go run ./backend/cmd/bench bookmarks
	go run ./backend/cmd/bench polls
	go run ./backend/cmd/bench gate
	go run ./backend/cmd/bench pacing
	go run ./backend/cmd/bench crash
	go run ./backend/cmd/bench scale
	go run ./backend/cmd/bench backup
	VERSITYGW=$$(scripts/ensure-versitygw.sh) go test -run '^$$' -bench BlobsCopy -benchtime 1x ./backend/internal/blob/
	VERSITYGW=$$(scripts/ensure-versitygw.sh) NGINX_PATH=$$(scripts/ensure-nginx.sh || true) go test -run '^$$' -bench CoverRoute -benchtime 5x ./backend/internal/cover/
