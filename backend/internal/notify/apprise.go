package notify

import (
	"fmt"
	"net/netip"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Services a target sends to, named by their Apprise scheme without the
// TLS "s" (docs/notifications.md lists each URL form).
const (
	ServiceDiscord  = "discord"
	ServiceTelegram = "tgram"
	ServiceGotify   = "gotify"
	ServiceMatrix   = "matrix"
	ServiceNtfy     = "ntfy"
	ServiceJSON     = "json"
)

// Endpoint is a parsed Apprise URL: where a target sends, and with which
// credential. Apprise URLs are not RFC 3986 URLs (a Telegram bot token
// "123456:ABC" sits where a host and port would), so each service's form
// is read by its own rule rather than by net/url.
type Endpoint struct {
	Service string
	// Host is the server (with a port only when the URL names one) of a
	// self-hosted service; Path is the part before the service's own
	// segments (a Gotify or ntfy server behind a path prefix, a webhook's
	// path with its query).
	Host, Path string
	// ID is the non-secret address inside the service: the Discord
	// webhook id, the Telegram chat, the Matrix room, the ntfy topic.
	ID string
	// User is the Matrix user or the ntfy or webhook basic-auth user.
	User string
	// Token is the secret: the Discord webhook token, the Telegram bot
	// token, the Gotify app token, the Matrix access token, the ntfy
	// access token or password, the webhook basic-auth password.
	Token string
	// Priority is Gotify's message priority (0-10).
	Priority int
	// Query is the ntfy or webhook URL's own query, kept as written
	// (older ntfy targets carry their token as ?auth=).
	Query string
}

// Default Gotify priority: Gotify's clients pop up a notification from 4 on
// and make sound from 8; a new chapter deserves the pop-up, not the alarm.
const defaultGotifyPriority = 5

// ntfyDefaultHost is where ntfy://topic publishes, as in Apprise.
const ntfyDefaultHost = "ntfy.sh"

var (
	discordID     = regexp.MustCompile(`^[0-9]{5,30}$`)
	discordToken  = regexp.MustCompile(`^[A-Za-z0-9_-]{10,200}$`)
	telegramBot   = regexp.MustCompile(`^(?:bot)?([0-9]{3,20}:[A-Za-z0-9_-]{10,100})$`)
	telegramChat  = regexp.MustCompile(`^(?:-?[0-9]{1,20}|@[A-Za-z][A-Za-z0-9_]{3,64})$`)
	gotifyToken   = regexp.MustCompile(`^[A-Za-z0-9._-]{5,200}$`)
	matrixToken   = regexp.MustCompile(`^[A-Za-z0-9._~+/=-]{8,500}$`)
	matrixRoomID  = regexp.MustCompile(`^![A-Za-z0-9._=~-]+:[A-Za-z0-9.-]+(?::[0-9]+)?$`)
	matrixAlias   = regexp.MustCompile(`^#[A-Za-z0-9._=~-]+(?::[A-Za-z0-9.-]+(?::[0-9]+)?)?$`)
	hostLabel     = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
	credentialish = regexp.MustCompile(`^[^\s/?#@]{1,500}$`)
)

// ParseApprise reads an Apprise URL, refusing each mistake with a message
// that says what the form is. Plain-http forms (json://, gotify://,
// matrix://, ntfy://host/topic) are refused naming their TLS form: the
// destination gate sends over https only, and a Reader learns that here
// rather than from a failed delivery. A literal non-public IP is refused
// too; a name that resolves to one is refused by the gate when it sends.
func ParseApprise(raw string) (Endpoint, error) {
	raw = strings.TrimSpace(raw)
	bad := func(format string, args ...any) (Endpoint, error) {
		return Endpoint{}, fmt.Errorf("%w: %s", ErrInvalidTarget, fmt.Sprintf(format, args...))
	}
	if raw == "" {
		return bad("a URL is required, such as discord://webhook_id/webhook_token")
	}
	if len(raw) > 2048 || !utf8.ValidString(raw) || strings.ContainsAny(raw, "\x00\r\n\t ") {
		return bad("the URL is malformed (spaces, control characters or over 2,048 characters)")
	}
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok || scheme == "" {
		return bad("the URL has no scheme: write it as service://…, such as discord://webhook_id/webhook_token")
	}
	scheme = strings.ToLower(scheme)
	var e Endpoint
	var err error
	switch scheme {
	case "discord":
		e, err = parseDiscord(rest)
	case "tgram":
		e, err = parseTelegram(rest)
	case "gotifys":
		e, err = parseGotify(rest)
	case "matrixs":
		e, err = parseMatrix(rest)
	case "ntfy", "ntfys":
		e, err = parseNtfy(rest, scheme == "ntfys")
	case "jsons":
		e, err = parseJSON(rest)
	case "json", "gotify", "matrix":
		return bad("%s:// sends in plain http, which Lectern refuses: use %ss:// (https)", scheme, scheme)
	case "https":
		return bad("write the target as an Apprise URL (discord://, tgram://, gotifys://, matrixs://, ntfys://, jsons://); a plain webhook is jsons://host/path")
	case "http":
		return bad("plain http is refused: a plain webhook is jsons://host/path (https)")
	default:
		return bad("unknown service %q: Lectern sends to discord://, tgram://, gotifys://, matrixs://, ntfy:// or ntfys://, and jsons://", scheme)
	}
	if err != nil {
		return bad("%v", err)
	}
	return e, nil
}

func parseDiscord(rest string) (Endpoint, error) {
	form := "a Discord URL is discord://webhook_id/webhook_token (the two last parts of the webhook's https://discord.com/api/webhooks/… address)"
	rest, _, _ = strings.Cut(rest, "?")
	if i := strings.LastIndexByte(rest, '@'); i >= 0 {
		rest = rest[i+1:] // Apprise's optional bot name: Lectern names itself
	}
	parts := strings.Split(strings.Trim(rest, "/"), "/")
	if len(parts) != 2 {
		return Endpoint{}, fmt.Errorf("%s", form)
	}
	if !discordID.MatchString(parts[0]) {
		return Endpoint{}, fmt.Errorf("the Discord webhook id %q is not a number; %s", parts[0], form)
	}
	if !discordToken.MatchString(parts[1]) {
		return Endpoint{}, fmt.Errorf("the Discord webhook token is malformed; %s", form)
	}
	return Endpoint{Service: ServiceDiscord, ID: parts[0], Token: parts[1]}, nil
}

func parseTelegram(rest string) (Endpoint, error) {
	form := "a Telegram URL is tgram://bot_token/chat_id, such as tgram://123456789:AAF-abc…/987654321"
	rest, _, _ = strings.Cut(rest, "?")
	parts := strings.Split(strings.Trim(rest, "/"), "/")
	if len(parts) != 2 {
		if len(parts) == 1 {
			return Endpoint{}, fmt.Errorf("the chat id is missing; %s", form)
		}
		return Endpoint{}, fmt.Errorf("one chat per target: Lectern sends to a single chat id; %s", form)
	}
	m := telegramBot.FindStringSubmatch(parts[0])
	if m == nil {
		return Endpoint{}, fmt.Errorf("the bot token is malformed: BotFather gives it as digits, a colon and letters; %s", form)
	}
	if !telegramChat.MatchString(parts[1]) {
		return Endpoint{}, fmt.Errorf("the chat id %q is neither a number nor an @channel name; %s", parts[1], form)
	}
	return Endpoint{Service: ServiceTelegram, Token: m[1], ID: parts[1]}, nil
}

func parseGotify(rest string) (Endpoint, error) {
	form := "a Gotify URL is gotifys://host/app_token (or gotifys://host/path/app_token behind a prefix)"
	rest, query, _ := strings.Cut(rest, "?")
	host, path, _ := strings.Cut(rest, "/")
	if err := checkHost(host); err != nil {
		return Endpoint{}, fmt.Errorf("%v; %s", err, form)
	}
	path = strings.Trim(path, "/")
	i := strings.LastIndexByte(path, '/')
	token := path[i+1:]
	if token == "" {
		return Endpoint{}, fmt.Errorf("the app token is missing; %s", form)
	}
	if !gotifyToken.MatchString(token) {
		return Endpoint{}, fmt.Errorf("the app token is malformed; %s", form)
	}
	e := Endpoint{Service: ServiceGotify, Host: strings.ToLower(host), Token: token, Priority: defaultGotifyPriority}
	if i > 0 {
		e.Path = "/" + path[:i]
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return Endpoint{}, fmt.Errorf("the query is malformed; %s", form)
	}
	if p := q.Get("priority"); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || n > 10 {
			return Endpoint{}, fmt.Errorf("priority is a number from 0 to 10, not %q", p)
		}
		e.Priority = n
	}
	return e, nil
}

func parseMatrix(rest string) (Endpoint, error) {
	form := "a Matrix URL is matrixs://user:access_token@host/#room (or /!room_id:server)"
	// The room comes last and holds '#' and ':' of its own; "%23" is a '#'
	// escaped by someone who knows RFC 3986.
	rest, _, _ = strings.Cut(rest, "?")
	at := strings.LastIndexByte(rest, '@')
	if at < 0 {
		return Endpoint{}, fmt.Errorf("the access token is missing; %s", form)
	}
	cred, rest := rest[:at], rest[at+1:]
	host, room, _ := strings.Cut(rest, "/")
	if err := checkHost(host); err != nil {
		return Endpoint{}, fmt.Errorf("%v; %s", err, form)
	}
	e := Endpoint{Service: ServiceMatrix, Host: strings.ToLower(host)}
	if u, tok, ok := strings.Cut(cred, ":"); ok {
		e.User, e.Token = u, tok
	} else {
		e.Token = cred
	}
	if !matrixToken.MatchString(e.Token) {
		return Endpoint{}, fmt.Errorf("the access token is missing or malformed (Lectern does not log in with a password: give the token from Element's Settings, Help & About); %s", form)
	}
	room = strings.Trim(room, "/")
	if r, err := url.PathUnescape(room); err == nil {
		room = r
	}
	if room == "" {
		return Endpoint{}, fmt.Errorf("the room is missing; %s", form)
	}
	if room[0] != '#' && room[0] != '!' {
		room = "#" + room
	}
	if room[0] == '#' && !strings.Contains(room, ":") {
		room += ":" + hostOnly(e.Host) // an alias without a server lives on the user's own
	}
	if !matrixRoomID.MatchString(room) && !matrixAlias.MatchString(room) {
		return Endpoint{}, fmt.Errorf("the room %q is malformed; %s", room, form)
	}
	e.ID = room
	return e, nil
}

func parseNtfy(rest string, tls bool) (Endpoint, error) {
	form := "an ntfy URL is ntfy://topic (on ntfy.sh) or ntfys://host/topic"
	rest, query, _ := strings.Cut(rest, "?")
	e := Endpoint{Service: ServiceNtfy, Query: query}
	if at := strings.LastIndexByte(rest, '@'); at >= 0 {
		var cred string
		cred, rest = rest[:at], rest[at+1:]
		if u, p, ok := strings.Cut(cred, ":"); ok {
			e.User, e.Token = u, p
		} else {
			e.Token = cred
		}
		if !credentialish.MatchString(e.Token) || (e.User == "" && strings.Contains(cred, ":")) {
			return Endpoint{}, fmt.Errorf("the credentials are malformed: ntfys://user:password@host/topic or ntfys://tk_token@host/topic")
		}
	}
	rest = strings.Trim(rest, "/")
	host, path, hasPath := strings.Cut(rest, "/")
	if !hasPath {
		// ntfy://topic: Apprise's form for the public server, over https.
		host, path = ntfyDefaultHost, rest
	} else if !tls {
		return Endpoint{}, fmt.Errorf("ntfy://%s sends in plain http, which Lectern refuses: use ntfys://%s", rest, rest)
	}
	if err := checkHost(host); err != nil {
		return Endpoint{}, fmt.Errorf("%v; %s", err, form)
	}
	i := strings.LastIndexByte(path, '/')
	topic := path[i+1:]
	if !ntfyTopic.MatchString(topic) {
		return Endpoint{}, fmt.Errorf("the topic %q is malformed (letters, digits, - and _, up to 64); %s", topic, form)
	}
	e.Host, e.ID = strings.ToLower(host), topic
	if i > 0 {
		e.Path = "/" + path[:i]
	}
	if _, err := url.ParseQuery(query); err != nil {
		return Endpoint{}, fmt.Errorf("the query is malformed; %s", form)
	}
	return e, nil
}

func parseJSON(rest string) (Endpoint, error) {
	form := "a webhook URL is jsons://host/path"
	rest, query, _ := strings.Cut(rest, "?")
	e := Endpoint{Service: ServiceJSON, Query: query}
	if at := strings.LastIndexByte(rest, '@'); at >= 0 && !strings.Contains(rest[:at], "/") {
		cred := rest[:at]
		rest = rest[at+1:]
		u, p, _ := strings.Cut(cred, ":")
		if u == "" || !credentialish.MatchString(cred) {
			return Endpoint{}, fmt.Errorf("the credentials are malformed: jsons://user:password@host/path")
		}
		e.User, e.Token = u, p
	}
	host, path, _ := strings.Cut(rest, "/")
	if err := checkHost(host); err != nil {
		return Endpoint{}, fmt.Errorf("%v; %s", err, form)
	}
	p, err := url.Parse("https://" + host + "/" + path)
	if err != nil || p.Fragment != "" {
		return Endpoint{}, fmt.Errorf("the path is malformed; %s", form)
	}
	if _, err := url.ParseQuery(query); err != nil {
		return Endpoint{}, fmt.Errorf("the query is malformed; %s", form)
	}
	e.Host, e.Path = strings.ToLower(host), "/"+path
	return e, nil
}

// checkHost refuses what the gate would refuse on every send: a port other
// than 443, a literal address that is not public, a name that cannot be
// public.
func checkHost(hostport string) error {
	if hostport == "" {
		return fmt.Errorf("the host is missing")
	}
	host := hostport
	if h, port, ok := splitPort(hostport); ok {
		if port != "443" {
			return fmt.Errorf("only port 443 is allowed (not %s): Lectern sends over https on 443 only", port)
		}
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	if a, err := netip.ParseAddr(host); err == nil {
		a = a.Unmap()
		if !a.IsGlobalUnicast() || a.IsPrivate() || a.IsLoopback() || a.IsLinkLocalUnicast() || cgnat.Contains(a) {
			return fmt.Errorf("%s is not a public address", host)
		}
		return nil
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") || !strings.Contains(host, ".") {
		return fmt.Errorf("%s is not a public host name", host)
	}
	for _, l := range strings.Split(host, ".") {
		if !hostLabel.MatchString(l) {
			return fmt.Errorf("%q is not a host name", host)
		}
	}
	return nil
}

// splitPort splits "host:port" and "[v6]:port"; a bare IPv6 literal has
// no port.
func splitPort(hp string) (host, port string, ok bool) {
	if strings.HasPrefix(hp, "[") {
		if i := strings.Index(hp, "]:"); i >= 0 {
			return hp[:i+1], hp[i+2:], true
		}
		return hp, "", false
	}
	if strings.Count(hp, ":") == 1 {
		h, p, _ := strings.Cut(hp, ":")
		return h, p, true
	}
	return hp, "", false
}

func hostOnly(hp string) string {
	if h, _, ok := splitPort(hp); ok {
		return h
	}
	return hp
}

// String is the Apprise URL in full, secrets included: what is sealed.
func (e Endpoint) String() string { return e.format(false) }

// Masked is the Apprise URL with every secret cut to its first four
// characters: what a Reader is shown after creating a target.
func (e Endpoint) Masked() string { return e.format(true) }

func mask(s string) string {
	if s == "" {
		return ""
	}
	r := []rune(s)
	if len(r) <= 8 {
		return "…"
	}
	return string(r[:4]) + "…"
}

func (e Endpoint) format(masked bool) string {
	secret := func(s string) string {
		if masked {
			return mask(s)
		}
		return s
	}
	q := ""
	if e.Query != "" {
		q = "?" + e.Query
		if masked {
			// Cut by hand rather than re-encoded: "…" stays readable, and
			// the rest of the query stays as written.
			pairs := strings.Split(e.Query, "&")
			for i, p := range pairs {
				if k, v, ok := strings.Cut(p, "="); ok && (strings.EqualFold(k, "auth") || strings.EqualFold(k, "token")) {
					pairs[i] = k + "=" + mask(v)
				}
			}
			q = "?" + strings.Join(pairs, "&")
		}
	}
	cred := func() string {
		switch {
		case e.User != "" && e.Token != "":
			return e.User + ":" + secret(e.Token) + "@"
		case e.User != "":
			return e.User + "@"
		case e.Token != "":
			return secret(e.Token) + "@"
		}
		return ""
	}
	switch e.Service {
	case ServiceDiscord:
		return "discord://" + e.ID + "/" + secret(e.Token)
	case ServiceTelegram:
		return "tgram://" + secret(e.Token) + "/" + e.ID
	case ServiceGotify:
		s := "gotifys://" + e.Host + e.Path + "/" + secret(e.Token)
		if e.Priority != defaultGotifyPriority {
			s += "?priority=" + strconv.Itoa(e.Priority)
		}
		return s
	case ServiceMatrix:
		return "matrixs://" + cred() + e.Host + "/" + e.ID
	case ServiceNtfy:
		return "ntfys://" + cred() + e.Host + e.Path + "/" + e.ID + q
	case ServiceJSON:
		return "jsons://" + cred() + e.Host + e.Path + q
	}
	return ""
}

// HasSecret reports whether the URL holds a credential, which is stored
// sealed and needs SECRET_KEY.
func (e Endpoint) HasSecret() bool {
	if e.Token != "" {
		return true
	}
	vals, _ := url.ParseQuery(e.Query)
	return vals.Get("auth") != "" || vals.Get("token") != ""
}

// FromLegacy turns the https URL of a target saved before Apprise URLs
// (kind "ntfy" or "webhook") into its Apprise form.
func FromLegacy(kind, raw string) string {
	rest, ok := strings.CutPrefix(strings.TrimSpace(raw), "https://")
	if !ok {
		return raw
	}
	switch kind {
	case KindNtfy:
		return "ntfys://" + rest
	case KindWebhook:
		return "jsons://" + rest
	}
	return raw
}
