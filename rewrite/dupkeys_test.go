package rewrite_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
)

// TestParseDuplicateKeys: a member the proxy reads that a frame spells
// twice, or in another case, is refused with the code and the id that the
// answer carries; what the proxy does not read is left alone.
func TestParseDuplicateKeys(t *testing.T) {
	const call = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":`
	tests := []struct {
		name   string
		frame  string
		in     string // the object that holds the member ("" for the message)
		member string // the member refused; "" for no error
		key    string // the spelling reported; member when ""
		code   int
		id     string // the raw id the answer carries ("" for null)
		kind   rewrite.Kind
	}{
		{name: "clean call", frame: call + `{"name":"echo","arguments":{"text":"hi"},"_meta":{"progressToken":1},"task":{"ttl":60000}}}`},
		{name: "clean response", frame: `{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`},
		{name: "duplicates the proxy does not read", frame: call + `{"name":"echo","arguments":{"a":1,"a":2,"Name":3},"x":1,"x":2,"_meta":{"k":1,"k":2}}}`},
		{name: "duplicates inside a result", frame: `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","resultType":"task"}}`},
		{name: "a longer key that merely starts like one", frame: call + `{"name":"echo","names":1,"_metadata":2}}`},

		{name: "params.name twice", frame: call + `{"name":"slow","name":"echo"}}`, in: "params", member: "name", code: -32602, id: "7", kind: rewrite.KindRequest},
		{name: "params.name in another case", frame: call + `{"name":"slow","Name":"echo"}}`, in: "params", member: "name", key: "Name", code: -32602, id: "7", kind: rewrite.KindRequest},
		{name: "params.name escaped", frame: call + `{"name":"slow","n\u0061me":"echo"}}`, in: "params", member: "name", code: -32602, id: "7", kind: rewrite.KindRequest},
		{name: "params.taskId with a long s", frame: `{"jsonrpc":"2.0","id":"a","method":"tasks/get","params":{"taskId":"t1","taſkId":"t2"}}`, in: "params", member: "taskId", key: "taſkId", code: -32602, id: `"a"`, kind: rewrite.KindRequest},
		{name: "params.task with a Kelvin sign", frame: call + `{"name":"echo","tas\u212a":{}}}`, in: "params", member: "task", key: "tas\u212a", code: -32602, id: "7", kind: rewrite.KindRequest},
		{name: "params.uri twice", frame: `{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"a:1","uri":"a:2"}}`, in: "params", member: "uri", code: -32602, id: "2", kind: rewrite.KindRequest},
		{name: "params.cursor twice", frame: `{"jsonrpc":"2.0","id":2,"method":"tasks/list","params":{"cursor":"a","cursor":"b"}}`, in: "params", member: "cursor", code: -32602, id: "2", kind: rewrite.KindRequest},
		{name: "cancelled requestId twice", frame: `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"requestId":2}}`, in: "params", member: "requestId", code: -32602, kind: rewrite.KindNotification},
		{name: "progressToken twice", frame: call + `{"name":"echo","_meta":{"progressToken":1,"progressToken":2}}}`, in: "params._meta", member: "progressToken", code: -32602, id: "7", kind: rewrite.KindRequest},
		{name: "progressToken in another case", frame: call + `{"name":"echo","_meta":{"PROGRESSTOKEN":1}}}`, in: "params._meta", member: "progressToken", key: "PROGRESSTOKEN", code: -32602, id: "7", kind: rewrite.KindRequest},
		{name: "related-task twice", frame: call + `{"name":"echo","_meta":{"io.modelcontextprotocol/related-task":{},"io.modelcontextprotocol/related-task":{}}}}`, in: "params._meta", member: "io.modelcontextprotocol/related-task", code: -32602, id: "7", kind: rewrite.KindRequest},
		{name: "_meta twice", frame: call + `{"name":"echo","_meta":{},"_meta":{"progressToken":2}}}`, in: "params", member: "_meta", code: -32602, id: "7", kind: rewrite.KindRequest},
		{name: "task.ttl twice", frame: call + `{"name":"echo","task":{"ttl":1,"ttl":2}}}`, in: "params.task", member: "ttl", code: -32602, id: "7", kind: rewrite.KindRequest},
		{name: "elicitation capability twice", frame: `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"capabilities":{"elicitation":{},"elicitation":{"url":{}}}}}`, in: "params.capabilities", member: "elicitation", code: -32602, id: "0", kind: rewrite.KindRequest},
		{name: "elicitation.url twice", frame: `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"capabilities":{"elicitation":{"url":{},"url":null}}}}`, in: "params.capabilities.elicitation", member: "url", code: -32602, id: "0", kind: rewrite.KindRequest},

		{name: "id twice", frame: `{"jsonrpc":"2.0","id":"38","id":38,"method":"tools/call","params":{"name":"echo"}}`, member: "id", code: -32600, kind: rewrite.KindRequest},
		{name: "id in another case", frame: `{"jsonrpc":"2.0","id":1,"ID":2,"method":"ping"}`, member: "id", key: "ID", code: -32600, kind: rewrite.KindRequest},
		{name: "only an id in another case", frame: `{"jsonrpc":"2.0","Id":2,"method":"tools/call","params":{"name":"echo"}}`, member: "id", key: "Id", code: -32600, kind: rewrite.KindRequest},
		{name: "method twice", frame: `{"jsonrpc":"2.0","id":3,"method":"ping","method":"tools/call"}`, member: "method", code: -32600, id: "3", kind: rewrite.KindRequest},
		{name: "method twice in a notification", frame: `{"jsonrpc":"2.0","method":"notifications/initialized","method":"x"}`, member: "method", code: -32600, kind: rewrite.KindNotification},
		{name: "params twice", frame: `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"slow"},"params":{"name":"echo"}}`, member: "params", code: -32600, id: "3", kind: rewrite.KindRequest},
		{name: "params in another case", frame: `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"slow"},"Params":{"name":"echo"}}`, member: "params", key: "Params", code: -32600, id: "3", kind: rewrite.KindRequest},
		{name: "jsonrpc twice", frame: `{"jsonrpc":"2.0","jsonrpc":"1.0","id":3,"method":"ping"}`, member: "jsonrpc", code: -32600, id: "3", kind: rewrite.KindRequest},
		{name: "result twice", frame: `{"jsonrpc":"2.0","id":4,"result":{},"result":{"x":1}}`, member: "result", code: -32600, id: "4"},
		{name: "error and Error", frame: `{"jsonrpc":"2.0","id":4,"error":{"code":1,"message":"m"},"Error":{}}`, member: "error", key: "Error", code: -32600, id: "4"},
		{name: "id twice in a response", frame: `{"jsonrpc":"2.0","id":4,"id":5,"result":{}}`, member: "id", code: -32600},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := rewrite.Parse([]byte(tc.frame))
			if tc.member == "" {
				if err != nil {
					t.Fatalf("Parse(%s): %v, want no error", tc.frame, err)
				}
				return
			}
			var d *rewrite.DuplicateKeyError
			if !errors.As(err, &d) || !errors.Is(err, rewrite.ErrDuplicateKey) {
				t.Fatalf("Parse(%s): %v, want a DuplicateKeyError", tc.frame, err)
			}
			in, name := tc.in, tc.member
			key := tc.key
			if key == "" {
				key = name
			}
			if d.In != in || d.Name != name || d.Key != key {
				t.Errorf("error at %q.%q spelled %q, want %q.%q spelled %q", d.In, d.Name, d.Key, in, name, key)
			}
			if c := rewrite.Code(err); c != tc.code {
				t.Errorf("Code = %d, want %d", c, tc.code)
			}
			if f.ID.Raw != tc.id {
				t.Errorf("id %q, want %q", f.ID.Raw, tc.id)
			}
			if f.Kind != tc.kind {
				t.Errorf("kind %v, want %v", f.Kind, tc.kind)
			}
			if msg := err.Error(); !strings.Contains(msg, `"`+key+`"`) || !strings.Contains(msg, "refused") {
				t.Errorf("message %q does not name %q and say it is refused", msg, key)
			}
		})
	}
}

// FuzzDuplicateKeys holds Parse's refusal of duplicated members to a slow
// reference: encoding/json's token stream, which unescapes every key and
// matches names as Go's decoder does (strings.EqualFold), over a list of
// the members the proxy reads written out here on its own. The fuzzer's
// frame is checked as it is, and with a member named key put at the front
// of one of the objects the proxy reads (where), so that most inputs
// carry a duplicate or a near miss.
func FuzzDuplicateKeys(f *testing.F) {
	for _, fr := range goldenFrames(f) {
		f.Add(fr, "name", uint8(1))
	}
	seeds := []struct {
		frame, key string
		where      uint8
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","arguments":{"text":"x"}}}`, "name", 1},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow"}}`, "Name", 1},
		{`{"jsonrpc":"2.0","id":"38","method":"tools/call","params":{"name":"echo"}}`, "id", 0},
		{`{"jsonrpc":"2.0","id":"38","method":"ping"}`, "ID", 0},
		{`{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"taskId":"t"}}`, "taſkId", 1},
		{`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"e","_meta":{"progressToken":1}}}`, "progressToken", 2},
		{`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"e","_meta":{"progressToken":1}}}`, "io.modelcontextprotocol/related-task", 2},
		{`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"e","task":{"ttl":1}}}`, "ttl", 3},
		{`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"capabilities":{"elicitation":{"form":{}}}}}`, "elicitation", 4},
		{`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"capabilities":{"elicitation":{"form":{}}}}}`, "URL", 5},
		{`{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`, "result", 0},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"n\u0061me":"a","arguments":{"name":1,"name":2}}}`, "nam\u212a", 1},
	}
	for _, s := range seeds {
		f.Add([]byte(s.frame), s.key, s.where)
	}
	f.Fuzz(func(t *testing.T, frame []byte, key string, where uint8) {
		in := rewrite.TrimFrame(frame)
		checkDuplicates(t, in)
		if m := withMember(in, key, where); m != nil {
			checkDuplicates(t, m)
		}
	})
}

// checkDuplicates compares Parse with the reference on one frame.
func checkDuplicates(t *testing.T, in []byte) {
	fr, err := rewrite.Parse(in)
	if errors.Is(err, rewrite.ErrParse) || errors.Is(err, rewrite.ErrBatch) || errors.Is(err, rewrite.ErrNotObject) {
		return
	}
	found, ok := refDuplicates(in)
	if !ok {
		t.Fatalf("encoding/json cannot read %q, which Parse read (%v)", in, err)
	}
	var d *rewrite.DuplicateKeyError
	switch {
	case errors.As(err, &d):
		at := d.Name
		if d.In != "" {
			at = d.In + "." + d.Name
		}
		if !found[at] {
			t.Fatalf("Parse(%q) refused %s (%v); the reference finds %v", in, at, err, found)
		}
		if d.Name == "id" && fr.ID.Exists() {
			t.Fatalf("Parse(%q) kept the id %s of a message with two", in, fr.ID.Raw)
		}
	case err == nil:
		if len(found) > 0 {
			t.Fatalf("Parse(%q) accepted a message the reference refuses at %v", in, found)
		}
	default:
		// Another error: it comes after the message's own members were
		// found unambiguous.
		for at := range found {
			if !strings.Contains(at, ".") {
				t.Fatalf("Parse(%q) = %v, but the reference refuses %s first", in, err, at)
			}
		}
	}
}

// refWatch names the members read in an object, each with the watch of
// its value (nil: not read inside).
type refWatch map[string]refWatch

var refMeta = refWatch{"progressToken": nil}

func init() {
	for _, k := range []string{"protocolVersion", "clientCapabilities", "clientInfo", "logLevel", "serverInfo", "subscriptionId", "related-task"} {
		refMeta["io.modelcontextprotocol/"+k] = nil
	}
}

var refTop = refWatch{"jsonrpc": nil, "id": nil, "method": nil, "result": nil, "error": nil, "params": {
	"name": nil, "uri": nil, "taskId": nil, "cursor": nil, "requestId": nil, "arguments": nil,
	"protocolVersion": nil, "clientInfo": nil, "level": nil, "inputResponses": nil, "requestState": nil,
	"progressToken": nil, "progress": nil,
	"_meta": refMeta,
	"task":  {"ttl": nil, "ttlSeconds": nil},
	"capabilities": {"sampling": nil, "roots": nil, "tasks": nil, "extensions": nil, "experimental": nil,
		"elicitation": {"form": nil, "url": nil}},
}}

// refDuplicates is every member the reference refuses, by path ("id",
// "params._meta.progressToken"); ok is false when encoding/json cannot
// read in.
func refDuplicates(in []byte) (found map[string]bool, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(in))
	dec.UseNumber()
	found = map[string]bool{}
	if err := refValue(dec, refTop, "", found); err != nil {
		return nil, false
	}
	return found, true
}

func refValue(dec *json.Decoder, w refWatch, path string, found map[string]bool) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	d, isDelim := tok.(json.Delim)
	if !isDelim {
		return nil
	}
	seen := map[string]bool{}
	for dec.More() {
		var sub refWatch
		at := ""
		if d == '{' {
			kt, err := dec.Token()
			if err != nil {
				return err
			}
			sub, at = w.member(kt.(string), path, seen, found)
		}
		if err := refValue(dec, sub, at, found); err != nil {
			return err
		}
	}
	_, err = dec.Token() // the closing delimiter
	return err
}

// member notes the member key of the object at path that w watches (seen:
// the names met so far in it) and returns the watch and path of its
// value; a key that is no name w reads gets none.
func (w refWatch) member(key, path string, seen, found map[string]bool) (refWatch, string) {
	for name, sub := range w {
		if !strings.EqualFold(key, name) {
			continue
		}
		at := name
		if path != "" {
			at = path + "." + name
		}
		if key != name || seen[name] {
			found[at] = true
		}
		seen[name] = true
		return sub, at
	}
	return nil, ""
}

// withMember is in with `"key":0` put first in the object where picks (0
// the message, 1 params, 2 params._meta, 3 params.task, 4
// params.capabilities, 5 params.capabilities.elicitation), or nil when in
// has no such object.
func withMember(in []byte, key string, where uint8) []byte {
	paths := []string{"", "params", "params._meta", "params.task", "params.capabilities", "params.capabilities.elicitation"}
	path := paths[int(where)%len(paths)]
	obj := gjson.ParseBytes(in)
	if path != "" {
		obj = obj.Get(path)
	}
	if !obj.IsObject() || !gjson.ValidBytes(in) {
		return nil
	}
	at := obj.Index + 1
	if path == "" {
		at = bytes.IndexByte(in, '{') + 1
	}
	member, _ := json.Marshal(key)
	member = append(member, `:0`...)
	if strings.TrimSpace(obj.Raw[1:]) != "}" {
		member = append(member, ',')
	}
	out := append([]byte(nil), in[:at]...)
	out = append(out, member...)
	return append(out, in[at:]...)
}
