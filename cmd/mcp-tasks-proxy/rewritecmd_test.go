package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestRewriteFollowsTheSessionsRules: rewrite shows what the session does,
// from the same method table: a request without the param its Mcp-Name
// needs is refused as the session refuses it, and a task or input_required
// answer is only followed for a method that may give one.
func TestRewriteFollowsTheSessionsRules(t *testing.T) {
	tests := []struct {
		args  []string
		stdin string
		want  string
	}{
		{[]string{"--up"}, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"arguments":{}}}`,
			`→ client (error): {"jsonrpc":"2.0","id":4,"error":{"code":-32602,"message":"Invalid params: tools/call needs params.name, a string"}}`},
		{[]string{"--up"}, `{"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri":7}}`,
			`"message":"Invalid params: resources/read needs params.uri, a string"`},
		{[]string{"--up"}, `{"jsonrpc":"2.0","id":6,"method":"prompts/list","params":{"task":{}}}`, `"task":{}`},
		{[]string{"--up"}, `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"x","task":{}}}`, `"name":"x"}}`},
		{[]string{"--down", "--method", "prompts/get"}, `{"jsonrpc":"2.0","id":1,"result":{"resultType":"task","taskId":"t"}}`,
			`invalid upstream result: resultType "task"`},
		{[]string{"--down", "--method", "tools/list"}, `{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required"}}`,
			`invalid upstream result: resultType "input_required"`},
		{[]string{"--down", "--method", "prompts/get"}, `{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required"}}`,
			`the proxy asks the client`},
		{[]string{"--down"}, `{"jsonrpc":"2.0","id":1,"result":{"resultType":"task","taskId":"t"}}`, `the proxy follows this task`},
	}
	for _, tt := range tests {
		var out, errOut bytes.Buffer
		if code := rewriteCommand(tt.args, strings.NewReader(tt.stdin), &out, &errOut, env()); code != 0 {
			t.Fatalf("%v: exit %d: %s", tt.args, code, errOut.String())
		}
		if !strings.Contains(out.String(), tt.want) {
			t.Errorf("%v < %s:\n%s\nwant it to contain %s", tt.args, tt.stdin, out.String(), tt.want)
		}
	}
}
