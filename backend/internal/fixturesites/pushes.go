package fixturesites

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// The push services the fixture server stands in for, so the demo's
// notification targets have somewhere to send: Discord's and Telegram's
// public hosts, and a Gotify, a Matrix, an ntfy and a webhook host of the
// demo's own. Each answers the request shape its service documents as the
// service would; what they received is listed, newest first, as JSON at
// PushesPath on the fixture server.
const (
	PushDiscordHost  = "discord.com"
	PushTelegramHost = "api.telegram.org"
	PushGotifyHost   = "gotify.demo.test"
	PushMatrixHost   = "matrix.demo.test"
	PushNtfyHost     = "ntfy.sh"
	PushHooksHost    = "hooks.demo.test"
	// PushesPath lists what the stand-ins received.
	PushesPath = "/__lectern-demo/pushes"
)

var pushServices = map[string]string{
	PushDiscordHost: "discord", PushTelegramHost: "telegram", PushGotifyHost: "gotify",
	PushMatrixHost: "matrix", PushNtfyHost: "ntfy", PushHooksHost: "webhook",
}

// Push is one request a push stand-in received. Body is the JSON the
// service was sent, or its text when it was not JSON.
type Push struct {
	Service string `json:"service"`
	Method  string `json:"method"`
	Path    string `json:"path"`
	Body    any    `json:"body"`
}

// maxPushes bounds the list: the oldest go first.
const maxPushes = 500

type pushes struct {
	mu  sync.Mutex
	got []Push // oldest first
	n   int
}

func (p *pushes) record(service string, r *http.Request) (Push, int) {
	b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	var body any = string(b)
	if json.Valid(b) {
		body = json.RawMessage(b)
	}
	push := Push{Service: service, Method: r.Method, Path: r.URL.Path, Body: body}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	p.got = append(p.got, push)
	if len(p.got) > maxPushes {
		p.got = p.got[len(p.got)-maxPushes:]
	}
	return push, p.n
}

// list is what was received, newest first.
func (p *pushes) list() []Push {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Push, len(p.got))
	for i, x := range p.got {
		out[len(p.got)-1-i] = x
	}
	return out
}

// Pushes lists what the push stand-ins received, newest first.
func (s *Server) Pushes() []Push { return s.pushes.list() }

func (s *Server) servePushes(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(s.pushes.list())
}

// pushHandler answers one stand-in host as its service does.
func (s *Server) pushHandler(host string) http.Handler {
	service := pushServices[host]
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == PushesPath {
			s.servePushes(w, r)
			return
		}
		answer := func(status int, body string) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_, _ = io.WriteString(w, body)
		}
		// A Matrix alias lookup is a read, not a message: answered, not listed.
		if service == "matrix" && r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/_matrix/client/v3/directory/room/") {
			answer(http.StatusOK, `{"room_id":"!demo:`+PushMatrixHost+`","servers":["`+PushMatrixHost+`"]}`)
			return
		}
		if r.Method != http.MethodPost && r.Method != http.MethodPut {
			answer(http.StatusMethodNotAllowed, `{"error":"method not allowed"}`)
			return
		}
		_, n := s.pushes.record(service, r)
		id := strconv.Itoa(n)
		switch service {
		case "discord":
			if !strings.HasPrefix(r.URL.Path, "/api/webhooks/") {
				answer(http.StatusNotFound, `{"message": "404: Not Found", "code": 0}`)
				return
			}
			if r.URL.Query().Get("wait") != "true" {
				w.WriteHeader(http.StatusNoContent)
				return
			}
			answer(http.StatusOK, `{"id": "13000000000000000`+id+`", "type": 0, "channel_id": "1200000000000000000"}`)
		case "telegram":
			if !strings.HasSuffix(r.URL.Path, "/sendMessage") {
				answer(http.StatusNotFound, `{"ok":false,"error_code":404,"description":"Not Found"}`)
				return
			}
			answer(http.StatusOK, `{"ok":true,"result":{"message_id":`+id+`}}`)
		case "gotify":
			answer(http.StatusOK, `{"id":`+id+`,"appid":1}`)
		case "matrix":
			answer(http.StatusOK, `{"event_id":"$demo`+id+`"}`)
		case "ntfy":
			answer(http.StatusOK, `{"id":"demo`+id+`","event":"message"}`)
		default:
			answer(http.StatusOK, `{"received":true}`)
		}
	})
}
