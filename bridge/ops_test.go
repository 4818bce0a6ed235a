package bridge

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/trace"
)

// TestTraceOpOnEveryRecordOfARequest: the progress and log notifications a
// call streams, both as they come from the server and as they go to the
// client, and the client's cancel of a request, carry that request's op.
func TestTraceOpOnEveryRecordOfARequest(t *testing.T) {
	u := newUpstream(t)
	var buf syncBuf
	tw := trace.New(&buf, trace.Options{})
	h := initialized(t, u, Config{Observer: tw})
	arrived := make(chan struct{}, 1)
	u.setHandler(func(w http.ResponseWriter, r *http.Request, body string) {
		id := gjson.Get(body, "id").Raw
		if gjson.Get(body, "params.name").Str == "hang" {
			arrived <- struct{}{}
			<-r.Context().Done()
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"pt\",\"progress\":1}}\n\n")
		fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"working\"}}\n\n")
		fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"resultType\":\"complete\",\"content\":[]}}\n\n", id)
	})
	h.send(`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"x","_meta":{"progressToken":"pt"}}}`)
	for {
		if f := h.next(); gjson.Get(f, "id").Str == "a" {
			break
		}
	}
	h.send(`{"jsonrpc":"2.0","id":"b","method":"tools/call","params":{"name":"hang"}}`)
	<-arrived
	h.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"b"}}`)
	h.stop()
	if dropped, err := tw.Close(); dropped != 0 || err != nil {
		t.Fatalf("Close: %d dropped, %v", dropped, err)
	}
	ops := map[string]string{} // the client's id -> its op
	var recs []gjson.Result
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		r := gjson.Parse(line)
		recs = append(recs, r)
		if r.Get("dir").Str == "client->proxy" && r.Get("method").Str == "tools/call" {
			ops[r.Get("id").Str] = r.Get("op").Str
		}
	}
	if ops["a"] == "" || ops["b"] == "" || ops["a"] == ops["b"] {
		t.Fatalf("the calls' ops: %v\n%s", ops, buf.String())
	}
	want := map[string]int{}
	for _, r := range recs {
		var key, op string
		switch m := r.Get("method").Str; {
		case m == "notifications/progress" || m == "notifications/message":
			key, op = r.Get("dir").Str+" "+m, ops["a"]
		case m == "notifications/cancelled" && r.Get("dir").Str == "client->proxy":
			key, op = "cancel", ops["b"]
		default:
			continue
		}
		want[key]++
		if r.Get("op").Str != op {
			t.Errorf("%s record with op %q, want %q: %s", key, r.Get("op").Str, op, r.Raw)
		}
	}
	for _, k := range []string{"server->proxy notifications/progress", "proxy->client notifications/progress",
		"server->proxy notifications/message", "proxy->client notifications/message", "cancel"} {
		if want[k] == 0 {
			t.Errorf("no %s record:\n%s", k, buf.String())
		}
	}
}
