package schematest

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestGoldenVectors validates every instance named by a "validate" entry of
// every golden vector; spec/README.md says there are 160 and all pass.
func TestGoldenVectors(t *testing.T) {
	t.Parallel()
	v := Load(t)
	names := VectorNames(t)
	if len(names) == 0 {
		t.Fatal("no golden vectors found")
	}
	var mu sync.Mutex
	total := 0
	t.Run("files", func(t *testing.T) {
		for _, name := range names {
			t.Run(strings.TrimSuffix(name, ".json"), func(t *testing.T) {
				t.Parallel()
				vec := LoadVector(t, name)
				if vec.Name == "" || vec.Format == "" {
					t.Errorf("%s: missing name or format", name)
				}
				n := v.ValidateVector(t, vec)
				if n == 0 {
					t.Errorf("%s: no validate entries", name)
				}
				mu.Lock()
				total += n
				mu.Unlock()
			})
		}
	})
	if total != 160 {
		t.Errorf("validated %d instances, spec/README.md says 160", total)
	}
}

// TestGoldenFramesClassified runs the frame helpers over every message of the
// flow vectors, picking the helper from the step direction, so the
// classification tables agree with the goldens.
func TestGoldenFramesClassified(t *testing.T) {
	t.Parallel()
	v := Load(t)
	checked := 0
	for _, name := range VectorNames(t) {
		vec := LoadVector(t, name)
		clientReqs := map[string]string{}   // legacy client request id -> method
		upstreamReqs := map[string]string{} // upstream request id -> method
		legacyUpstream := false             // vector 16: 2025 passthrough after the probe
		for i, s := range vec.Steps {
			msgs := s.SSE
			if len(s.Frame) > 0 {
				msgs = append([]json.RawMessage{s.Frame}, msgs...)
			}
			for j, m := range msgs {
				where := fmt.Sprintf("%s steps[%d] message %d", name, i, j)
				var hdr struct {
					ID     json.RawMessage `json:"id"`
					Method string          `json:"method"`
				}
				if err := json.Unmarshal(m, &hdr); err != nil {
					t.Fatalf("%s: %v", where, err)
				}
				id := string(hdr.ID)
				var err error
				switch s.Dir {
				case "client->proxy":
					if hdr.Method != "" && id != "" {
						clientReqs[id] = hdr.Method
					}
					continue
				case "proxy->client":
					err = v.ValidateClientBound(m, clientReqs[id])
					if err == nil {
						err = CheckLegacyClean(m, clientReqs[id])
					}
				case "proxy->server":
					if hdr.Method == "initialize" {
						legacyUpstream = true
					}
					if legacyUpstream {
						continue
					}
					upstreamReqs[id] = hdr.Method
					err = v.ValidateUpstream(m)
				case "server->proxy":
					if legacyUpstream {
						continue
					}
					err = v.ValidateUpstreamResult(m, upstreamReqs[id])
				default:
					t.Fatalf("%s: unknown dir %q", where, s.Dir)
				}
				checked++
				if err != nil {
					t.Errorf("%s (%s): %v", where, s.Dir, err)
				}
			}
		}
	}
	if checked < 80 {
		t.Errorf("only %d frames classified", checked)
	}
}

// TestMappedDefsExist checks every def name in the classification tables
// against the $defs of the schema files.
func TestMappedDefsExist(t *testing.T) {
	t.Parallel()
	v := Load(t)
	want := func(schema, def, table string) {
		if !v.HasDef(schema, def) {
			t.Errorf("%s: %s has no $defs/%s", table, schema, def)
		}
	}
	for _, d := range legacyServerRequests {
		want(Schema2025, d, "legacyServerRequests")
	}
	for _, d := range legacyNotifications {
		want(Schema2025, d, "legacyNotifications")
	}
	for _, ds := range legacyResults {
		for _, d := range ds {
			want(Schema2025, d, "legacyResults")
		}
	}
	for _, d := range legacyClientResults {
		want(Schema2025, d, "legacyClientResults")
	}
	for _, tab := range []map[string]ref{modernRequests, modernNotifications, modernResults} {
		for _, r := range tab {
			want(r.schema, r.def, "modern tables")
		}
	}
	for _, r := range []ref{
		{Schema2025, "CreateTaskResult"}, {Schema2025, "JSONRPCRequest"}, {Schema2025, "JSONRPCNotification"},
		{Schema2025, "JSONRPCResultResponse"}, {Schema2025, "JSONRPCErrorResponse"},
		{Schema2025, "ClientRequest"}, {Schema2025, "ClientNotification"},
		{Schema2026, "JSONRPCRequest"}, {Schema2026, "JSONRPCNotification"}, {Schema2026, "JSONRPCResultResponse"},
		{Schema2026, "JSONRPCErrorResponse"}, {Schema2026, "InputRequiredResult"}, {Schema2026, "RequestMetaObject"},
		{SchemaExtTasks, "CreateTaskResult"},
	} {
		want(r.schema, r.def, "fixed")
	}
	if n := len(v.Defs(SchemaExtTasks)); n == 0 {
		t.Error("ext-tasks has no defs")
	}
}

const meta2026 = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

func TestValidateLegacyUpstream(t *testing.T) {
	t.Parallel()
	v := Load(t)
	for _, c := range []struct {
		body, method string
		ok           bool
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`, "", true},
		{`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`, "", false},
		{`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{}}}`, "", true},
		{`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{}}`, "", false},
		{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, "", true},
		{`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`, "", true},
		{`{"jsonrpc":"2.0","id":"s1","result":{"action":"accept","content":{"ok":true}}}`, "elicitation/create", true},
		{`{"jsonrpc":"2.0","id":"s1","result":{"action":"maybe"}}`, "elicitation/create", false},
		{`{"jsonrpc":"2.0","id":"s1","result":{"role":"assistant","content":{"type":"text","text":"hi"},"model":"m"}}`, "sampling/createMessage", true},
		{`{"jsonrpc":"2.0","id":"s1","error":{"code":-1,"message":"declined"}}`, "sampling/createMessage", true},
	} {
		err := v.ValidateLegacyUpstream([]byte(c.body), c.method)
		if (err == nil) != c.ok {
			t.Errorf("ValidateLegacyUpstream(%s, %q) = %v, want ok=%v", c.body, c.method, err, c.ok)
		}
	}
}

func TestValidateUpstream(t *testing.T) {
	t.Parallel()
	v := Load(t)
	for _, tc := range []struct {
		name, body string
		ok         bool
	}{
		{"tools/call ok", `{"jsonrpc":"2.0","id":"u-1","method":"tools/call","params":{"name":"x",` + meta2026 + `}}`, true},
		{"tools/call without _meta", `{"jsonrpc":"2.0","id":"u-1","method":"tools/call","params":{"name":"x"}}`, false},
		// The ext-tasks schema accepts these; the explicit _meta check must not.
		{"tasks/get without _meta", `{"jsonrpc":"2.0","id":"u-2","method":"tasks/get","params":{"taskId":"t"}}`, false},
		{"tasks/get without protocolVersion", `{"jsonrpc":"2.0","id":"u-2","method":"tasks/get","params":{"taskId":"t","_meta":{"io.modelcontextprotocol/clientCapabilities":{}}}}`, false},
		{"tasks/get ok", `{"jsonrpc":"2.0","id":"u-2","method":"tasks/get","params":{"taskId":"t",` + meta2026 + `}}`, true},
		{"tasks/update without inputResponses", `{"jsonrpc":"2.0","id":"u-3","method":"tasks/update","params":{"taskId":"t",` + meta2026 + `}}`, false},
		{"unknown method envelope ok", `{"jsonrpc":"2.0","id":7,"method":"x/y","params":{` + meta2026 + `}}`, true},
		{"unknown method bad envelope", `{"jsonrpc":"1.0","id":7,"method":"x/y","params":{` + meta2026 + `}}`, false},
		{"notification is not a request", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`, false},
		{"not JSON", `{"jsonrpc":`, false},
	} {
		err := v.ValidateUpstream([]byte(tc.body))
		if (err == nil) != tc.ok {
			t.Errorf("%s: ok=%v, err=%v", tc.name, tc.ok, err)
		}
	}
}

func TestValidateClientBound(t *testing.T) {
	t.Parallel()
	v := Load(t)
	const initOK = `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}`
	for _, tc := range []struct {
		name, frame, method string
		ok                  bool
	}{
		{"initialize ok", initOK, "initialize", true},
		{"initialize without serverInfo", `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{}}}`, "initialize", false},
		{"unknown method: envelope only", `{"jsonrpc":"2.0","id":"a","result":{"anything":[1,2]}}`, "vendor/thing", true},
		{"no method known: envelope only", `{"jsonrpc":"2.0","id":"a","result":{}}`, "", true},
		{"unknown method: bad envelope", `{"jsonrpc":"2.0","id":"a","result":[]}`, "vendor/thing", false},
		{"result without id", `{"jsonrpc":"2.0","result":{}}`, "ping", false},
		{"ping ok", `{"jsonrpc":"2.0","id":3,"result":{}}`, "ping", true},
		{"tools/call task", `{"jsonrpc":"2.0","id":3,"result":{"task":{"taskId":"t","status":"working","createdAt":"2025-11-25T10:30:00Z","lastUpdatedAt":"2025-11-25T10:30:00Z","ttl":null}}}`, "tools/call", true},
		{"tools/call task missing ttl", `{"jsonrpc":"2.0","id":3,"result":{"task":{"taskId":"t","status":"working","createdAt":"2025-11-25T10:30:00Z","lastUpdatedAt":"2025-11-25T10:30:00Z","ttlMs":5}}}`, "tools/call", false},
		{"tools/call result without content", `{"jsonrpc":"2.0","id":3,"result":{"isError":true}}`, "tools/call", false},
		{"error ok", `{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"bad"}}`, "tools/call", true},
		{"error with null id", `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`, "", true},
		{"error with null id, bad error", `{"jsonrpc":"2.0","id":null,"error":{"code":"x","message":"Parse error"}}`, "", false},
		{"error and result", `{"jsonrpc":"2.0","id":3,"error":{"code":1,"message":"m"},"result":{}}`, "", false},
		{"elicitation request", `{"jsonrpc":"2.0","id":"pc-1","method":"elicitation/create","params":{"mode":"form","message":"m","requestedSchema":{"type":"object","properties":{}}}}`, "", true},
		{"url elicitation without elicitationId", `{"jsonrpc":"2.0","id":"pc-1","method":"elicitation/create","params":{"mode":"url","message":"m","url":"https://x"}}`, "", false},
		{"progress notification", `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":0.5}}`, "", true},
		{"progress notification without progress", `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1}}`, "", false},
		{"unknown notification", `{"jsonrpc":"2.0","method":"notifications/vendor"}`, "", true},
		{"not a message", `{"jsonrpc":"2.0"}`, "", false},
		{"batch", `[]`, "", false},
	} {
		err := v.ValidateClientBound([]byte(tc.frame), tc.method)
		if (err == nil) != tc.ok {
			t.Errorf("%s: ok=%v, err=%v", tc.name, tc.ok, err)
		}
	}
}

func TestValidateUpstreamResult(t *testing.T) {
	t.Parallel()
	v := Load(t)
	for _, tc := range []struct {
		name, frame, method string
		ok                  bool
	}{
		{"call ok", `{"jsonrpc":"2.0","id":"u","result":{"resultType":"complete","content":[]}}`, "tools/call", true},
		{"call without resultType", `{"jsonrpc":"2.0","id":"u","result":{"content":[]}}`, "tools/call", false},
		{"input_required ok", `{"jsonrpc":"2.0","id":"u","result":{"resultType":"input_required","requestState":"s"}}`, "tools/call", true},
		{"input_required empty", `{"jsonrpc":"2.0","id":"u","result":{"resultType":"input_required"}}`, "tools/call", false},
		{"input_required on tools/list", `{"jsonrpc":"2.0","id":"u","result":{"resultType":"input_required","requestState":"s"}}`, "tools/list", false},
		{"task on prompts/get", `{"jsonrpc":"2.0","id":"u","result":{"resultType":"task"}}`, "prompts/get", false},
		{"unknown resultType", `{"jsonrpc":"2.0","id":"u","result":{"resultType":"weird","content":[]}}`, "tools/call", false},
		{"unknown method envelope", `{"jsonrpc":"2.0","id":"u","result":{"resultType":"weird"}}`, "vendor/x", true},
		{"ext task result", `{"jsonrpc":"2.0","id":"u","result":{"resultType":"complete","taskId":"t","status":"working","createdAt":"a","lastUpdatedAt":"b","ttlMs":null}}`, "tasks/get", true},
		{"ext task result with resultType task", `{"jsonrpc":"2.0","id":"u","result":{"resultType":"task","taskId":"t","status":"working","createdAt":"a","lastUpdatedAt":"b","ttlMs":null}}`, "tasks/get", false},
		{"null-id error", `{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request"},"id":null}`, "server/discover", true},
		{"ext tasks notification", `{"jsonrpc":"2.0","method":"notifications/tasks","params":{"taskId":"t","status":"working","createdAt":"a","lastUpdatedAt":"b","ttlMs":1000}}`, "", true},
	} {
		err := v.ValidateUpstreamResult([]byte(tc.frame), tc.method)
		if (err == nil) != tc.ok {
			t.Errorf("%s: ok=%v, err=%v", tc.name, tc.ok, err)
		}
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	v := Load(t)
	// Documents the schema quirk ValidateClientBound works around: the
	// schemas' RequestId does not admit null.
	nullID := []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`)
	for _, s := range []string{Schema2025, Schema2026} {
		if err := v.Validate(s, "JSONRPCErrorResponse", nullID); err == nil {
			t.Errorf("%s JSONRPCErrorResponse accepted id null; update the null-id handling docs", s)
		}
	}
	// Exact integers beyond float64 precision are kept (json.Number).
	if err := v.Validate(Schema2025, "RequestId", []byte(`123456789012345678901234567890`)); err != nil {
		t.Errorf("big integer id: %v", err)
	}
	err := v.Validate(Schema2025, "InitializeResult", []byte(`{"protocolVersion":"2025-11-25","capabilities":{}}`))
	if err == nil || !strings.Contains(err.Error(), "InitializeResult") || !strings.Contains(err.Error(), "2025-11-25") {
		t.Errorf("error should name the def and show the instance: %v", err)
	}
	long := `{"protocolVersion":"` + strings.Repeat("x", 5000) + `"}`
	if err := v.Validate(Schema2025, "InitializeResult", []byte(long)); err == nil || len(err.Error()) > 3000 {
		t.Errorf("long instance should be shortened: %d bytes", len(fmt.Sprint(err)))
	}
	if err := v.Validate(Schema2025, "NoSuchDef", []byte(`{}`)); err == nil {
		t.Error("unknown def accepted")
	}
	if err := v.Validate("1999-01-01", "Result", []byte(`{}`)); err == nil {
		t.Error("unknown schema accepted")
	}
	if err := v.Validate(Schema2025, "Result", []byte(`{} {}`)); err == nil {
		t.Error("trailing data accepted")
	}
}

func TestCheckLegacyClean(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, frame, method string
		ok                  bool
	}{
		{"clean", `{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}`, "tools/list", true},
		{"resultType", `{"jsonrpc":"2.0","id":1,"result":{"content":[],"resultType":"complete"}}`, "tools/call", false},
		{"cache fields", `{"jsonrpc":"2.0","id":1,"result":{"tools":[],"ttlMs":0}}`, "tools/list", false},
		{"ttlMs elsewhere is not a cache field", `{"jsonrpc":"2.0","id":1,"result":{"content":[],"ttlMs":0}}`, "tools/call", true},
		{"task ttlMs", `{"jsonrpc":"2.0","id":1,"result":{"taskId":"t","status":"working","ttl":null,"ttlMs":null}}`, "tasks/get", false},
		{"subscriptionId", `{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"u-1"}}}`, "", false},
	} {
		err := CheckLegacyClean([]byte(tc.frame), tc.method)
		if (err == nil) != tc.ok {
			t.Errorf("%s: ok=%v, err=%v", tc.name, tc.ok, err)
		}
	}
}

func TestResolvePointer(t *testing.T) {
	t.Parallel()
	doc := []byte(`{"a/b":{"m~n":[10, 20.50]},"cases":[{"x":1},{"x":2}],"o":{"k1":true,"k0":false}}`)
	got, err := ResolvePointer(doc, "/a~1b/m~0n/1")
	if err != nil || string(got) != "20.50" {
		t.Errorf("got %s, %v", got, err)
	}
	if got, _ := ResolvePointer(doc, ""); string(got) != string(doc) {
		t.Errorf("empty pointer: %s", got)
	}
	for _, bad := range []string{"/nope", "/cases/2", "/cases/01", "/cases/0/x/y", "cases"} {
		if _, err := ResolvePointer(doc, bad); err == nil {
			t.Errorf("%q resolved", bad)
		}
	}
	vals, ptrs, err := ResolvePointerAll(doc, "/cases/*/x")
	if err != nil || len(vals) != 2 || string(vals[1]) != "2" || ptrs[1] != "/cases/1/x" {
		t.Errorf("wildcard array: %s %v %v", vals, ptrs, err)
	}
	_, ptrs, err = ResolvePointerAll(doc, "/o/*")
	if err != nil || strings.Join(ptrs, ",") != "/o/k1,/o/k0" {
		t.Errorf("wildcard object keeps document order: %v %v", ptrs, err)
	}
}

// fakeTB records Skipf/Fatalf instead of stopping the test.
type fakeTB struct {
	testing.TB
	skipped, fatal string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Skipf(format string, args ...any) {
	f.skipped = fmt.Sprintf(format, args...)
}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.fatal = fmt.Sprintf(format, args...)
}

// Not parallel: uses t.Setenv.
func TestSpecDirMissing(t *testing.T) {
	missingDir := filepath.Join(t.TempDir(), "nope")
	t.Setenv(EnvSpecDir, missingDir)

	t.Setenv(envCI, "")
	f := &fakeTB{TB: t}
	SpecDir(f)
	if f.skipped == "" || f.fatal != "" || !strings.Contains(f.skipped, missingDir) || !strings.Contains(f.skipped, "schema validation skipped") {
		t.Errorf("local: skipped=%q fatal=%q", f.skipped, f.fatal)
	}

	t.Setenv(envCI, "true")
	f = &fakeTB{TB: t}
	SpecDir(f)
	if f.fatal == "" || f.skipped != "" || !strings.Contains(f.fatal, missingDir) {
		t.Errorf("CI: skipped=%q fatal=%q", f.skipped, f.fatal)
	}
}

func TestSpecDirEnv(t *testing.T) {
	dir := SpecDir(t)
	t.Setenv(EnvSpecDir, dir)
	if got := SpecDir(t); got != dir {
		t.Errorf("MCP_SPEC_DIR=%s gave %s", dir, got)
	}
	if got := Load(t).Dir(); got != dir {
		t.Errorf("Load dir %s, want %s", got, dir)
	}
}
