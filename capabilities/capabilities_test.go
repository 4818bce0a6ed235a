package capabilities

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidwall/gjson"
	"go.uber.org/goleak"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/protocol"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/schematest"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/routing"
)

// TestMain installs flag names as the command layer does, so that
// messages are checked as users read them.
func TestMain(m *testing.M) {
	rewrite.SetHintText(func(h rewrite.Hint) string { return "--" + string(h) })
	goleak.VerifyTestMain(m)
}

// waitBound bounds every wait in this file. It is a hang guard, not a speed
// assertion.
const waitBound = 10 * time.Second

// jsonEqual reports whether a and b are the same JSON value (member order
// ignored).
func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		t.Fatalf("not JSON: %s: %v", a, err)
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		t.Fatalf("not JSON: %s: %v", b, err)
	}
	return reflect.DeepEqual(va, vb)
}

// memberNames lists the names of an object's members, in order.
func memberNames(b []byte) []string {
	var names []string
	gjson.ParseBytes(b).ForEach(func(k, _ gjson.Result) bool {
		names = append(names, k.Str)
		return true
	})
	return names
}

const tasksOnly = `{"extensions":{"io.modelcontextprotocol/tasks":{}}}`

// ---------------------------------------------------------------------------
// ClientCapabilities: 2025 initialize capabilities to 2026 per-request ones

func TestClientCapabilities(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"absent", ``, tasksOnly},
		{"empty object", `{}`, tasksOnly},
		{"null", `null`, tasksOnly},
		{"not an object", `[1,2]`, tasksOnly},
		{"a string", `"roots"`, tasksOnly},
		{"roots listChanged dropped", `{"roots":{"listChanged":true}}`,
			`{"roots":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}`},
		{"roots empty stays empty", `{"roots":{}}`,
			`{"roots":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}`},
		{"client tasks dropped", `{"tasks":{"list":{},"cancel":{},"requests":{"sampling":{"createMessage":{}}}}}`, tasksOnly},
		{"sampling copied", `{"sampling":{"context":{},"tools":{}}}`,
			`{"sampling":{"context":{},"tools":{}},"extensions":{"io.modelcontextprotocol/tasks":{}}}`},
		{"elicitation copied", `{"elicitation":{"form":{},"url":{}}}`,
			`{"elicitation":{"form":{},"url":{}},"extensions":{"io.modelcontextprotocol/tasks":{}}}`},
		{"elicitation empty copied", `{"elicitation":{}}`,
			`{"elicitation":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}`},
		{"experimental copied", `{"experimental":{"x":{"y":[1,2]}}}`,
			`{"experimental":{"x":{"y":[1,2]}},"extensions":{"io.modelcontextprotocol/tasks":{}}}`},
		{"unknown member copied", `{"com.example/thing":{"a":1}}`,
			`{"com.example/thing":{"a":1},"extensions":{"io.modelcontextprotocol/tasks":{}}}`},
		{"extensions merged", `{"extensions":{"com.example/ext":{"on":true}}}`,
			`{"extensions":{"com.example/ext":{"on":true},"io.modelcontextprotocol/tasks":{}}}`},
		{"existing tasks extension normalized", `{"extensions":{"io.modelcontextprotocol/tasks":{"x":1}}}`, tasksOnly},
		{"extensions not an object replaced (bool)", `{"extensions":true}`, tasksOnly},
		{"extensions not an object replaced (array)", `{"extensions":["io.modelcontextprotocol/tasks"]}`, tasksOnly},
		{"extensions not an object replaced (null)", `{"extensions":null}`, tasksOnly},
		{"everything", `{"roots":{"listChanged":false},"sampling":{},"elicitation":{"form":{}},"tasks":{"list":{}},"experimental":{},"extensions":{"a.b/c":{}}}`,
			`{"roots":{},"sampling":{},"elicitation":{"form":{}},"experimental":{},"extensions":{"a.b/c":{},"io.modelcontextprotocol/tasks":{}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ClientCapabilities([]byte(tt.in))
			if !gjson.ValidBytes(got) {
				t.Fatalf("ClientCapabilities(%s) = %s: not valid JSON", tt.in, got)
			}
			if !jsonEqual(t, got, []byte(tt.want)) {
				t.Errorf("ClientCapabilities(%s)\n got %s\nwant %s", tt.in, got, tt.want)
			}
		})
	}
}

// Copied members keep their bytes (bytes the rewrite does not own are
// preserved) and their order, and keys
// with dots are not turned into nested objects.
func TestClientCapabilitiesPreservesBytes(t *testing.T) {
	in := `{"sampling":{"tools":{} ,"context":{"z":1,"a":2}},"x.y/z":{"n":1.50},"roots":{"listChanged":true}}`
	got := ClientCapabilities([]byte(in))
	if s := gjson.GetBytes(got, "sampling").Raw; s != `{"tools":{} ,"context":{"z":1,"a":2}}` {
		t.Errorf("sampling = %s, want its bytes unchanged", s)
	}
	if s := gjson.GetBytes(got, gjson.Escape("x.y/z")).Raw; s != `{"n":1.50}` {
		t.Errorf(`"x.y/z" = %s, want {"n":1.50} (got %s)`, s, got)
	}
	if want := []string{"sampling", "x.y/z", "roots", "extensions"}; !reflect.DeepEqual(memberNames(got), want) {
		t.Errorf("member order %v, want %v (%s)", memberNames(got), want, got)
	}
}

// The mapped capabilities are what every upstream request carries; they
// must be a valid 2026 ClientCapabilities.
func TestClientCapabilitiesValidate2026(t *testing.T) {
	v := schematest.Load(t)
	for _, in := range []string{``, `{}`,
		`{"roots":{"listChanged":true},"sampling":{"context":{},"tools":{}},"elicitation":{"form":{},"url":{}},"tasks":{"list":{},"cancel":{}},"experimental":{"x":{}}}`,
		`{"extensions":{"com.example/ext":{}}}`, `{"extensions":7}`} {
		got := ClientCapabilities([]byte(in))
		if err := v.Validate(schematest.Schema2026, "ClientCapabilities", got); err != nil {
			t.Errorf("ClientCapabilities(%s) = %s: %v", in, got, err)
		}
	}
}

// ---------------------------------------------------------------------------
// ServerCapabilities: 2026 server/discover capabilities to 2025 ones

func TestServerCapabilities(t *testing.T) {
	const ext = `"extensions":{"io.modelcontextprotocol/tasks":{}}`
	tests := []struct {
		name     string
		in       string
		tasks    bool
		want     string
		hasTasks bool
	}{
		{"absent", ``, true, `{}`, false},
		{"null", `null`, true, `{}`, false},
		{"not an object", `[]`, true, `{}`, false},
		{"empty", `{}`, true, `{}`, false},
		{"copies the standard members", `{"experimental":{"x":{}},"logging":{},"completions":{},"prompts":{"listChanged":true},"resources":{"subscribe":true,"listChanged":true},"tools":{"listChanged":true}}`, false,
			`{"experimental":{"x":{}},"logging":{},"completions":{},"prompts":{"listChanged":true},"resources":{"subscribe":true,"listChanged":true},"tools":{"listChanged":true}}`, false},
		{"tasks extension and tasks on", `{"tools":{},` + ext + `}`, true,
			`{"tools":{},"tasks":` + LegacyTasksCapability + `}`, true},
		{"tasks extension with settings", `{"extensions":{"io.modelcontextprotocol/tasks":{"v":2}}}`, true,
			`{"tasks":` + LegacyTasksCapability + `}`, true},
		{"tasks extension but tasks off", `{"tools":{},` + ext + `}`, false, `{"tools":{}}`, true},
		{"tasks on but no extension", `{"tools":{}}`, true, `{"tools":{}}`, false},
		{"other extensions dropped", `{"tools":{},"extensions":{"com.example/x":{}}}`, true, `{"tools":{}}`, false},
		{"other extensions dropped beside tasks", `{"extensions":{"com.example/x":{},"io.modelcontextprotocol/tasks":{}}}`, true,
			`{"tasks":` + LegacyTasksCapability + `}`, true},
		{"extensions not an object", `{"extensions":"io.modelcontextprotocol/tasks"}`, true, `{}`, false},
		{"a stray core tasks member is dropped", `{"tasks":{"list":{}}}`, true, `{}`, false},
		{"a stray core tasks member is replaced", `{"tasks":{"list":{}},` + ext + `}`, true,
			`{"tasks":` + LegacyTasksCapability + `}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, has := ServerCapabilities([]byte(tt.in), tt.tasks)
			if has != tt.hasTasks {
				t.Errorf("hasTasks = %v, want %v", has, tt.hasTasks)
			}
			if !jsonEqual(t, got, []byte(tt.want)) {
				t.Errorf("ServerCapabilities(%s, %v)\n got %s\nwant %s", tt.in, tt.tasks, got, tt.want)
			}
			if gjson.GetBytes(got, "extensions").Exists() {
				t.Errorf("extensions leaked into 2025 capabilities: %s", got)
			}
		})
	}
}

func TestLegacyTasksCapabilityShape(t *testing.T) {
	want := `{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}`
	if LegacyTasksCapability != want {
		t.Errorf("LegacyTasksCapability = %s, want %s", LegacyTasksCapability, want)
	}
	v := schematest.Load(t)
	caps, _ := ServerCapabilities([]byte(`{"tools":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}`), true)
	if err := v.Validate(schematest.Schema2025, "ServerCapabilities", caps); err != nil {
		t.Errorf("2025 ServerCapabilities %s: %v", caps, err)
	}
}

// ---------------------------------------------------------------------------
// InitializeResult: the 2025 initialize answered from server/discover

func TestNegotiateLegacy(t *testing.T) {
	for in, want := range map[string]string{
		"2025-11-25": "2025-11-25",
		"2025-06-18": "2025-06-18",
		"2025-03-26": "2025-03-26",
		"2024-11-05": "2025-11-25",
		"2026-07-28": "2025-11-25",
		"2099-01-01": "2025-11-25",
		"":           "2025-11-25",
		"garbage":    "2025-11-25",
	} {
		if got := NegotiateLegacy(in); got != want {
			t.Errorf("NegotiateLegacy(%q) = %q, want %q", in, got, want)
		}
	}
}

// discoverFixture is a complete DiscoverResult; it is validated against the
// 2026 schema so the fixture stays honest.
const discoverFixture = `{"resultType":"complete","supportedVersions":["2026-07-28"],` +
	`"capabilities":{"tools":{"listChanged":true},"prompts":{"listChanged":true},"resources":{"subscribe":true,"listChanged":true},"logging":{},` +
	`"extensions":{"io.modelcontextprotocol/tasks":{},"com.example/other":{}}},` +
	`"instructions":"Use the tools wisely.","ttlMs":60000,"cacheScope":"public",` +
	`"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"upstream","title":"Upstream","version":"3.1.4"}}}`

func TestDiscoverFixtureIsValid(t *testing.T) {
	v := schematest.Load(t)
	frame := `{"jsonrpc":"2.0","id":1,"result":` + discoverFixture + `}`
	if err := v.ValidateUpstreamResult([]byte(frame), "server/discover"); err != nil {
		t.Fatal(err)
	}
}

func TestInitializeResult(t *testing.T) {
	v := schematest.Load(t)
	const url = "https://user:secret@mcp.example.com:8443/mcp?token=abc"
	tests := []struct {
		name     string
		discover string
		opts     InitializeOptions
		want     string
	}{
		{"full, tasks and subscriptions", discoverFixture,
			InitializeOptions{RequestedVersion: "2025-11-25", UpstreamURL: url, Tasks: true, Subscriptions: true},
			`{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true},"prompts":{"listChanged":true},"resources":{"subscribe":true,"listChanged":true},"logging":{},"tasks":` + LegacyTasksCapability + `},` +
				`"serverInfo":{"name":"upstream","title":"Upstream","version":"3.1.4"},"instructions":"Use the tools wisely."}`},
		{"no tasks, no subscriptions", discoverFixture,
			InitializeOptions{RequestedVersion: "2025-06-18", UpstreamURL: url},
			`{"protocolVersion":"2025-06-18","capabilities":{"tools":{},"prompts":{},"resources":{},"logging":{}},` +
				`"serverInfo":{"name":"upstream","title":"Upstream","version":"3.1.4"},"instructions":"Use the tools wisely."}`},
		{"pre-final top-level serverInfo",
			`{"supportedVersions":["2026-07-28"],"capabilities":{},"serverInfo":{"name":"old","version":"0.9"}}`,
			InitializeOptions{RequestedVersion: "2025-03-26", UpstreamURL: url},
			`{"protocolVersion":"2025-03-26","capabilities":{},"serverInfo":{"name":"old","version":"0.9"}}`},
		{"_meta serverInfo wins over top-level",
			`{"supportedVersions":["2026-07-28"],"capabilities":{},"serverInfo":{"name":"old","version":"0.9"},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"new","version":"1.0"}}}`,
			InitializeOptions{RequestedVersion: "2025-11-25", UpstreamURL: url},
			`{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"new","version":"1.0"}}`},
		{"invalid _meta serverInfo falls back to top-level",
			`{"supportedVersions":["2026-07-28"],"capabilities":{},"serverInfo":{"name":"old","version":"0.9"},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"new"}}}`,
			InitializeOptions{RequestedVersion: "2025-11-25", UpstreamURL: url},
			`{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"old","version":"0.9"}}`},
		{"no serverInfo: synthesized from the host",
			`{"supportedVersions":["2026-07-28"],"capabilities":{},"ttlMs":0,"cacheScope":"private","resultType":"complete"}`,
			InitializeOptions{RequestedVersion: "2026-07-28", UpstreamURL: url},
			`{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"mcp.example.com","version":"unknown"}}`},
		{"invalid serverInfo everywhere: synthesized",
			`{"supportedVersions":["2026-07-28"],"capabilities":{},"serverInfo":"x","_meta":{"io.modelcontextprotocol/serverInfo":{"name":1,"version":"1"}}}`,
			InitializeOptions{RequestedVersion: "2024-11-05", UpstreamURL: "http://127.0.0.1:9/mcp"},
			`{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"127.0.0.1","version":"unknown"}}`},
		{"no serverInfo and no URL",
			`{"supportedVersions":["2026-07-28"],"capabilities":{}}`,
			InitializeOptions{},
			`{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"mcp-server","version":"unknown"}}`},
		{"instructions not a string are dropped",
			`{"supportedVersions":["2026-07-28"],"capabilities":{},"instructions":{"a":1},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}}}`,
			InitializeOptions{RequestedVersion: "2025-11-25"},
			`{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}`},
		{"no capabilities at all",
			`{"supportedVersions":["2026-07-28"],"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}}}`,
			InitializeOptions{RequestedVersion: "2025-11-25"},
			`{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := InitializeResult([]byte(tt.discover), tt.opts)
			if !jsonEqual(t, got, []byte(tt.want)) {
				t.Errorf("InitializeResult\n got %s\nwant %s", got, tt.want)
			}
			for _, k := range []string{"supportedVersions", "ttlMs", "cacheScope", "resultType", "_meta"} {
				if gjson.GetBytes(got, k).Exists() {
					t.Errorf("%s leaked into the InitializeResult: %s", k, got)
				}
			}
			if strings.Contains(string(got), "secret") || strings.Contains(string(got), "abc") {
				t.Errorf("URL credentials leaked into the InitializeResult: %s", got)
			}
			if err := v.Validate(schematest.Schema2025, "InitializeResult", got); err != nil {
				t.Errorf("2025 InitializeResult: %v", err)
			}
			frame := rewrite.ResultFrame([]byte(`1`), got)
			if err := v.ValidateClientBound(frame, "initialize"); err != nil {
				t.Errorf("client-bound frame: %v", err)
			}
			if err := schematest.CheckLegacyClean(frame, "initialize"); err != nil {
				t.Errorf("legacy clean: %v", err)
			}
		})
	}
}

// serverInfo and instructions are copied byte for byte.
func TestInitializeResultPreservesBytes(t *testing.T) {
	d := `{"supportedVersions":["2026-07-28"],"capabilities":{},"instructions":"a \u00e9 <b>&</b>",` +
		`"_meta":{"io.modelcontextprotocol/serverInfo":{"version":"1","name":"s","icons":[{"src":"https://x/i.png"}]}}}`
	got := InitializeResult([]byte(d), InitializeOptions{})
	if s := gjson.GetBytes(got, "instructions").Raw; s != `"a \u00e9 <b>&</b>"` {
		t.Errorf("instructions = %s, want the bytes unchanged", s)
	}
	if s := gjson.GetBytes(got, "serverInfo").Raw; s != `{"version":"1","name":"s","icons":[{"src":"https://x/i.png"}]}` {
		t.Errorf("serverInfo = %s, want the bytes unchanged", s)
	}
}

// ---------------------------------------------------------------------------
// Meta: the request _meta of 2026-07-28

func TestMeta(t *testing.T) {
	caps := []byte(`{"roots":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}`)
	info := []byte(`{"name":"client","version":"1.0"}`)
	const (
		pv = `"io.modelcontextprotocol/protocolVersion":"2026-07-28"`
		cc = `"io.modelcontextprotocol/clientCapabilities":{"roots":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}`
		ci = `"io.modelcontextprotocol/clientInfo":{"name":"client","version":"1.0"}`
	)
	tests := []struct {
		name  string
		info  []byte
		level string
		want  string
	}{
		{"all four in order", info, "info", pv + "," + cc + "," + ci + `,"io.modelcontextprotocol/logLevel":"info"`},
		{"no log level", info, "", pv + "," + cc + "," + ci},
		{"no clientInfo", nil, "debug", pv + "," + cc + `,"io.modelcontextprotocol/logLevel":"debug"`},
		{"empty clientInfo", []byte{}, "", pv + "," + cc},
		{"only the required", nil, "", pv + "," + cc},
	}
	v := schematest.Load(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := Meta(caps, tt.info, tt.level)
			if got := string(m.Raw()); got != tt.want {
				t.Errorf("Meta().Raw()\n got %s\nwant %s", got, tt.want)
			}
			obj := []byte("{" + string(m.Raw()) + "}")
			if err := v.Validate(schematest.Schema2026, "RequestMetaObject", obj); err != nil {
				t.Errorf("RequestMetaObject: %v", err)
			}
		})
	}
}

func TestEraAndStatusText(t *testing.T) {
	for e, want := range map[Era]string{Unknown: "unknown", Modern: "modern", Legacy: "legacy", Era(42): "unknown"} {
		if got := e.String(); got != want {
			t.Errorf("Era(%d).String() = %q, want %q", int(e), got, want)
		}
	}
	if got := StatusText(0); got != "no HTTP answer" {
		t.Errorf("StatusText(0) = %q", got)
	}
	if got := StatusText(503); got != "HTTP 503" {
		t.Errorf("StatusText(503) = %q", got)
	}
}

// ---------------------------------------------------------------------------
// Probe: detecting the upstream's era with server/discover

// post is one POST the fake upstream received.
type post struct {
	method string
	header http.Header
	body   []byte
}

// upstream is an httptest server that records every request and answers
// with answer(n, id, w, r), n counting from 1.
type upstream struct {
	srv   *httptest.Server
	mu    sync.Mutex
	posts []post
}

type answerFunc func(n int, id string, w http.ResponseWriter, r *http.Request)

func newUpstream(t *testing.T, answer answerFunc) *upstream {
	t.Helper()
	u := &upstream{}
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		u.posts = append(u.posts, post{method: r.Method, header: r.Header.Clone(), body: body})
		n := len(u.posts)
		u.mu.Unlock()
		id := gjson.GetBytes(body, "id").Raw
		if id == "" {
			id = "null"
		}
		answer(n, id, w, r)
	}))
	t.Cleanup(u.srv.Close)
	return u
}

func (u *upstream) url() string { return u.srv.URL + "/mcp" }

func (u *upstream) recorded() []post {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]post(nil), u.posts...)
}

// newProber builds a Prober whose ids count 1, 2, 3...
func newProber(t *testing.T, url string) *Prober {
	t.Helper()
	c, err := routing.New(routing.Config{URL: url, ConnectTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdle)
	var n atomic.Int64
	return &Prober{Client: c, NextID: func() []byte { return strconv.AppendInt(nil, n.Add(1), 10) }}
}

func probeMeta() rewrite.MetaBlock {
	return Meta(ClientCapabilities([]byte(`{"roots":{"listChanged":true},"sampling":{},"elicitation":{}}`)),
		[]byte(`{"name":"probe-test","version":"0.0.1"}`), "")
}

// probe runs one probe, bounded by waitBound; ctxTimeout is the probe's own
// deadline (0 for waitBound).
func probe(t *testing.T, p *Prober, ctxTimeout time.Duration) Verdict {
	t.Helper()
	if ctxTimeout == 0 {
		ctxTimeout = waitBound
	}
	ctx, cancel := context.WithTimeout(context.Background(), ctxTimeout)
	defer cancel()
	done := make(chan Verdict, 1)
	go func() { done <- p.Probe(ctx, probeMeta()) }()
	select {
	case v := <-done:
		return v
	case <-time.After(waitBound):
		t.Fatalf("Probe did not return within %v", waitBound)
		return Verdict{}
	}
}

func writeJSON(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

func writeSSE(w http.ResponseWriter, events ...string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	for _, e := range events {
		_, _ = io.WriteString(w, "event: message\ndata: "+e+"\n\n")
	}
}

func resultFrame(id, result string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"result":` + result + `}`
}

func errorFrame(id string, code int, message, data string) string {
	e := fmt.Sprintf(`{"code":%d,"message":%q`, code, message)
	if data != "" {
		e += `,"data":` + data
	}
	return `{"jsonrpc":"2.0","id":` + id + `,"error":` + e + `}}`
}

func discoverWith(versions string) string {
	return `{"resultType":"complete","supportedVersions":` + versions + `,"capabilities":{"tools":{}},"ttlMs":1000,"cacheScope":"public",` +
		`"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up","version":"1"}}}`
}

func unsupported(supported string) string {
	if supported == "" {
		return `{"requested":"2026-07-28"}`
	}
	return `{"supported":` + supported + `,"requested":"2026-07-28"}`
}

// jsonAnswer answers every POST with the same JSON-RPC body (the request's
// id substituted for ID).
func jsonAnswer(status int, body string) answerFunc {
	return func(_ int, id string, w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, status, strings.ReplaceAll(body, "ID", id))
	}
}

// sequence answers the n-th POST with answers[n-1] (the last one repeats).
func sequence(answers ...answerFunc) answerFunc {
	return func(n int, id string, w http.ResponseWriter, r *http.Request) {
		answers[min(n, len(answers))-1](n, id, w, r)
	}
}

func TestProbeClassification(t *testing.T) {
	modernDiscover := discoverWith(`["2026-07-28","2025-11-25"]`)
	tests := []struct {
		name     string
		answer   answerFunc
		era      Era
		posts    int      // exactly this many POSTs
		status   int      // Verdict.Status
		errHas   []string // substrings of Verdict.Err; nil means Err must be nil
		discover string   // the expected Discover bytes for Modern
	}{
		// Row: 2xx + DiscoverResult with 2026-07-28 (JSON or SSE) => modern.
		{name: "DiscoverResult JSON", answer: jsonAnswer(200, resultFrame("ID", modernDiscover)),
			era: Modern, posts: 1, status: 200, discover: modernDiscover},
		{name: "DiscoverResult SSE after a notification", answer: func(_ int, id string, w http.ResponseWriter, _ *http.Request) {
			writeSSE(w,
				`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"hello"}}`,
				resultFrame(id, modernDiscover))
		}, era: Modern, posts: 1, status: 200, discover: modernDiscover},
		{name: "DiscoverResult with only 2026-07-28", answer: jsonAnswer(200, resultFrame("ID", discoverWith(`["2026-07-28"]`))),
			era: Modern, posts: 1, status: 200, discover: discoverWith(`["2026-07-28"]`)},

		// Row: DiscoverResult without 2026-07-28.
		{name: "DiscoverResult with only legacy versions", answer: jsonAnswer(200, resultFrame("ID", discoverWith(`["2025-11-25","2025-06-18"]`))),
			era: Legacy, posts: 1, status: 200},
		{name: "DiscoverResult with only other modern versions", answer: jsonAnswer(200, resultFrame("ID", discoverWith(`["2027-03-01"]`))),
			era: Unknown, posts: 1, status: 200, errHas: []string{"2027-03-01", protocol.ModernVersion}},
		{name: "DiscoverResult with legacy and other modern versions", answer: jsonAnswer(200, resultFrame("ID", discoverWith(`["2025-11-25","2027-03-01"]`))),
			era: Unknown, posts: 1, status: 200, errHas: []string{"2027-03-01"}},

		// Row: -32022 naming 2026-07-28 => corrective retry once; the second answer decides.
		{name: "-32022 then DiscoverResult", answer: sequence(
			jsonAnswer(400, errorFrame("ID", -32022, "Unsupported protocol version", unsupported(`["2026-07-28"]`))),
			jsonAnswer(200, resultFrame("ID", modernDiscover))),
			era: Modern, posts: 2, status: 200, discover: modernDiscover},
		{name: "-32022 then -32601", answer: sequence(
			jsonAnswer(400, errorFrame("ID", -32022, "Unsupported protocol version", unsupported(`["2026-07-28"]`))),
			jsonAnswer(404, errorFrame("ID", -32601, "Method not found", ""))),
			era: Legacy, posts: 2, status: 404},
		{name: "-32022 twice (loop guard)", answer: jsonAnswer(400, errorFrame("ID", -32022, "Unsupported protocol version", unsupported(`["2026-07-28","2025-11-25"]`))),
			era: Unknown, posts: 2, status: 400, errHas: []string{"twice"}},

		// Rows: -32022 without 2026-07-28.
		{name: "-32022 with only legacy versions", answer: jsonAnswer(400, errorFrame("ID", -32022, "Unsupported protocol version", unsupported(`["2025-11-25"]`))),
			era: Legacy, posts: 1, status: 400},
		{name: "-32022 without data.supported", answer: jsonAnswer(400, errorFrame("ID", -32022, "Unsupported protocol version", unsupported(""))),
			era: Legacy, posts: 1, status: 400},
		{name: "-32022 without data", answer: jsonAnswer(400, errorFrame("ID", -32022, "Unsupported protocol version", "")),
			era: Legacy, posts: 1, status: 400},
		{name: "-32022 with an empty supported", answer: jsonAnswer(400, errorFrame("ID", -32022, "Unsupported protocol version", unsupported(`[]`))),
			era: Legacy, posts: 1, status: 400},
		{name: "-32022 with supported not an array", answer: jsonAnswer(400, errorFrame("ID", -32022, "Unsupported protocol version", unsupported(`"2026-07-28"`))),
			era: Legacy, posts: 1, status: 400},
		{name: "-32022 with only other modern versions", answer: jsonAnswer(400, errorFrame("ID", -32022, "Unsupported protocol version", unsupported(`["2027-03-01"]`))),
			era: Unknown, posts: 1, status: 400, errHas: []string{"2027-03-01"}},

		// Row: 400 + -32020 / -32021 => modern, surface the error, never fall back.
		{name: "400 -32020 HeaderMismatch", answer: jsonAnswer(400, errorFrame("ID", -32020, "Header mismatch: Mcp-Method", "")),
			era: Unknown, posts: 1, status: 400, errHas: []string{"modern MCP server", "-32020"}},
		{name: "400 -32021 MissingRequiredClientCapability", answer: jsonAnswer(400, errorFrame("ID", -32021, "Missing required client capability", `{"requiredCapabilities":{"sampling":{}}}`)),
			era: Unknown, posts: 1, status: 400, errHas: []string{"modern MCP server", "-32021"}},

		// Row: -32601 answering server/discover => legacy.
		{name: "404 -32601", answer: jsonAnswer(404, errorFrame("ID", -32601, "Method not found", "")),
			era: Legacy, posts: 1, status: 404},
		{name: "200 -32601", answer: jsonAnswer(200, errorFrame("ID", -32601, "Method not found", "")),
			era: Legacy, posts: 1, status: 200},

		// Row: any other JSON-RPC error code in a 4xx or 200 body => legacy.
		{name: "400 -32000 session id required, id null", answer: jsonAnswer(400, errorFrame("null", -32000, "Bad Request: Mcp-Session-Id header is required", "")),
			era: Legacy, posts: 1, status: 400},
		{name: "400 -32000 unsupported protocol version text, id null", answer: jsonAnswer(400, errorFrame("null", -32000, "Bad Request: Unsupported protocol version: 2026-07-28 (supported versions: 2025-11-25, 2025-06-18)", "")),
			era: Legacy, posts: 1, status: 400},
		{name: "400 -32000 server not initialized, id absent", answer: jsonAnswer(400, `{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: Server not initialized"}}`),
			era: Legacy, posts: 1, status: 400},
		{name: "404 -32001 session not found, id null", answer: jsonAnswer(404, errorFrame("null", -32001, "Session not found", "")),
			era: Legacy, posts: 1, status: 404},
		{name: "200 -32600", answer: jsonAnswer(200, errorFrame("ID", -32600, "Invalid Request", "")),
			era: Legacy, posts: 1, status: 200},
		{name: "400 -32602 (2025 version error shape)", answer: jsonAnswer(400, errorFrame("ID", -32602, "Unsupported protocol version", `{"supported":["2025-11-25"],"requested":"2026-07-28"}`)),
			era: Legacy, posts: 1, status: 400},
		{name: "200 result that is not a DiscoverResult", answer: jsonAnswer(200, resultFrame("ID", `{}`)),
			era: Legacy, posts: 1, status: 200},

		// Row: 4xx with an empty or non-JSON-RPC body => legacy.
		{name: "400 empty body", answer: func(_ int, _ string, w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusBadRequest)
		}, era: Legacy, posts: 1, status: 400},
		{name: "400 empty JSON body", answer: jsonAnswer(400, ``),
			era: Legacy, posts: 1, status: 400},
		{name: "404 plain text", answer: func(_ int, _ string, w http.ResponseWriter, r *http.Request) {
			http.NotFound(w, r)
		}, era: Legacy, posts: 1, status: 404},
		{name: "405", answer: func(_ int, _ string, w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Allow", "GET")
			http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
		}, era: Legacy, posts: 1, status: 405},
		{name: "405 empty", answer: func(_ int, _ string, w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusMethodNotAllowed)
		}, era: Legacy, posts: 1, status: 405},
		{name: "400 JSON that is not an object", answer: jsonAnswer(400, `"bad request"`),
			era: Legacy, posts: 1, status: 400},

		// Row: 401 / 403 => not era evidence; surface the auth problem.
		{name: "401", answer: func(_ int, _ string, w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="https://x/.well-known/oauth-protected-resource"`)
			writeJSON(w, 401, `{"error":"invalid_token"}`)
		}, era: Unknown, posts: 1, status: 401, errHas: []string{"--header", "Authorization", "401", "mcp-tasks-proxy auth login "}},
		{name: "403", answer: jsonAnswer(403, errorFrame("ID", -32600, "Forbidden", "")),
			era: Unknown, posts: 1, status: 403, errHas: []string{"--header", "403", "mcp-tasks-proxy auth login "}},

		// Row: 5xx => not era evidence.
		{name: "500", answer: func(_ int, _ string, w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "boom", http.StatusInternalServerError)
		}, era: Unknown, posts: 1, status: 500, errHas: []string{"500"}},
		{name: "407 proxy auth", answer: func(_ int, _ string, w http.ResponseWriter, _ *http.Request) { w.WriteHeader(407) },
			era: Unknown, posts: 1, status: 407, errHas: []string{"407", "HTTPS_PROXY"}},
		{name: "429 rate limited", answer: func(_ int, _ string, w http.ResponseWriter, _ *http.Request) { w.WriteHeader(429) },
			era: Unknown, posts: 1, status: 429, errHas: []string{"429", "later"}},
		{name: "503 with a JSON-RPC error", answer: jsonAnswer(503, errorFrame("ID", -32601, "Method not found", "")),
			era: Unknown, posts: 1, status: 503, errHas: []string{"503"}},

		// A 2xx answer that is not JSON-RPC: not an MCP endpoint.
		{name: "200 text/html", answer: func(_ int, _ string, w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = io.WriteString(w, "<!doctype html><title>Welcome</title>")
		}, era: Unknown, posts: 1, status: 200, errHas: []string{"/mcp", "text/html"}},
		{name: "200 empty", answer: jsonAnswer(200, ``),
			era: Unknown, posts: 1, status: 200, errHas: []string{"/mcp"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := newUpstream(t, tt.answer)
			v := probe(t, newProber(t, up.url()), 0)
			if v.Era != tt.era {
				t.Errorf("Era = %v, want %v (reason %q, err %v)", v.Era, tt.era, v.Reason, v.Err)
			}
			if v.Status != tt.status {
				t.Errorf("Status = %d, want %d", v.Status, tt.status)
			}
			if v.Reason == "" {
				t.Errorf("Reason is empty")
			}
			posts := up.recorded()
			if len(posts) != tt.posts {
				t.Errorf("%d POSTs, want %d", len(posts), tt.posts)
			}
			for i, p := range posts {
				if got, want := gjson.GetBytes(p.body, "id").Raw, strconv.Itoa(i+1); got != want {
					t.Errorf("POST %d has id %s, want a fresh id %s", i+1, got, want)
				}
			}
			switch {
			case tt.errHas == nil && v.Err != nil:
				t.Errorf("Err = %v, want nil", v.Err)
			case tt.errHas != nil && v.Err == nil:
				t.Errorf("Err = nil, want an error mentioning %q", tt.errHas)
			case v.Err != nil:
				for _, s := range tt.errHas {
					if !strings.Contains(v.Err.Error(), s) {
						t.Errorf("Err %q does not mention %q", v.Err, s)
					}
				}
				if strings.Contains(v.Err.Error(), "\n") {
					t.Errorf("Err %q spans lines", v.Err)
				}
			}
			if tt.era == Modern {
				if string(v.Discover) != tt.discover {
					t.Errorf("Discover = %s, want %s", v.Discover, tt.discover)
				}
			} else if v.Discover != nil {
				t.Errorf("Discover = %s on a %v verdict, want nil", v.Discover, v.Era)
			}
		})
	}
}

// The reasons of the "no common version" verdicts say so.
func TestProbeNoCommonVersionReason(t *testing.T) {
	for name, answer := range map[string]answerFunc{
		"DiscoverResult": jsonAnswer(200, resultFrame("ID", discoverWith(`["2027-03-01"]`))),
		"-32022":         jsonAnswer(400, errorFrame("ID", -32022, "Unsupported", unsupported(`["2027-03-01"]`))),
	} {
		t.Run(name, func(t *testing.T) {
			up := newUpstream(t, answer)
			v := probe(t, newProber(t, up.url()), 0)
			if v.Era != Unknown || v.Reason != "no common version" || v.Err == nil {
				t.Errorf("verdict %v, reason %q, err %v; want unknown, \"no common version\" and an error", v.Era, v.Reason, v.Err)
			}
		})
	}
}

// The probe request itself: one POST with the modern headers
// and a server/discover body that is a valid 2026 request.
func TestProbeRequest(t *testing.T) {
	up := newUpstream(t, jsonAnswer(200, resultFrame("ID", discoverWith(`["2026-07-28"]`))))
	v := probe(t, newProber(t, up.url()), 0)
	if v.Era != Modern {
		t.Fatalf("Era = %v (%v)", v.Era, v.Err)
	}
	posts := up.recorded()
	if len(posts) != 1 {
		t.Fatalf("%d POSTs, want 1", len(posts))
	}
	p := posts[0]
	if p.method != http.MethodPost {
		t.Errorf("method %s, want POST", p.method)
	}
	for name, want := range map[string]string{
		"Mcp-Method":           "server/discover",
		"MCP-Protocol-Version": "2026-07-28",
		"Content-Type":         "application/json",
	} {
		if got := p.header.Get(name); got != want {
			t.Errorf("header %s = %q, want %q", name, got, want)
		}
	}
	if acc := p.header.Get("Accept"); !strings.Contains(acc, "application/json") || !strings.Contains(acc, "text/event-stream") {
		t.Errorf("Accept = %q, want application/json and text/event-stream", acc)
	}
	if vals, ok := p.header["Mcp-Name"]; ok {
		t.Errorf("Mcp-Name = %q, want no Mcp-Name on server/discover", vals)
	}
	b := gjson.ParseBytes(p.body)
	if b.Get("jsonrpc").String() != "2.0" || b.Get("method").String() != "server/discover" || b.Get("id").Raw != "1" {
		t.Errorf("body %s: want jsonrpc 2.0, method server/discover, id 1", p.body)
	}
	meta := b.Get("params._meta")
	if got := meta.Get(gjson.Escape(protocol.MetaProtocolVersion)).String(); got != "2026-07-28" {
		t.Errorf("_meta protocolVersion = %q in %s", got, p.body)
	}
	cc := meta.Get(gjson.Escape(protocol.MetaClientCapabilities))
	if !cc.IsObject() || !cc.Get("extensions."+gjson.Escape(protocol.TasksExtension)).Exists() {
		t.Errorf("_meta clientCapabilities = %s, want an object declaring the tasks extension", cc.Raw)
	}
	if cc.Get("roots.listChanged").Exists() {
		t.Errorf("_meta clientCapabilities = %s: roots.listChanged must be dropped", cc.Raw)
	}
	if got := meta.Get(gjson.Escape(protocol.MetaClientInfo)).Raw; got != `{"name":"probe-test","version":"0.0.1"}` {
		t.Errorf("_meta clientInfo = %s", got)
	}
	if params := b.Get("params"); len(memberNames([]byte(params.Raw))) != 1 {
		t.Errorf("params = %s, want only _meta", params.Raw)
	}
	if err := schematest.Load(t).ValidateUpstream(p.body); err != nil {
		t.Errorf("probe body: %v", err)
	}
	// The body and the routing headers agree: headers are derived from the
	// body.
	if h := routing.Headers(p.body, nil); h.Get("Mcp-Method") != p.header.Get("Mcp-Method") ||
		h.Get("MCP-Protocol-Version") != p.header.Get("MCP-Protocol-Version") {
		t.Errorf("headers %v disagree with the derived %v", p.header, h)
	}
}

func TestDiscoverBody(t *testing.T) {
	m := rewrite.NewMetaBlock(rewrite.MetaPair{Key: "k", Value: []byte(`1`)})
	got := DiscoverBody([]byte(`"up-7"`), m)
	want := `{"jsonrpc":"2.0","id":"up-7","method":"server/discover","params":{"_meta":{"k":1}}}`
	if string(got) != want {
		t.Errorf("DiscoverBody = %s, want %s", got, want)
	}
}

// The user's --header values ride the probe (a token is how a protected
// server lets it in).
func TestProbeSendsUserHeaders(t *testing.T) {
	up := newUpstream(t, jsonAnswer(200, resultFrame("ID", discoverWith(`["2026-07-28"]`))))
	c, err := routing.New(routing.Config{URL: up.url(), Header: http.Header{"Authorization": {"Bearer t0ken"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdle()
	var n atomic.Int64
	p := &Prober{Client: c, NextID: func() []byte { return strconv.AppendInt(nil, n.Add(1), 10) }}
	if v := probe(t, p, 0); v.Era != Modern {
		t.Fatalf("Era = %v (%v)", v.Era, v.Err)
	}
	if got := up.recorded()[0].header.Get("Authorization"); got != "Bearer t0ken" {
		t.Errorf("Authorization = %q", got)
	}
}

// Row: network error => not era evidence, and the error says to check
// that the server runs.
func TestProbeConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	v := probe(t, newProber(t, "http://"+addr+"/mcp"), 0)
	if v.Era != Unknown || v.Err == nil {
		t.Fatalf("verdict %v, err %v; want unknown with an error", v.Era, v.Err)
	}
	if v.Status != 0 {
		t.Errorf("Status = %d, want 0", v.Status)
	}
	if !strings.Contains(v.Err.Error(), "is the server running") {
		t.Errorf("Err %q does not ask whether the server is running", v.Err)
	}
	if !strings.Contains(v.Err.Error(), addr) {
		t.Errorf("Err %q does not name the upstream %s", v.Err, addr)
	}
}

// Row: timeout => not era evidence. The handler never answers; the probe's
// ctx deadline bounds it.
func TestProbeServerNeverAnswers(t *testing.T) {
	release := make(chan struct{})
	up := newUpstream(t, func(_ int, _ string, _ http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	t.Cleanup(func() { close(release) }) // runs before the server's Close
	v := probe(t, newProber(t, up.url()), 200*time.Millisecond)
	if v.Era != Unknown || v.Err == nil {
		t.Fatalf("verdict %v, err %v; want unknown with an error", v.Era, v.Err)
	}
	if !strings.Contains(v.Err.Error(), "in time") {
		t.Errorf("Err %q does not say the server did not answer in time", v.Err)
	}
}

// Same, but the server sends SSE headers and then nothing.
func TestProbeStreamStalls(t *testing.T) {
	release := make(chan struct{})
	up := newUpstream(t, func(_ int, _ string, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	t.Cleanup(func() { close(release) })
	v := probe(t, newProber(t, up.url()), 200*time.Millisecond)
	if v.Era != Unknown || v.Err == nil {
		t.Fatalf("verdict %v, err %v; want unknown with an error", v.Era, v.Err)
	}
}

// A SSE stream that ends without an answer to the probe is not evidence of
// a legacy server.
func TestProbeSSEWithoutAnswer(t *testing.T) {
	up := newUpstream(t, func(_ int, _ string, w http.ResponseWriter, _ *http.Request) {
		writeSSE(w, `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}`)
	})
	v := probe(t, newProber(t, up.url()), 0)
	if v.Era != Unknown || v.Err == nil {
		t.Errorf("verdict %v (%s), err %v; want unknown with an error", v.Era, v.Reason, v.Err)
	}
}

// Discover bytes survive the response being closed (SSE slices are reused
// by the reader).
func TestProbeDiscoverIsACopy(t *testing.T) {
	d := discoverWith(`["2026-07-28"]`)
	up := newUpstream(t, func(_ int, id string, w http.ResponseWriter, _ *http.Request) {
		writeSSE(w, resultFrame(id, d), `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"`+strings.Repeat("z", len(d))+`"}}`)
	})
	v := probe(t, newProber(t, up.url()), 0)
	if v.Era != Modern || !bytes.Equal(v.Discover, []byte(d)) {
		t.Errorf("verdict %v, Discover %s; want modern with %s", v.Era, v.Discover, d)
	}
}

// TestProbeRetriesTransportFailures pins the README's retry rule for the
// start-up probe: a reset is retried (with a new id), up to 2 times.
func TestProbeRetriesTransportFailures(t *testing.T) {
	for _, tc := range []struct {
		resets int
		era    Era
		posts  int
	}{{resets: 2, era: Modern, posts: 3}, {resets: 3, era: Unknown, posts: 3}} {
		u := newUpstream(t, func(n int, id string, w http.ResponseWriter, r *http.Request) {
			if n <= tc.resets {
				if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
					conn.Close()
				}
				return
			}
			writeJSON(w, 200, `{"jsonrpc":"2.0","id":`+id+`,"result":{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{},"ttlMs":0,"cacheScope":"public"}}`)
		})
		v := probe(t, newProber(t, u.url()), 0)
		posts := u.recorded()
		if v.Era != tc.era || len(posts) != tc.posts {
			t.Errorf("%d resets: era %v after %d POSTs, want %v after %d (%v)", tc.resets, v.Era, len(posts), tc.era, tc.posts, v.Err)
		}
		if len(posts) >= 2 && gjson.GetBytes(posts[0].body, "id").Raw == gjson.GetBytes(posts[1].body, "id").Raw {
			t.Errorf("a retried probe reused its id")
		}
	}
}

// failingAuth is an auth hook whose sign-in never completes.
type failingAuth struct{ calls atomic.Int64 }

func (a *failingAuth) Authorization(context.Context) (string, error) {
	a.calls.Add(1)
	return "", errors.New("sign-in to h did not complete: nobody signed in; to sign in from a terminal, run: mcp-tasks-proxy auth login https://h/mcp")
}

func (a *failingAuth) Retry(context.Context, int, http.Header, string) (bool, error) {
	return false, nil
}

// A probe the auth hook cannot authorize is not retried (another try would
// only open another browser tab): its error is the hook's.
func TestProbeAuthFailureNotRetried(t *testing.T) {
	up := newUpstream(t, jsonAnswer(200, resultFrame("ID", discoverWith(`["2026-07-28"]`))))
	a := &failingAuth{}
	c, err := routing.New(routing.Config{URL: up.url(), Auth: a})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdle()
	var n atomic.Int64
	p := &Prober{Client: c, NextID: func() []byte { return strconv.AppendInt(nil, n.Add(1), 10) }}
	v := probe(t, p, 0)
	if v.Era != Unknown || !IsAuthError(v.Err) || !strings.Contains(v.Err.Error(), "auth login https://h/mcp") {
		t.Errorf("verdict %v, %v; want Unknown with the hook's error", v.Era, v.Err)
	}
	if got := a.calls.Load(); got != 1 {
		t.Errorf("%d authorizations asked, want 1: not retried", got)
	}
	if got := len(up.recorded()); got != 0 {
		t.Errorf("%d posts, want none", got)
	}
}
