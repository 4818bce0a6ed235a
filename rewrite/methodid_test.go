package rewrite

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzMethodID: the fast scan finds what gjson finds with the same rule,
// for every valid object it reads, and MethodID never panics.
func FuzzMethodID(f *testing.F) {
	for _, s := range []string{`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"id":1}}`,
		`{"id":3,"result":[1],"method":"late"}`, ` { "a" : [ "}" , {"b":"\""} ] , "method" : "m\u0041" , "id" : -1.5e3 } `,
		`{"error":{"code":1},"method":"m","id":5}`, `{"id":null,"id":2}`, `{"m\u0065thod":"x","id":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		MethodID(frame)
		m, id, ok := scanMethodID(view(frame))
		if !ok || !json.Valid(frame) {
			return
		}
		wm, wid := methodIDSlow(frame)
		if gm, gid := bytesOf(frame, m), bytesOf(frame, id); !bytes.Equal(gm, wm) || !bytes.Equal(gid, wid) {
			t.Errorf("%s: scan %q %q, gjson %q %q", frame, gm, gid, wm, wid)
		}
	})
}
