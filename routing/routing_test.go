package routing

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
	"go.uber.org/goleak"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/protocol"
)

func TestEncodeValue(t *testing.T) {
	tests := []struct{ in, want string }{
		{"get_weather", "get_weather"},
		{"file:///tmp/a b.txt", "file:///tmp/a b.txt"},
		{"demo://readme", "demo://readme"},
		{"", "=?base64??="}, // empty is not missing
		{"Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="},
		{" lead", "=?base64?IGxlYWQ=?="},
		{"trail ", "=?base64?dHJhaWwg?="},
		{"tab\there", "=?base64?dGFiCWhlcmU=?="},
		{"cr\rlf\n", "=?base64?Y3INbGYK?="},
		{"del\x7f", "=?base64?ZGVsfw==?="},
		{"=?base64?abc?=", "=?base64?PT9iYXNlNjQ/YWJjPz0=?="}, // a lookalike is encoded
		{"=?base64?abc", "=?base64?abc"},                      // not a full lookalike: plain
		{"é", "=?base64?w6k=?="},
	}
	for _, tt := range tests {
		got := EncodeValue(tt.in)
		if got != tt.want {
			t.Errorf("EncodeValue(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if back, ok := DecodeValue(got); !ok || back != tt.in {
			t.Errorf("DecodeValue(%q) = %q, %v; want %q", got, back, ok, tt.in)
		}
	}
}

func FuzzEncodeValue(f *testing.F) {
	f.Add("plain")
	f.Add("=?base64?x?=")
	f.Add(" \t\r\n世界")
	f.Fuzz(func(t *testing.T, s string) {
		v := EncodeValue(s)
		for i := 0; i < len(v); i++ {
			if v[i] < 0x20 || v[i] > 0x7e {
				t.Fatalf("EncodeValue(%q) = %q has byte %#x", s, v, v[i])
			}
		}
		if back, ok := DecodeValue(v); !ok || back != s {
			t.Fatalf("round trip of %q gave %q", s, back)
		}
	})
}

func TestDeriveHeaders(t *testing.T) {
	const pv = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`
	tests := []struct {
		name   string
		body   string
		params []ParamHeader
		want   map[string]string // "" means absent
	}{
		{"tools/call", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_weather","arguments":{"city":"Paris"},` + pv + `}}`,
			[]ParamHeader{{Name: "City", Path: "params.arguments.city"}},
			map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": "get_weather", "Mcp-Param-City": "Paris", "Mcp-Protocol-Version": "2026-07-28"}},
		{"prompts/get", `{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"p",` + pv + `}}`, nil,
			map[string]string{"Mcp-Method": "prompts/get", "Mcp-Name": "p"}},
		{"resources/read", `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///ü.txt",` + pv + `}}`, nil,
			map[string]string{"Mcp-Name": "=?base64?ZmlsZTovLy/DvC50eHQ=?="}},
		{"tasks/get", `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"t-1",` + pv + `}}`, nil,
			map[string]string{"Mcp-Name": "t-1"}},
		{"list has no name", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"name":"x",` + pv + `}}`, nil,
			map[string]string{"Mcp-Method": "tools/list", "Mcp-Name": ""}},
		{"discover", `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + pv + `}}`, nil,
			map[string]string{"Mcp-Method": "server/discover", "Mcp-Name": "", "Mcp-Protocol-Version": "2026-07-28"}},
		{"param types", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"i":42,"b":false,"n":null,"o":{},"s":" x"},` + pv + `}}`,
			[]ParamHeader{{Name: "I", Path: "params.arguments.i"}, {Name: "B", Path: "params.arguments.b"}, {Name: "N", Path: "params.arguments.n"}, {Name: "O", Path: "params.arguments.o"}, {Name: "S", Path: "params.arguments.s"}, {Name: "Absent", Path: "params.arguments.zz"}},
			map[string]string{"Mcp-Param-I": "42", "Mcp-Param-B": "false", "Mcp-Param-N": "", "Mcp-Param-O": "", "Mcp-Param-S": "=?base64?IHg=?=", "Mcp-Param-Absent": ""}},
		{"name with newline", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a\nb",` + pv + `}}`, nil,
			map[string]string{"Mcp-Name": "=?base64?YQpi?="}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := Headers([]byte(tt.body), tt.params)
			for k, want := range tt.want {
				if got := h.Get(k); got != want {
					t.Errorf("%s = %q, want %q", k, got, want)
				}
			}
			if h.Get("Accept") != "application/json, text/event-stream" || h.Get("Content-Type") != "application/json" {
				t.Errorf("Accept/Content-Type = %q / %q", h.Get("Accept"), h.Get("Content-Type"))
			}
		})
	}
}

func TestSSEReader(t *testing.T) {
	in := ": keep-alive\n\nevent: message\nid: 7\nretry: 100\ndata: {\"a\":1}\n\n" +
		"data: {\"b\":\r\ndata: 2}\r\n\r\n" +
		"data:{\"c\":3}\n\n" +
		"event: other\n\n" +
		"data: {\"last\":true}"
	r := NewSSEReader(strings.NewReader(in), 0)
	want := []string{`{"a":1}`, "{\"b\":\n2}", `{"c":3}`, `{"last":true}`}
	for _, w := range want {
		got, err := r.Next()
		if err != nil || string(got) != w {
			t.Fatalf("Next() = %q, %v; want %q", got, err, w)
		}
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("after the last event: %v, want EOF", err)
	}
}

// Event ids and retry delays are kept for 2025 stream resumption: an id
// counts once its event is complete (also for an event without data, a
// priming event), an incomplete event's id does not, and an event whose
// data is empty is not delivered.
func TestSSEReaderEventIDs(t *testing.T) {
	in := "id: prime\ndata:\n\n" + // priming: no message, but an id
		"id: 1\nretry: 250\ndata: {\"a\":1}\n\n" +
		"retry: x\ndata: {\"b\":2}\n\n" + // no id field: the last one stays
		"id: 3\ndata: {\"c\":" // cut mid-event
	r := NewSSEReader(strings.NewReader(in), 0)
	if r.id != "" || r.retry != 0 {
		t.Fatalf("before any event: id %q retry %v", r.id, r.retry)
	}
	for _, w := range []struct{ data, id string }{{`{"a":1}`, "1"}, {`{"b":2}`, "1"}, {`{"c":`, "1"}} {
		got, err := r.Next()
		if err != nil || string(got) != w.data || r.id != w.id {
			t.Fatalf("Next() = %q, %v, id %q; want %q, id %q", got, err, r.id, w.data, w.id)
		}
	}
	if r.retry != 250*time.Millisecond {
		t.Errorf("Retry() = %v, want 250ms (an invalid retry is ignored)", r.retry)
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("after the cut event: %v, want EOF", err)
	}
}

// Send is the passthrough request: the method given, the session headers
// on top of the user's, Accept per method, and no derived 2026 header.
func TestSendPassthroughRequests(t *testing.T) {
	defer goleak.VerifyNone(t)
	type seen struct {
		method string
		h      http.Header
		body   string
	}
	got := make(chan seen, 3)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r.Method, r.Header.Clone(), string(b)}
		switch r.Method {
		case http.MethodGet:
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "id: 9\nretry: 40\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}\n\n")
		case http.MethodDelete:
			w.WriteHeader(http.StatusMethodNotAllowed)
		default:
			w.Header().Set("Mcp-Session-Id", "s-1")
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	defer srv.Close()
	c, err := New(Config{URL: srv.URL, Header: http.Header{"Authorization": {"Bearer t"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdle()
	sess := http.Header{"Mcp-Session-Id": {"s-1"}, "Mcp-Protocol-Version": {"2025-11-25"}}
	body := `{"jsonrpc":"2.0","method":"notifications/initialized"}`
	for _, m := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
		var b []byte
		if m == http.MethodPost {
			b = []byte(body)
		}
		resp, err := c.Send(context.Background(), m, b, sess)
		if err != nil {
			t.Fatal(err)
		}
		s := <-got
		if s.method != m || s.h.Get("Authorization") != "Bearer t" || s.h.Get("Mcp-Session-Id") != "s-1" || s.h.Get("Mcp-Protocol-Version") != "2025-11-25" {
			t.Errorf("%s: method %s headers %v", m, s.method, s.h)
		}
		if s.h.Get("Mcp-Method") != "" {
			t.Errorf("%s: a 2025 request got the 2026 header Mcp-Method %q", m, s.h.Get("Mcp-Method"))
		}
		switch m {
		case http.MethodPost:
			if s.body != body || s.h.Get("Content-Type") != "application/json" || s.h.Get("Accept") != "application/json, text/event-stream" {
				t.Errorf("POST: body %q headers %v", s.body, s.h)
			}
			if resp.Status != http.StatusAccepted || resp.Header.Get("Mcp-Session-Id") != "s-1" {
				t.Errorf("POST: status %d session %q", resp.Status, resp.Header.Get("Mcp-Session-Id"))
			}
		case http.MethodGet:
			if s.h.Get("Accept") != "text/event-stream" || s.body != "" {
				t.Errorf("GET: accept %q body %q", s.h.Get("Accept"), s.body)
			}
			if msg, err := resp.Next(); err != nil || !strings.Contains(string(msg), "notifications/message") {
				t.Errorf("GET stream: %s, %v", msg, err)
			}
			if resp.LastEventID() != "9" || resp.Retry() != 40*time.Millisecond {
				t.Errorf("GET stream: last id %q retry %v", resp.LastEventID(), resp.Retry())
			}
		case http.MethodDelete:
			if resp.Status != http.StatusMethodNotAllowed || resp.LastEventID() != "" {
				t.Errorf("DELETE: status %d", resp.Status)
			}
		}
		resp.Close()
	}
}

func TestSSEReaderLimit(t *testing.T) {
	r := NewSSEReader(strings.NewReader("data: "+strings.Repeat("x", 100)+"\n\n"), 50)
	if _, err := r.Next(); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err = %v, want ErrTooLarge", err)
	}
	long := strings.Repeat("y", 200<<10) // longer than the reader's buffer
	r = NewSSEReader(strings.NewReader("data: "+long+"\n\n"), 0)
	if got, err := r.Next(); err != nil || string(got) != long {
		t.Fatalf("long event: len %d, %v", len(got), err)
	}
}

func TestPostClassifiesDialErrors(t *testing.T) {
	defer goleak.VerifyNone(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String() + "/mcp"
	ln.Close()
	c, err := New(Config{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdle()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = c.Post(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`), nil)
	var te *TransportError
	if !errors.As(err, &te) || te.Kind != KindDial {
		t.Fatalf("err = %v, want a dial TransportError", err)
	}
	if !strings.Contains(err.Error(), "cannot connect to "+url) {
		t.Errorf("message %q does not name the URL", err)
	}
}

func TestPostSendsUserHeadersAndReadsJSON(t *testing.T) {
	defer goleak.VerifyNone(t)
	var got http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	}))
	defer srv.Close()
	c, err := New(Config{URL: srv.URL, Header: http.Header{"Authorization": {"Bearer t"}, "Mcp-Method": {"spoof"}}, UserAgent: "ua/1"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdle()
	resp, err := c.Post(context.Background(), []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Close()
	msg, err := resp.Next()
	if err != nil || string(msg) != `{"jsonrpc":"2.0","id":1,"result":{}}` {
		t.Fatalf("Next() = %s, %v", msg, err)
	}
	if _, err := resp.Next(); err != io.EOF {
		t.Fatalf("second Next() = %v, want EOF", err)
	}
	if got.Get("Authorization") != "Bearer t" || got.Get("User-Agent") != "ua/1" {
		t.Errorf("user headers not sent: %v", got)
	}
	if got.Get("Mcp-Method") != "tools/list" {
		t.Errorf("Mcp-Method = %q: a --header must not override a derived header", got.Get("Mcp-Method"))
	}
	if resp.ContentType != "application/json" || resp.Status != 200 {
		t.Errorf("status %d content type %q", resp.Status, resp.ContentType)
	}
}

func TestNextRejectsHTML(t *testing.T) {
	defer goleak.VerifyNone(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<html>login</html>")
	}))
	defer srv.Close()
	c, _ := New(Config{URL: srv.URL})
	defer c.CloseIdle()
	resp, err := c.Post(context.Background(), []byte(`{}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Close()
	body, err := resp.Next()
	if !errors.Is(err, ErrContentType) || string(body) != "<html>login</html>" {
		t.Fatalf("Next() = %q, %v; want the body and ErrContentType", body, err)
	}
}

func TestNewRejectsBadURLs(t *testing.T) {
	for _, u := range []string{"", "host/mcp", "ftp://x/y", "http://", "://x"} {
		if _, err := New(Config{URL: u}); err == nil {
			t.Errorf("New(%q) accepted", u)
		}
	}
}

func TestRedact(t *testing.T) {
	got := Redact("https://user:pass@host.example/mcp?token=abc&x=1")
	if strings.Contains(got, "pass") || strings.Contains(got, "abc") || !strings.Contains(got, "host.example/mcp") {
		t.Errorf("Redact = %q", got)
	}
}

// Another host name for the same server (localhost, not 127.0.0.1) is
// another origin: the redirect is not followed, so neither Authorization
// nor any other header reaches it.
func TestAuthorizationNotSentAcrossHosts(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // after the servers' cleanups
	other := newRecorder(t)
	target := strings.Replace(other.URL, "127.0.0.1", "localhost", 1)
	first := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target, http.StatusTemporaryRedirect)
	}))
	defer first.Close()
	c, err := New(Config{URL: first.URL, Header: http.Header{"Authorization": {"Bearer secret"}, "X-Other": {"kept"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdle()
	resp, err := c.Post(context.Background(), []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`), nil)
	if err == nil {
		resp.Close()
		t.Fatal("a redirect to another host was followed")
	}
	wantRedirectRefused(t, err, RedirectOtherOrigin, target)
	if got := other.requests(); len(got) != 0 {
		t.Errorf("the other host got %d requests (Authorization %q), want none", len(got), got[0].header.Get("Authorization"))
	}
}

// FuzzDeriveHeaders: values from a body (tool arguments, names, URIs) never
// inject a header: every value is one line of visible ASCII, and no header
// but the MCP ones and the annotated Mcp-Param-* appears.
func FuzzDeriveHeaders(f *testing.F) {
	f.Add("tools/call", "get_weather", "Paris")
	f.Add("resources/read", "file:///\r\nX-Injected: 1", "a\nb")
	f.Add("tasks/get", "=?base64?x?=", " x ")
	f.Fuzz(func(t *testing.T, method, name, arg string) {
		body := []byte(`{"jsonrpc":"2.0","id":1,"method":` + strconv.Quote(method) + `,"params":{"name":` + strconv.Quote(name) +
			`,"uri":` + strconv.Quote(name) + `,"taskId":` + strconv.Quote(name) + `,"arguments":{"a":` + strconv.Quote(arg) + `},"_meta":{"io.modelcontextprotocol/protocolVersion":` + strconv.Quote(arg) + `}}}`)
		h := Headers(body, []ParamHeader{{Name: "A", Path: "params.arguments.a"}})
		allowed := map[string]bool{"Content-Type": true, "Accept": true, "Mcp-Protocol-Version": true, "Mcp-Method": true, "Mcp-Name": true, "Mcp-Param-A": true}
		for k, vs := range h {
			if !allowed[k] {
				t.Fatalf("unexpected header %q from %s", k, body)
			}
			for _, v := range vs {
				for i := 0; i < len(v); i++ {
					if v[i] < 0x20 || v[i] > 0x7e {
						t.Fatalf("header %s value %q has byte %#x", k, v, v[i])
					}
				}
			}
		}
	})
}

// FuzzSSEReader: any byte stream gives events or an error, never a panic,
// and no event is larger than the limit.
func FuzzSSEReader(f *testing.F) {
	f.Add([]byte("data: {\"a\":1}\n\n: c\ndata: x\r\ndata: y\n\n"), 64)
	f.Add([]byte("data"), 1)
	f.Fuzz(func(t *testing.T, in []byte, max int) {
		if max < 0 {
			max = -max
		}
		r := NewSSEReader(bytes.NewReader(in), max)
		for range len(in) + 2 {
			ev, err := r.Next()
			if err != nil {
				return
			}
			if max > 0 && len(ev) > max {
				t.Fatalf("event of %d bytes over the %d limit", len(ev), max)
			}
		}
		t.Fatal("more events than input bytes")
	})
}

// FuzzSSELongLines holds the long-line path (lines over the read buffer,
// copied once and handed over as data) to the short-line path: a reader
// with a 16-byte buffer must see the same events, ids and errors as one
// with the usual buffer. Every event's room is taken where there is one: it
// must hold the event at its end after BodyRoom spare bytes, and an event
// whose room was taken must stay as it was while the stream goes on.
func FuzzSSELongLines(f *testing.F) {
	f.Add([]byte("data: {\"a\":\"0123456789abcdefghij\"}\n\nid: 7\ndata: x\r\ndata: 0123456789abcdefghijklmnop\n\n"), 0)
	f.Add([]byte("data: 0123456789abcdefghijklmnopqrstuvwxyz\ndata: 0123456789abcdefghijklmnopqrstuvwxyz\n\n"), 50)
	f.Add([]byte(": a long comment line, longer than sixteen bytes\ndata: y\n\ndata: end without a blank line 0123456789"), 0)
	f.Add([]byte("data: first long event 0123456789\n\ndata: second long event 0123456789\r\n\n"), 0)
	f.Fuzz(func(t *testing.T, in []byte, max int) {
		if max < 0 {
			max = -max
		}
		short := NewSSEReader(bytes.NewReader(in), max)
		long := newSSEReaderSize(bytes.NewReader(in), max, 16, nil)
		type taken struct{ ev, was []byte }
		var kept []taken
		for range len(in) + 2 {
			want, werr := short.Next()
			got, gerr := long.Next()
			if (werr == nil) != (gerr == nil) || !bytes.Equal(got, want) || long.id != short.id || long.retry != short.retry {
				t.Fatalf("16-byte buffer: %q, %v (id %q); usual: %q, %v (id %q)", got, gerr, long.id, want, werr, short.id)
			}
			if werr != nil {
				break
			}
			if room := long.takeRoom(); room != nil {
				off := len(room) - len(got)
				if off < BodyRoom || &room[off] != &got[0] {
					t.Fatalf("room of %d bytes does not end with the %d-byte event after %d spare bytes", len(room), len(got), BodyRoom)
				}
				kept = append(kept, taken{got, bytes.Clone(got)})
			}
		}
		for _, k := range kept {
			if !bytes.Equal(k.ev, k.was) {
				t.Fatalf("an event whose room was taken changed: %q, was %q", k.ev, k.was)
			}
		}
	})
}

// deriveHeadersByPath is DeriveHeaders as it was first written, one gjson
// path per header: the reference the one-scan version is held to.
func deriveHeadersByPath(h http.Header, body []byte, params []ParamHeader) {
	doc := string(body)
	r := gjson.GetMany(doc, "method", `params._meta.io\.modelcontextprotocol/protocolVersion`)
	method := r[0].String()
	if v := r[1]; v.Type == gjson.String {
		h.Set(HeaderProtocolVersion, EncodeValue(v.Str))
	}
	h.Set(HeaderMethod, EncodeValue(method))
	if p := protocol.NamePath(method); p != "" {
		if v := gjson.Get(doc, p); v.Type == gjson.String {
			h.Set(HeaderName, EncodeValue(v.Str))
		}
	}
	for _, p := range params {
		v := gjson.Get(doc, p.Path)
		var s string
		switch v.Type {
		case gjson.String:
			s = v.Str
		case gjson.Number:
			s = v.Raw
		case gjson.True:
			s = "true"
		case gjson.False:
			s = "false"
		default:
			continue
		}
		h.Set(HeaderParamPrefix+p.Name, EncodeValue(s))
	}
}

// FuzzDeriveHeadersByPath: any valid JSON body gets the same headers from
// DeriveHeaders as from one gjson path per header, duplicate keys, escaped
// keys and odd types included.
func FuzzDeriveHeadersByPath(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"name":"w","arguments":{"a":1}}}`))
	f.Add([]byte(`{"method":"tools/call","params":{"_meta":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"x"},"name":1,"name":"n"}}`))
	f.Add([]byte(`{"method":"resources/read","params":{"u\u0072i":"file:///a","_m\u0065ta":{"io.modelcontextprotocol\/protocolVersion":"2025-11-25"}}}`))
	f.Add([]byte(`{"method":"tasks/get","params":["taskId","_meta"],"taskId":"t"}`))
	f.Add([]byte(`{"method":7,"params":"name"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		if !gjson.ValidBytes(body) {
			return
		}
		params := []ParamHeader{{Name: "A", Path: "params.arguments.a"}}
		got, want := http.Header{}, http.Header{}
		DeriveHeaders(got, body, params)
		deriveHeadersByPath(want, body, params)
		if len(got) != len(want) {
			t.Fatalf("%s:\n got %v\nwant %v", body, got, want)
		}
		for k, v := range want {
			if g := got.Values(k); len(g) != len(v) || len(g) > 0 && g[0] != v[0] {
				t.Fatalf("%s: header %s = %q, want %q", body, k, g, v)
			}
		}
	})
}

func TestPathProtocolVersion(t *testing.T) {
	body := `{"params":{"_meta":{` + strconv.Quote(protocol.MetaProtocolVersion) + `:"v"}}}`
	if got := gjson.Get(body, pathProtocolVersion); got.Str != "v" {
		t.Errorf("%s does not find %s in %s", pathProtocolVersion, protocol.MetaProtocolVersion, body)
	}
}
