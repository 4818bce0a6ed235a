package rewrite_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
	"golang.org/x/tools/txtar"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/capabilities"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/protocol"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/schematest"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/routing"
)

// The golden files in ../testdata/golden are made from the spec's golden
// vectors 01–04 (run with -update when ../shared/spec is present). Each file
// is one vector: a session section (the state the vector assumes) and, per
// exchange N, the sections N/legacy-in, N/upstream-out, N/server-in and
// N/client-out. TestGolden replays them through the pure layers (rewrite,
// capabilities' mappings, routing's header derivation) and compares bytes;
// TestGoldenMatchesSpec checks that the files still say what the spec's
// vectors say.
var update = flag.Bool("update", false, "regenerate ../testdata/golden from ../shared/spec/examples")

var goldenVectors = []string{
	"01-initialize-from-discover.json",
	"02-local-ping-setlevel-and-loglevel.json",
	"03-tools-list.json",
	"04-tools-call-sync-sse.json",
}

const goldenDir = "../testdata/golden"

// goldenURL stands for the upstream in synthesized serverInfo.
const goldenURL = "https://example.test/mcp"

// session is the state a vector starts from.
type session struct {
	Initialize json.RawMessage       `json:"initialize"` // the legacy initialize params
	LogLevel   string                `json:"logLevel,omitempty"`
	Tasks      bool                  `json:"tasks"`
	Tools      []rewrite.ToolHeaders `json:"tools,omitempty"`
	NextID     int                   `json:"nextId"`
}

func (s *session) meta() rewrite.MetaBlock {
	p := gjson.ParseBytes(s.Initialize)
	var info []byte
	if ci := p.Get("clientInfo"); ci.Exists() {
		info = []byte(ci.Raw)
	}
	return capabilities.Meta(capabilities.ClientCapabilities([]byte(p.Get("capabilities").Raw)), info, s.LogLevel)
}

func (s *session) mint() []byte {
	s.NextID++
	return strconv.AppendInt(nil, int64(s.NextID), 10)
}

func (s *session) params(f *rewrite.Frame) []protocol.ParamHeader {
	if f.Method != "tools/call" {
		return nil
	}
	name := f.Params.Get("name").String()
	for _, t := range s.Tools {
		if t.Tool == name {
			var ps []protocol.ParamHeader
			for _, p := range t.Params {
				ps = append(ps, protocol.ParamHeader{Name: p.Name, Path: p.Path})
			}
			return ps
		}
	}
	return nil
}

// exchange is one client message and everything it causes.
type exchange struct {
	LegacyIn    []byte
	UpstreamOut []byte   // "POST\n<headers>\n\n<body>\n", or nil when answered locally
	ServerIn    []byte   // "<status> <content type>\n" then one message per line
	ClientOut   [][]byte // frames to the client, in order
}

// play runs one exchange through the pure layers. serverIn answers the
// upstream request; the harness mints upstream ids like the bridge does.
func play(t *testing.T, s *session, legacyIn []byte, serverIn func(upID []byte) []byte) exchange {
	t.Helper()
	ex := exchange{LegacyIn: legacyIn}
	f, err := rewrite.Parse(legacyIn)
	if err != nil {
		t.Fatalf("legacy-in: %v", err)
	}
	id := []byte(f.ID.Raw)
	switch {
	case f.Kind == rewrite.KindNotification:
		return ex
	case f.Method == "ping":
		ex.ClientOut = append(ex.ClientOut, rewrite.ResultFrame(id, []byte(`{}`)))
		return ex
	case f.Method == "logging/setLevel":
		s.LogLevel = f.Params.Get("level").String()
		ex.ClientOut = append(ex.ClientOut, rewrite.ResultFrame(id, []byte(`{}`)))
		return ex
	}
	var body []byte
	upID := s.mint()
	if f.Method == "initialize" {
		s.Initialize = json.RawMessage(f.Params.Raw)
		body = capabilities.DiscoverBody(upID, s.meta())
	} else {
		body, err = rewrite.RequestUp(&f, rewrite.Up{ID: upID, Meta: s.meta()})
		if err != nil {
			t.Fatalf("RequestUp: %v", err)
		}
	}
	ex.UpstreamOut = formatRequest(routing.Headers(body, s.params(&f)), body)
	ex.ServerIn = serverIn(upID)
	status, msgs := parseServerIn(t, ex.ServerIn)
	for _, msg := range msgs {
		m, err := rewrite.Parse(msg)
		if err != nil {
			t.Fatalf("server-in: %v", err)
		}
		if m.Kind == rewrite.KindNotification {
			ex.ClientOut = append(ex.ClientOut, msg)
			continue
		}
		if f.Method == "initialize" {
			res := capabilities.InitializeResult([]byte(m.Result.Raw), capabilities.InitializeOptions{
				RequestedVersion: f.Params.Get("protocolVersion").String(), UpstreamURL: goldenURL, Tasks: s.Tasks, Subscriptions: true,
			})
			ex.ClientOut = append(ex.ClientOut, rewrite.ResultFrame(id, res))
			continue
		}
		d, err := rewrite.ResponseDown(&m, rewrite.Down{ID: id, Method: f.Method, HTTPStatus: status, TaskSupport: s.Tasks})
		if err != nil {
			t.Fatalf("ResponseDown: %v", err)
		}
		if d.ResultType != protocol.ResultComplete {
			t.Fatalf("resultType %q is not bridged by the pure layers", d.ResultType)
		}
		s.Tools = append(s.Tools, d.Tools...)
		ex.ClientOut = append(ex.ClientOut, d.Frame)
	}
	return ex
}

func formatRequest(h http.Header, body []byte) []byte {
	var b bytes.Buffer
	b.WriteString("POST\n")
	names := make([]string, 0, len(h))
	for k := range h {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		fmt.Fprintf(&b, "%s: %s\n", k, h.Get(k))
	}
	b.WriteString("\n")
	b.Write(body)
	b.WriteString("\n")
	return b.Bytes()
}

func parseServerIn(t *testing.T, in []byte) (int, [][]byte) {
	t.Helper()
	lines := bytes.Split(bytes.TrimRight(in, "\n"), []byte("\n"))
	var status int
	var ct string
	if _, err := fmt.Sscanf(string(lines[0]), "%d %s", &status, &ct); err != nil {
		t.Fatalf("server-in status line %q: %v", lines[0], err)
	}
	return status, lines[1:]
}

func TestGolden(t *testing.T) {
	if *update {
		generateGolden(t)
	}
	files, _ := filepath.Glob(filepath.Join(goldenDir, "*.txtar"))
	if len(files) != len(goldenVectors) {
		t.Fatalf("found %d golden files in %s, want %d (run go test ./rewrite -run TestGolden -update)", len(files), goldenDir, len(goldenVectors))
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			ar, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			sec := sections(ar)
			var s session
			if err := json.Unmarshal(sec["session"], &s); err != nil {
				t.Fatalf("session: %v", err)
			}
			for n := 1; sec[fmt.Sprintf("%d/legacy-in", n)] != nil; n++ {
				p := fmt.Sprintf("%d/", n)
				legacyIn := bytes.TrimSpace(sec[p+"legacy-in"])
				ex := play(t, &s, legacyIn, func([]byte) []byte { return sec[p+"server-in"] })
				if got, want := string(ex.UpstreamOut), string(sec[p+"upstream-out"]); got != want {
					t.Errorf("exchange %d upstream-out:\n got: %s\nwant: %s", n, got, want)
				}
				if got, want := string(joinLines(ex.ClientOut)), string(sec[p+"client-out"]); got != want {
					t.Errorf("exchange %d client-out:\n got: %s\nwant: %s", n, got, want)
				}
			}
		})
	}
}

func sections(ar *txtar.Archive) map[string][]byte {
	m := map[string][]byte{}
	for _, f := range ar.Files {
		m[f.Name] = f.Data
	}
	return m
}

func joinLines(frames [][]byte) []byte {
	var b bytes.Buffer
	for _, f := range frames {
		b.Write(f)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// specExchange is one exchange as a spec vector states it.
type specExchange struct {
	legacyIn  []byte
	upstream  []byte          // the expected proxy->server frame
	headers   json.RawMessage // the headers the proxy must send
	status    int
	ctype     string
	serverIn  [][]byte // the server's messages, ids as in the vector
	clientOut [][]byte // the expected proxy->client frames
}

func specExchanges(t *testing.T, vec *schematest.Vector) []specExchange {
	var out []specExchange
	for _, st := range vec.Steps {
		switch st.Dir {
		case "client->proxy":
			out = append(out, specExchange{legacyIn: compact(t, st.Frame)})
		case "proxy->server":
			cur := &out[len(out)-1]
			cur.upstream = compact(t, st.Frame)
			cur.headers = json.RawMessage(gjson.GetBytes(st.HTTP, "headers").Raw)
		case "server->proxy":
			cur := &out[len(out)-1]
			cur.status = int(gjson.GetBytes(st.HTTP, "status").Int())
			cur.ctype = gjson.GetBytes(st.HTTP, "headers.Content-Type").String()
			if st.Frame != nil {
				cur.serverIn = append(cur.serverIn, compact(t, st.Frame))
			}
			for _, e := range st.SSE {
				cur.serverIn = append(cur.serverIn, compact(t, e))
			}
		case "proxy->client":
			cur := &out[len(out)-1]
			cur.clientOut = append(cur.clientOut, compact(t, st.Frame))
		}
	}
	return out
}

func compact(t *testing.T, b []byte) []byte {
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// serverFor answers with the vector's server messages, the response's id
// replaced by the minted upstream id.
func serverFor(t *testing.T, sx specExchange) func([]byte) []byte {
	return func(upID []byte) []byte {
		var b bytes.Buffer
		fmt.Fprintf(&b, "%d %s\n", sx.status, sx.ctype)
		for _, m := range sx.serverIn {
			if gjson.GetBytes(m, "id").Exists() {
				var err error
				if m, err = sjson.SetRawBytes(m, "id", upID); err != nil {
					t.Fatal(err)
				}
			}
			b.Write(m)
			b.WriteByte('\n')
		}
		return b.Bytes()
	}
}

// checkAgainstSpec compares what the pure layers produced for one exchange
// with what the spec vector requires: JSON-equal frames (upstream ids are
// volatile) and the required headers.
func checkAgainstSpec(t *testing.T, v *schematest.Validator, where string, ex exchange, sx specExchange) {
	t.Helper()
	method := gjson.GetBytes(ex.LegacyIn, "method").String()
	if ex.UpstreamOut != nil {
		_, body, _ := bytes.Cut(ex.UpstreamOut, []byte("\n\n"))
		if err := v.ValidateUpstream(bytes.TrimSpace(body)); err != nil {
			t.Errorf("%s: upstream body: %v", where, err)
		}
	}
	for _, f := range ex.ClientOut {
		if err := v.ValidateClientBound(f, method); err != nil {
			t.Errorf("%s: client frame: %v", where, err)
		}
		if err := schematest.CheckLegacyClean(f, method); err != nil {
			t.Errorf("%s: client frame: %v", where, err)
		}
	}
	if sx.upstream != nil {
		if ex.UpstreamOut == nil {
			t.Errorf("%s: the vector expects an upstream request; none was made", where)
		} else {
			head, body, _ := bytes.Cut(ex.UpstreamOut, []byte("\n\n"))
			assertJSONEqual(t, where+" upstream body", withoutID(t, bytes.TrimSpace(body)), withoutID(t, sx.upstream))
			got := map[string]string{}
			for _, line := range strings.Split(string(head), "\n")[1:] {
				k, v, _ := strings.Cut(line, ": ")
				got[strings.ToLower(k)] = v
			}
			gjson.ParseBytes(sx.headers).ForEach(func(k, v gjson.Result) bool {
				if got[strings.ToLower(k.Str)] != v.Str {
					t.Errorf("%s: header %s = %q, the vector requires %q", where, k.Str, got[strings.ToLower(k.Str)], v.Str)
				}
				return true
			})
		}
	} else if ex.UpstreamOut != nil {
		t.Errorf("%s: the vector answers locally, but an upstream request was made", where)
	}
	if len(ex.ClientOut) != len(sx.clientOut) {
		t.Fatalf("%s: %d frames to the client, the vector has %d", where, len(ex.ClientOut), len(sx.clientOut))
	}
	for i := range sx.clientOut {
		assertJSONEqual(t, fmt.Sprintf("%s client frame %d", where, i), ex.ClientOut[i], sx.clientOut[i])
	}
}

func withoutID(t *testing.T, b []byte) []byte {
	out, err := sjson.DeleteBytes(b, "id")
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func assertJSONEqual(t *testing.T, where string, got, want []byte) {
	t.Helper()
	var g, w any
	dg := json.NewDecoder(bytes.NewReader(got))
	dg.UseNumber()
	dw := json.NewDecoder(bytes.NewReader(want))
	dw.UseNumber()
	if err := dg.Decode(&g); err != nil {
		t.Fatalf("%s: our frame is not JSON: %v\n%s", where, err, got)
	}
	if err := dw.Decode(&w); err != nil {
		t.Fatalf("%s: vector frame is not JSON: %v", where, err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("%s differs from the spec vector:\n got: %s\nwant: %s", where, got, want)
	}
}

// vectorSession is the state the vectors share: the legacy client of the
// README (roots, sampling, elicitation form+url, client-side tasks) and a
// server that declares the tasks extension.
func vectorSession(t *testing.T) *session {
	v01 := schematest.LoadVector(t, goldenVectors[0])
	return &session{Initialize: json.RawMessage(gjson.GetBytes(v01.Steps[0].Frame, "params").Raw), Tasks: true}
}

// runVectors plays vectors 01–04 in order as one session, checking each
// exchange against the spec; it returns the txtar archives.
func runVectors(t *testing.T) map[string]*txtar.Archive {
	s := vectorSession(t)
	v := schematest.Load(t)
	out := map[string]*txtar.Archive{}
	for _, name := range goldenVectors {
		vec := schematest.LoadVector(t, name)
		s.LogLevel = "" // each vector assumes logging/setLevel was not called before it
		start, _ := json.Marshal(s)
		ar := &txtar.Archive{Comment: []byte(fmt.Sprintf("Made from ../shared/spec/examples/%s by go test ./rewrite -run TestGolden -update.\n%s\n", name, vec.Description))}
		ar.Files = append(ar.Files, txtar.File{Name: "session", Data: append(start, '\n')})
		for i, sx := range specExchanges(t, vec) {
			ex := play(t, s, sx.legacyIn, serverFor(t, sx))
			checkAgainstSpec(t, v, fmt.Sprintf("%s exchange %d", name, i+1), ex, sx)
			p := fmt.Sprintf("%d/", i+1)
			ar.Files = append(ar.Files, txtar.File{Name: p + "legacy-in", Data: append(ex.LegacyIn, '\n')})
			if ex.UpstreamOut != nil {
				ar.Files = append(ar.Files,
					txtar.File{Name: p + "upstream-out", Data: ex.UpstreamOut},
					txtar.File{Name: p + "server-in", Data: ex.ServerIn})
			}
			ar.Files = append(ar.Files, txtar.File{Name: p + "client-out", Data: joinLines(ex.ClientOut)})
		}
		out[name] = ar
	}
	return out
}

func generateGolden(t *testing.T) {
	if err := os.MkdirAll(goldenDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, ar := range runVectors(t) {
		file := filepath.Join(goldenDir, strings.TrimSuffix(name, ".json")+".txtar")
		if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestGoldenMatchesSpec replays the spec vectors and checks both that the
// outputs match the vectors and that the golden files are current.
func TestGoldenMatchesSpec(t *testing.T) {
	for name, ar := range runVectors(t) {
		file := filepath.Join(goldenDir, strings.TrimSuffix(name, ".json")+".txtar")
		have, err := os.ReadFile(file)
		if err != nil {
			t.Fatalf("%v (run go test ./rewrite -run TestGolden -update)", err)
		}
		if !bytes.Equal(have, txtar.Format(ar)) {
			t.Errorf("%s is stale: run go test ./rewrite -run TestGolden -update and review the diff", file)
		}
	}
}
