package e2e

import (
	"encoding/json"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/demo"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// Helpers of the tests of the 2026 bridge's requests (MRTR, listen, headers, timeouts), end to
// end on the built binary with the go-sdk legacy client and the raw NDJSON client. They are
// prefixed "er".

// erSubscriptionID is the gjson path of the 2026 subscription id in params.
const erSubscriptionID = `params._meta.io\.modelcontextprotocol/subscriptionId`

// erWait waits (bounded) for ch to close.
func erWait(t *testing.T, ch <-chan struct{}, desc string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(waitTimeout):
		t.Fatalf("%s did not happen within %v", desc, waitTimeout)
	}
}

// erInit runs the legacy handshake with the given client capabilities.
func erInit(p *rawProc, caps string) {
	p.t.Helper()
	params := `{"protocolVersion":"2025-11-25","capabilities":` + caps + `,"clientInfo":{"name":"e2e-era","version":"1"}}`
	resultOf(p.t, p.call(`"init"`, "initialize", params))
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// erJSONEqual compares two JSON texts by value.
func erJSONEqual(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// erKeys returns the sorted member names of a JSON object.
func erKeys(obj gjson.Result) []string {
	var ks []string
	obj.ForEach(func(k, _ gjson.Result) bool {
		ks = append(ks, k.String())
		return true
	})
	sort.Strings(ks)
	return ks
}

// erToolCalls returns the recorded tools/call exchanges for tool, in order.
func erToolCalls(up *upstream, tool string) []*exchange {
	var out []*exchange
	for _, ex := range up.requests("tools/call") {
		if gjson.GetBytes(ex.Body, "params.name").String() == tool {
			out = append(out, ex)
		}
	}
	return out
}

// erBaseParams is a tools/call body's params without the MRTR members.
func erBaseParams(body []byte) string {
	params := []byte(gjson.GetBytes(body, "params").Raw)
	for _, k := range []string{"inputResponses", "requestState"} {
		if b, err := sjson.DeleteBytes(params, k); err == nil {
			params = b
		}
	}
	return string(params)
}

// erCheckRetries checks the upstream side of one MRTR call of tool: want
// exchanges in all; each retry has a new upstream id, the same params as
// the first attempt, inputResponses for exactly the keys the previous answer
// asked for (none after a requestState-only round), and the previous
// answer's requestState byte for byte; the last answer is complete. It
// returns the exchanges.
func erCheckRetries(t *testing.T, up *upstream, tool string, want int) []*exchange {
	t.Helper()
	calls := erToolCalls(up, tool)
	if len(calls) != want {
		t.Errorf("upstream saw %d tools/call %s, want %d (the first attempt and one retry per round)", len(calls), tool, want)
		return calls
	}
	first := calls[0].Body
	for _, k := range []string{"inputResponses", "requestState"} {
		if gjson.GetBytes(first, "params."+k).Exists() {
			t.Errorf("the first %s attempt carries params.%s: %s", tool, k, shortBytes(first))
		}
	}
	base := erBaseParams(first)
	ids := map[string]bool{calls[0].ID: true}
	for i := 1; i < len(calls); i++ {
		prev, cur := calls[i-1], calls[i]
		if ids[cur.ID] {
			t.Errorf("%s retry %d reuses upstream id %s; every retry needs a new id", tool, i, cur.ID)
		}
		ids[cur.ID] = true
		if got := erBaseParams(cur.Body); !erJSONEqual(got, base) {
			t.Errorf("%s retry %d changed the params:\n first: %s\n retry: %s", tool, i, base, got)
		}
		_, _, resp := up.response(t, prev)
		res := gjson.GetBytes(resp, "result")
		if rt := res.Get("resultType").String(); rt != "input_required" {
			t.Errorf("%s attempt %d was answered %q, want input_required: %s", tool, i-1, rt, shortBytes(resp))
			continue
		}
		sent := res.Get("requestState").Raw
		got := gjson.GetBytes(cur.Body, "params.requestState").Raw
		if sent == "" || got != sent {
			t.Errorf("%s retry %d: requestState is not byte for byte the server's:\n server: %s\n retry:  %s", tool, i, sent, got)
		}
		if !strings.Contains(got, `\u00e9`) || !strings.Contains(got, `\/`) || !strings.Contains(got, `<&>`) {
			t.Errorf("%s retry %d: requestState %s lost the raw escapes the server wrote (%s)", tool, i, got, demo.RequestStateRawSuffix)
		}
		asked := erKeys(res.Get("inputRequests"))
		answered := erKeys(gjson.GetBytes(cur.Body, "params.inputResponses"))
		if !slices.Equal(asked, answered) {
			t.Errorf("%s retry %d: inputResponses keys %v, want the inputRequests keys %v", tool, i, answered, asked)
		}
	}
	_, _, last := up.response(t, calls[len(calls)-1])
	if rt := gjson.GetBytes(last, "result.resultType").String(); rt != "complete" {
		t.Errorf("the last %s attempt was answered %q, want complete: %s", tool, rt, shortBytes(last))
	}
	return calls
}

// erText is the text of a CallToolResult's first content block.
func erText(res *mcp.CallToolResult) string {
	if res == nil || len(res.Content) == 0 {
		return ""
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); ok {
		return tc.Text
	}
	return ""
}
