package bridge

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/tidwall/gjson"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// TestBase64HeaderRefusedRetriedRaw: a server that compares Mcp-Name with
// the body without decoding the spec's Base64 form (go-sdk v1.8.0) refuses
// it with -32020; the request is retried once with the raw UTF-8 value. A
// refusal of headers that carried no Base64 value is not retried that way,
// and a server that refuses the raw value too gets no third try.
func TestBase64HeaderRefusedRetriedRaw(t *testing.T) {
	u := newUpstream(t)
	core, logs := observer.New(zapcore.InfoLevel)
	h := initialized(t, u, Config{Logger: zap.New(core)})
	var mu sync.Mutex
	var seen []string // Mcp-Name of each prompts/get
	u.setHandler(func(w http.ResponseWriter, r *http.Request, body string) {
		name := r.Header.Get("Mcp-Name")
		mu.Lock()
		seen = append(seen, name)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		id := gjson.Get(body, "id").Raw
		if name != gjson.Get(body, "params.name").Str || strings.HasPrefix(name, "never") {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32020,"message":"header mismatch: Mcp-Name header value '%s' does not match body value"}}`, id, name)
			return
		}
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"resultType":"complete","messages":[{"role":"user","content":{"type":"text","text":%q}}]}}`, id, name)
	})
	for _, tc := range []struct {
		name    string
		headers []string // Mcp-Name on each attempt
		ok      bool
	}{
		{"grüße", []string{"=?base64?Z3LDvMOfZQ==?=", "grüße"}, true},
		{"plain", []string{"plain"}, true},
		{"never-ascii", []string{"never-ascii"}, false},
		{"never-grüße", []string{"=?base64?bmV2ZXItZ3LDvMOfZQ==?=", "never-grüße"}, false},
	} {
		mu.Lock()
		seen = nil
		mu.Unlock()
		h.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":%q}}`, tc.name))
		r := h.next()
		if got := gjson.Get(r, "result.messages.0.content.text").Str; tc.ok && got != tc.name {
			t.Errorf("%s: answer %s", tc.name, r)
		}
		if !tc.ok && gjson.Get(r, "error.code").Int() != -32020 {
			t.Errorf("%s: want the server's -32020, got %s", tc.name, r)
		}
		mu.Lock()
		if fmt.Sprint(seen) != fmt.Sprint(tc.headers) {
			t.Errorf("%s: Mcp-Name per attempt %q, want %q", tc.name, seen, tc.headers)
		}
		mu.Unlock()
	}
	// The README: the first such retry of a session is logged at info, once.
	if n := logs.FilterMessageSnippet("Base64 form").Len(); n != 1 {
		t.Errorf("%d info lines about the Base64 refusal, want exactly 1 for the session", n)
	}
}
