package reverse

import (
	"context"
	"sync"
	"time"

	"github.com/tidwall/gjson"
	"go.uber.org/zap"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/bridge/internal/link"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/protocol"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
)

// listens are the modern client's subscriptions/listen requests, served
// from the 2025 session, and the resources subscribed upstream for them.
type listens struct {
	r *reverse

	mu   sync.Mutex
	open map[*listen]bool
	subs map[string]int // resources subscribed upstream, by URI: how many listens want each
}

// listen is one subscriptions/listen of the modern client, served from the
// 2025 session: its list_changed notifications, and resources/updated for
// the URIs subscribed in its name.
type listen struct {
	id    []byte // the client's listen id: every notification's subscriptionId
	op    string
	kinds map[string]bool // the notification methods it gets
	uris  map[string]bool
}

// The listen filter's list members, the capability each needs, and the
// notification each brings.
var listKinds = []struct{ filter, capability, method string }{
	{"toolsListChanged", "tools.listChanged", "notifications/tools/list_changed"},
	{"promptsListChanged", "prompts.listChanged", "notifications/prompts/list_changed"},
	{"resourcesListChanged", "resources.listChanged", "notifications/resources/list_changed"},
}

// unsubscribeBound bounds the resources/unsubscribe of a listen's end.
const unsubscribeBound = 5 * time.Second

// listen acknowledges what the 2025 server can honour of the filter,
// subscribing to its resources, and then delivers until the client
// cancels it (no answer: the client ended it).
func (ls *listens) listen(ctx context.Context, c *link.Call, f *rewrite.Frame) link.Outcome {
	r := ls.r
	want := f.Params.Get("notifications")
	l := &listen{id: c.ID, op: c.Op, kinds: map[string]bool{}, uris: map[string]bool{}}
	ack := []byte(`{`)
	for _, k := range listKinds {
		if want.Get(k.filter).Bool() && r.serverCaps.Get(k.capability).Bool() {
			l.kinds[k.method] = true
			ack = append(append(ack, rewrite.AppendString(nil, k.filter)...), ":true,"...)
		}
	}
	if uris := want.Get("resourceSubscriptions"); uris.IsArray() && r.serverCaps.Get("resources.subscribe").Bool() {
		var accepted []byte
		for _, u := range uris.Array() {
			if u.Type == gjson.String && ls.subscribe(ctx, c, u.Str) {
				l.uris[u.Str] = true
				accepted = append(append(accepted, ','), u.Raw...)
			}
		}
		if accepted != nil {
			l.kinds["notifications/resources/updated"] = true
			ack = append(append(append(ack, `"resourceSubscriptions":[`...), accepted[1:]...), "],"...)
		}
	}
	if len(ack) > 1 {
		ack = ack[:len(ack)-1]
	}
	params := append(append(append(rewrite.AppendString([]byte(`{"_meta":{`), protocol.MetaSubscriptionID), ':'), c.ID...), `},"notifications":`...)
	r.env.Send(rewrite.NotificationFrame("notifications/subscriptions/acknowledged", append(append(params, ack...), "}}"...)), c.Op, nil)
	ls.mu.Lock()
	ls.open[l] = true
	ls.mu.Unlock()
	<-ctx.Done()
	ls.mu.Lock()
	delete(ls.open, l)
	ls.mu.Unlock()
	if r.env.Ctx.Err() == nil {
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), unsubscribeBound)
		defer cancel()
		for u := range l.uris {
			ls.unsubscribe(uctx, c, u)
		}
	}
	return link.Outcome{}
}

// subscribe subscribes to uri upstream for a listen, unless another listen
// has already, and reports whether the server accepted it.
func (ls *listens) subscribe(ctx context.Context, c *link.Call, uri string) bool {
	ls.mu.Lock()
	n := ls.subs[uri]
	ls.subs[uri] = n + 1
	ls.mu.Unlock()
	if n > 0 || ls.own(ctx, c, "resources/subscribe", uri) {
		return true
	}
	ls.mu.Lock()
	if ls.subs[uri]--; ls.subs[uri] == 0 {
		delete(ls.subs, uri)
	}
	ls.mu.Unlock()
	return false
}

// unsubscribe ends a listen's subscription to uri, upstream once no listen
// wants it.
func (ls *listens) unsubscribe(ctx context.Context, c *link.Call, uri string) {
	ls.mu.Lock()
	ls.subs[uri]--
	last := ls.subs[uri] == 0
	if last {
		delete(ls.subs, uri)
	}
	ls.mu.Unlock()
	if last {
		ls.own(ctx, c, "resources/unsubscribe", uri)
	}
}

// own makes a resources/(un)subscribe request of the proxy's own, and
// reports whether the server accepted it.
func (ls *listens) own(ctx context.Context, c *link.Call, method, uri string) bool {
	ans := ls.r.ownCall(ctx, c, method, append(rewrite.AppendString([]byte(`{"uri":`), uri), '}'))
	if ans == nil || rewrite.IsError(ans) {
		ls.r.env.Warn("the 2025 server refused a subscription of a 2026-07-28 client's listen", zap.String("method", method), zap.String("uri", uri), zap.ByteString("answer", ls.r.env.LogFrame(ans)))
		return false
	}
	return true
}

// notifyListens delivers a list change or resource update to every listen
// that asked for it.
func (ls *listens) notify(m *rewrite.Frame) {
	uri := m.Params.Get("uri")
	ls.mu.Lock()
	defer ls.mu.Unlock()
	for l := range ls.open {
		if l.kinds[m.Method] && (m.Method != "notifications/resources/updated" || l.uris[uri.Str]) {
			ls.r.env.Send(rewrite.ListenNotice(m.Method, uri, l.id), l.op, nil)
		}
	}
}
