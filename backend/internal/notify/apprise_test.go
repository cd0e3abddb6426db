package notify_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/notify"
)

func TestParseAppriseValid(t *testing.T) {
	for _, tc := range []struct {
		in           string
		want         notify.Endpoint
		full, masked string
		secret       bool
	}{
		{"discord://112233445566778899/AbCdEfGhIjKlMnOp_qr-st",
			notify.Endpoint{Service: "discord", ID: "112233445566778899", Token: "AbCdEfGhIjKlMnOp_qr-st"},
			"discord://112233445566778899/AbCdEfGhIjKlMnOp_qr-st", "discord://112233445566778899/AbCd…", true},
		{"discord://Lectern@112233445566778899/AbCdEfGhIjKlMnOp/",
			notify.Endpoint{Service: "discord", ID: "112233445566778899", Token: "AbCdEfGhIjKlMnOp"},
			"discord://112233445566778899/AbCdEfGhIjKlMnOp", "discord://112233445566778899/AbCd…", true},
		// Not RFC 3986: the bot token's colon is no port.
		{"tgram://123456789:AAF-def_ghijklmnop/987654",
			notify.Endpoint{Service: "tgram", Token: "123456789:AAF-def_ghijklmnop", ID: "987654"},
			"tgram://123456789:AAF-def_ghijklmnop/987654", "tgram://1234…/987654", true},
		{"tgram://bot123456789:AAF-def_ghijklmnop/-100123",
			notify.Endpoint{Service: "tgram", Token: "123456789:AAF-def_ghijklmnop", ID: "-100123"}, "", "", true},
		{"tgram://123456789:AAF-def_ghijklmnop/@my_channel",
			notify.Endpoint{Service: "tgram", Token: "123456789:AAF-def_ghijklmnop", ID: "@my_channel"}, "", "", true},
		{"gotifys://push.example.net/AbCdEf12345",
			notify.Endpoint{Service: "gotify", Host: "push.example.net", Token: "AbCdEf12345", Priority: 5},
			"gotifys://push.example.net/AbCdEf12345", "gotifys://push.example.net/AbCd…", true},
		{"gotifys://Push.Example.net:443/gotify/AbCdEf12345?priority=8",
			notify.Endpoint{Service: "gotify", Host: "push.example.net:443", Path: "/gotify", Token: "AbCdEf12345", Priority: 8},
			"gotifys://push.example.net:443/gotify/AbCdEf12345?priority=8", "", true},
		{"matrixs://lectern:syt_bGVjdGVybg_abcdef@matrix.example.org/#manga",
			notify.Endpoint{Service: "matrix", Host: "matrix.example.org", User: "lectern", Token: "syt_bGVjdGVybg_abcdef", ID: "#manga:matrix.example.org"},
			"matrixs://lectern:syt_bGVjdGVybg_abcdef@matrix.example.org/#manga:matrix.example.org",
			"matrixs://lectern:syt_…@matrix.example.org/#manga:matrix.example.org", true},
		{"matrixs://syt_bGVjdGVybg_abcdef@matrix.example.org/!AbCd:example.org",
			notify.Endpoint{Service: "matrix", Host: "matrix.example.org", Token: "syt_bGVjdGVybg_abcdef", ID: "!AbCd:example.org"}, "", "", true},
		{"matrixs://syt_bGVjdGVybg_abcdef@matrix.example.org/%23manga:other.org",
			notify.Endpoint{Service: "matrix", Host: "matrix.example.org", Token: "syt_bGVjdGVybg_abcdef", ID: "#manga:other.org"}, "", "", true},
		{"ntfy://my-chapters",
			notify.Endpoint{Service: "ntfy", Host: "ntfy.sh", ID: "my-chapters"}, "ntfys://ntfy.sh/my-chapters", "ntfys://ntfy.sh/my-chapters", false},
		{"ntfys://push.example.net/ntfy/my_topic?auth=tk_abcdefghijk",
			notify.Endpoint{Service: "ntfy", Host: "push.example.net", Path: "/ntfy", ID: "my_topic", Query: "auth=tk_abcdefghijk"},
			"ntfys://push.example.net/ntfy/my_topic?auth=tk_abcdefghijk", "ntfys://push.example.net/ntfy/my_topic?auth=tk_a…", true},
		{"ntfys://tk_abcdefghijkl@push.example.net/topic",
			notify.Endpoint{Service: "ntfy", Host: "push.example.net", Token: "tk_abcdefghijkl", ID: "topic"}, "", "ntfys://tk_a…@push.example.net/topic", true},
		{"jsons://hooks.example.com/x/y?token=1",
			notify.Endpoint{Service: "json", Host: "hooks.example.com", Path: "/x/y", Query: "token=1"}, "jsons://hooks.example.com/x/y?token=1", "", true},
		{"jsons://93.184.216.34/x",
			notify.Endpoint{Service: "json", Host: "93.184.216.34", Path: "/x"}, "", "jsons://93.184.216.34/x", false},
	} {
		t.Run(tc.in, func(t *testing.T) {
			e, err := notify.ParseApprise(tc.in)
			require.NoError(t, err)
			require.Equal(t, tc.want, e)
			if tc.full != "" {
				require.Equal(t, tc.full, e.String())
			}
			if tc.masked != "" {
				require.Equal(t, tc.masked, e.Masked())
			}
			require.Equal(t, tc.secret, e.HasSecret())
			// The full form reads back as the same target.
			again, err := notify.ParseApprise(e.String())
			require.NoError(t, err)
			require.Equal(t, e, again)
		})
	}
}

func TestParseAppriseInvalid(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "a URL is required"},
		{"discord", "no scheme"},
		{"slack://a/b/c", `unknown service "slack"`},
		{"https://discord.com/api/webhooks/1/2", "Apprise URL"},
		{"http://hooks.example.com/x", "plain http"},
		{"json://hooks.example.com/x", "use jsons://"},
		{"gotify://push.example.net/AbCdEf12345", "use gotifys://"},
		{"matrix://u:syt_abcdefgh@matrix.example.org/#r", "use matrixs://"},
		{"ntfy://push.example.net/topic", "use ntfys://push.example.net/topic"},
		{"discord://112233/", "discord://webhook_id/webhook_token"},
		{"discord://abc/AbCdEfGhIjKlMnOp", "is not a number"},
		{"discord://112233445566/x!y", "token is malformed"},
		{"tgram://123456789:AAF-def_ghijklmnop", "chat id is missing"},
		{"tgram://123456789:AAF-def_ghijklmnop/1/2", "one chat per target"},
		{"tgram://abc/987654", "bot token is malformed"},
		{"tgram://123456789:AAF-def_ghijklmnop/chat name", "malformed"},
		{"tgram://123456789:AAF-def_ghijklmnop/chat", "neither a number"},
		{"gotifys://push.example.net/", "app token is missing"},
		{"gotifys://push.example.net:8080/AbCdEf12345", "only port 443"},
		{"gotifys://push.example.net/AbCdEf12345?priority=11", "0 to 10"},
		{"gotifys://127.0.0.1/AbCdEf12345", "127.0.0.1 is not a public address"},
		{"gotifys://[::ffff:192.168.0.1]/AbCdEf12345", "not a public address"},
		{"matrixs://matrix.example.org/#room", "access token is missing"},
		{"matrixs://u:pw@matrix.example.org/#room", "access token is missing or malformed"},
		{"matrixs://u:syt_abcdefgh@matrix.example.org/", "room is missing"},
		{"matrixs://u:syt_abcdefgh@10.0.0.1/#room", "not a public address"},
		{"ntfys://ntfy.sh/", "topic"},
		{"ntfys://ntfy.sh/bad!topic", "malformed"},
		{"ntfys://localhost/topic", "not a public host name"},
		{"jsons://169.254.169.254/latest/meta-data", "not a public address"},
		{"jsons://100.64.1.1/x", "not a public address"},
		{"jsons://router/x", "not a public host name"},
		{"jsons://hooks.example.com:8443/x", "only port 443"},
		{"jsons://:pw@hooks.example.com/x", "credentials are malformed"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			_, err := notify.ParseApprise(tc.in)
			require.Error(t, err)
			require.True(t, errors.Is(err, notify.ErrInvalidTarget), err)
			require.Contains(t, err.Error(), tc.want)
		})
	}
}
