package rewrite_test

import (
	"errors"
	"strings"
	"testing"

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
			// ParseValid, the reading of a frame already validated, agrees.
			if _, verr := rewrite.ParseValid([]byte(tc.frame)); verr == nil || verr.Error() != err.Error() {
				t.Errorf("ParseValid: %v, Parse: %v", verr, err)
			}
		})
	}
}
