package check

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/protocol"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
)

// wire sees the session's HTTP exchanges with the server (it is a
// routing.Observer): what the server said before the session rewrote it.
type wire struct {
	mu      sync.Mutex
	methods map[string]string // the method of each request sent, by raw id
	seen    seen
}

// seen is what the report needs of the exchanges.
type seen struct {
	status  int           // the first exchange's HTTP status
	rtt     time.Duration // its round trip
	refused int           // the first 401 or 403
	// discover is the server/discover result; toolPages are the tools/list
	// answers, as the server sent them.
	discover  gjson.Result
	toolPages [][]byte
	// probe is how the server answered the Base64 probe: "" (not sent),
	// "sent" (no answer yet), "accepted" or "refused".
	probe string
}

func (w *wire) Request(_ context.Context, _, _ string, _ http.Header, body []byte) {
	m, err := rewrite.Parse(body)
	if err != nil || m.Kind != rewrite.KindRequest {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.methods[m.ID.Raw] = m.Method
	if m.Method == "prompts/get" && m.Params.Get("name").String() == base64Probe && w.seen.probe == "" {
		w.seen.probe = "sent"
	}
}

func (w *wire) Answer(_ context.Context, status int, msg []byte, since time.Time, _ error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := &w.seen
	if status != 0 && s.status == 0 {
		s.status, s.rtt = status, time.Since(since)
	}
	if (status == http.StatusUnauthorized || status == http.StatusForbidden) && s.refused == 0 {
		s.refused = status
	}
	m, err := rewrite.Parse(rewrite.TrimFrame(msg))
	if err != nil || m.Kind != rewrite.KindResponse {
		return
	}
	switch w.methods[m.ID.Raw] {
	case "server/discover":
		if m.Result.Get("supportedVersions").IsArray() {
			s.discover = gjson.Parse(strings.Clone(m.Result.Raw))
		}
	case "tools/list":
		s.toolPages = append(s.toolPages, append([]byte(nil), m.Raw...))
	case "prompts/get":
		if m.Error.Get("code").Int() == protocol.CodeHeaderMismatch && s.probe != "" {
			s.probe = "refused"
		} else if s.probe == "sent" {
			s.probe = "accepted"
		}
	}
}

// snapshot returns what the wire saw so far.
func (w *wire) snapshot() seen {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seen
}
