package rewrite

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/tidwall/gjson"
)

// FuzzMethodID: MethodID finds what gjson finds with the same rule, for
// every valid object, and never panics.
func FuzzMethodID(f *testing.F) {
	for _, s := range []string{`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"id":1}}`,
		`{"id":3,"result":[1],"method":"late"}`, ` { "a" : [ "}" , {"b":"\""} ] , "method" : "m\u0041" , "id" : -1.5e3 } `,
		`{"error":{"code":1},"method":"m","id":5}`, `{"id":null,"id":2}`, `{"m\u0065thod":"x","id":1}`,
		`{"jsonrpc":"2.0","id":"a\"b","result":{"method":"x"}}`, `{"jsonrpc":"2.0","id":-1.5e3,"method":"m\u0041","id":2}`,
		`{"jsonrpc":"2.0","id":{"x":[1]},"error":{}}`, `{"jsonrpc":"2.0","id":1,"params":{},"method":"late"}`,
		`{"jsonrpc":"2.0","id":1,"method":"m"`, `{"jsonrpc":"2.0","id":1 ,"method":"m"}`,
		`{"jsonrpc":"2.0","id":1,"error":{}}`, `{"jsonrpc":"2.0","id":1,"result":1}`, `{"jsonrpc":"2.0","id":1,"method":1}`,
		`{"jsonrpc":"2.0","id":1,"methods":"m","method":"n"}`, `{"jsonrpc":"2.0","id":"x","result":[]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		gm, gid := MethodID(frame)
		if !json.Valid(frame) {
			return
		}
		if wm, wid := methodIDSlow(frame); !bytes.Equal(gm, wm) || !bytes.Equal(gid, wid) {
			t.Errorf("%s: scan %q %q, gjson %q %q", frame, gm, gid, wm, wid)
		}
	})
}

// FuzzIsError: IsError says what gjson says of a valid object with one of
// "result" and "error", and never panics.
func FuzzIsError(f *testing.F) {
	for _, s := range []string{`{"jsonrpc":"2.0","id":1,"result":{"error":1}}`, `{"id":"e","error":{"code":1,"message":"m"}}`,
		` { "id" : [ "}" ] , "error" : null } `, `{"re\u0073ult":1,"error":{}}`, `[1]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		got := IsError(frame)
		if !json.Valid(frame) {
			return
		}
		r := gjson.GetManyBytes(frame, "result", "error")
		if r[0].Exists() == r[1].Exists() {
			return // both or neither: not a response
		}
		if want := r[1].Exists(); got != want {
			t.Errorf("%s: IsError %v, want %v", frame, got, want)
		}
	})
}
