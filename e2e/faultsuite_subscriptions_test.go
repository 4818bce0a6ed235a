package e2e

import (
	"testing"

	"github.com/tidwall/gjson"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/demo"
)

// TestFaultSuiteSubscriptions: a client that subscribes to more resources
// than --max-subscriptions allows gets one error naming the bound and the
// flag for the one too many, and the process keeps serving; an unsubscribe
// frees a slot; the subscribed URIs share one listen stream at the server,
// and their updates reach the client, the unsubscribed one's do not.
func TestFaultSuiteSubscriptions(t *testing.T) {
	t.Parallel()
	lw := newERListenWatch(demo.Handler())
	up := newUpstream(t, lw)
	p := startProxy(t, []string{up.URL, "--max-subscriptions", "2"})
	erInit(p, `{}`)

	for _, uri := range []string{"demo://echo/a", "demo://echo/b"} {
		if res := resultOf(t, p.call(`"sub-`+uri+`"`, "resources/subscribe", `{"uri":"`+uri+`"}`)); res.Raw != "{}" {
			t.Fatalf("subscribe %s = %s, want {}", uri, res.Raw)
		}
	}
	e := fsCheckError(t, p.call(`"sub-c"`, "resources/subscribe", `{"uri":"demo://echo/c"}`), -32603,
		"demo://echo/c", "2 resource subscriptions", "--max-subscriptions", "resources/unsubscribe")
	if e.Get("data.maxSubscriptions").Int() != 2 {
		t.Errorf("error data %s, want maxSubscriptions 2", e.Get("data").Raw)
	}
	resultOf(t, p.call(`"ping-after-cap"`, "ping", ""))

	resultOf(t, p.call(`"unsub-a"`, "resources/unsubscribe", `{"uri":"demo://echo/a"}`))
	if res := resultOf(t, p.call(`"sub-c-again"`, "resources/subscribe", `{"uri":"demo://echo/c"}`)); res.Raw != "{}" {
		t.Fatalf("subscribe demo://echo/c after an unsubscribe = %s, want {}", res.Raw)
	}
	// The last resource stream asks for b and c together; a and b had one
	// stream between them too.
	last := lw.wait(t, "a listen for demo://echo/b and demo://echo/c", func(l *erListen) bool {
		return l.filter.Get("resourceSubscriptions").Raw == `["demo://echo/b","demo://echo/c"]`
	})
	erWait(t, last.acked, "the acknowledgement of the b and c stream")
	lw.wait(t, "a listen for demo://echo/a and demo://echo/b", func(l *erListen) bool {
		return l.filter.Get("resourceSubscriptions").Raw == `["demo://echo/a","demo://echo/b"]`
	})

	mark := p.mark()
	for _, uri := range []string{"demo://echo/a", "demo://echo/b", "demo://echo/c"} {
		resultOf(t, p.call(`"touch-`+uri+`"`, "tools/call", `{"name":"touch","arguments":{"what":"resource","uri":"`+uri+`"}}`))
	}
	for _, uri := range []string{"demo://echo/b", "demo://echo/c"} {
		p.waitLine(mark, "resources/updated for "+uri, func(_ int, l outLine) bool {
			return l.method == "notifications/resources/updated" && gjson.GetBytes(l.raw, "params.uri").String() == uri
		})
	}
	fsFinish(t, p)
	for _, l := range p.all() {
		if gjson.GetBytes(l, "method").String() == "notifications/resources/updated" && gjson.GetBytes(l, "params.uri").String() == "demo://echo/a" {
			t.Errorf("resources/updated reached the client for demo://echo/a, unsubscribed before it was touched: %s", l)
		}
	}
}
