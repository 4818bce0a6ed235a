package bridge

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/routing"
)

// subServer is a 2026 server with resource subscriptions: each
// subscriptions/listen is acknowledged with the URIs it asks for (but
// those in reject) and held open; touch sends resources/updated of a URI
// on every open stream that asks for it, as a server does.
type subServer struct {
	*httptest.Server
	mu     sync.Mutex
	open   map[*subStream]bool
	total  int  // listen requests received
	refuse bool // answer new listen requests with HTTP 500
	reject map[string]bool
	// hold: a listen that asks for one of these URIs is never
	// acknowledged; held counts them.
	hold map[string]bool
	held int
}

// subStream is one open listen stream at the server.
type subStream struct {
	id     string // the listen request's raw id
	uris   []string
	events chan string
}

const subDiscover = `{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"resources":{"subscribe":true}},"ttlMs":0,"cacheScope":"public"}`

func newSubServer(t *testing.T) *subServer {
	u := &subServer{open: map[*subStream]bool{}, reject: map[string]bool{}, hold: map[string]bool{}}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		id := gjson.GetBytes(b, "id").Raw
		switch gjson.GetBytes(b, "method").Str {
		case "server/discover":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, id, subDiscover)
		case "subscriptions/listen":
			u.listen(w, r, id, gjson.GetBytes(b, "params.notifications.resourceSubscriptions"))
		default:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"Method not found"}}`, id)
		}
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *subServer) listen(w http.ResponseWriter, r *http.Request, id string, uris gjson.Result) {
	st := &subStream{id: id, events: make(chan string, 256)}
	var acked []string
	u.mu.Lock()
	u.total++
	if u.refuse {
		u.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32603,"message":"no more streams"}}`, id)
		return
	}
	hold := false
	for _, x := range uris.Array() {
		st.uris = append(st.uris, x.Str)
		if !u.reject[x.Str] {
			acked = append(acked, fmt.Sprintf("%q", x.Str))
		}
		hold = hold || u.hold[x.Str]
	}
	if hold {
		u.held++
		u.mu.Unlock()
		<-r.Context().Done()
		return
	}
	u.open[st] = true
	u.mu.Unlock()
	defer func() {
		u.mu.Lock()
		delete(u.open, st)
		u.mu.Unlock()
	}()
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/subscriptions/acknowledged\",\"params\":{\"_meta\":{\"io.modelcontextprotocol/subscriptionId\":%s},\"notifications\":{\"resourceSubscriptions\":[%s]}}}\n\n",
		id, strings.Join(acked, ","))
	w.(http.Flusher).Flush()
	for {
		select {
		case e := <-st.events:
			fmt.Fprintf(w, "data: %s\n\n", e)
			w.(http.Flusher).Flush()
		case <-r.Context().Done():
			return
		}
	}
}

// touch sends resources/updated of uri on every open stream that asks for
// it, and reports on how many.
func (u *subServer) touch(uri string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	n := 0
	for st := range u.open {
		if slices.Contains(st.uris, uri) {
			st.events <- fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":%s},"uri":%q}}`, st.id, uri)
			n++
		}
	}
	return n
}

// streams are the URI sets of the open streams, sorted.
func (u *subServer) streams() [][]string {
	u.mu.Lock()
	defer u.mu.Unlock()
	var out [][]string
	for st := range u.open {
		out = append(out, slices.Sorted(slices.Values(st.uris)))
	}
	slices.SortFunc(out, slices.Compare)
	return out
}

// until waits, within the tests' bound, for the open streams to satisfy
// ok, and fails with what they were.
func (u *subServer) until(t *testing.T, desc string, ok func([][]string) bool) [][]string {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		got := u.streams()
		if ok(got) {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server's open listen streams are %v, not %s, after %v", got, desc, wait)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// oneStream is a predicate: exactly one open stream, asking for uris.
func oneStream(uris []string) func([][]string) bool {
	want := slices.Sorted(slices.Values(uris))
	return func(got [][]string) bool { return len(got) == 1 && slices.Equal(got[0], want) }
}

// listenCounter is the session's HTTP transport, counting the listen
// streams the proxy holds open: from the request until it closes the
// response body (or the request fails).
type listenCounter struct {
	base      *http.Transport
	mu        sync.Mutex
	open, max int
}

func (c *listenCounter) add(n int) {
	c.mu.Lock()
	c.open += n
	c.max = max(c.max, c.open)
	c.mu.Unlock()
}

func (c *listenCounter) most() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.max
}

func (c *listenCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Header.Get("Mcp-Method") != "subscriptions/listen" {
		return c.base.RoundTrip(r)
	}
	c.add(1)
	resp, err := c.base.RoundTrip(r)
	if err != nil {
		c.add(-1)
		return nil, err
	}
	resp.Body = &countedBody{ReadCloser: resp.Body, c: c}
	return resp, nil
}

func (c *listenCounter) CloseIdleConnections() { c.base.CloseIdleConnections() }

type countedBody struct {
	io.ReadCloser
	c    *listenCounter
	once sync.Once
}

func (b *countedBody) Close() error {
	b.once.Do(func() { b.c.add(-1) })
	return b.ReadCloser.Close()
}

// subscribedSession starts an initialized session against u; its listen
// streams are counted by the listenCounter returned.
func subscribedSession(t *testing.T, u *subServer, cfg Config) (*harness, *listenCounter) {
	t.Helper()
	lc := &listenCounter{base: http.DefaultTransport.(*http.Transport).Clone()}
	client, err := routing.New(routing.Config{URL: u.URL, Transport: lc})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Client, cfg.Hints = client, flagHints
	h := run(t, New(cfg), client)
	h.send(initReq)
	if r := h.next(); !gjson.Get(r, "result.capabilities.resources.subscribe").Bool() {
		t.Fatalf("initialize answer: %s", r)
	}
	h.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return h, lc
}

func subReq(id, method, uri string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":%q,"params":{"uri":%q}}`, id, method, uri)
}

// call sends one request and requires its answer to be the next frame.
func (h *harness) call(req string) string {
	h.t.Helper()
	h.send(req)
	r := h.next()
	if gjson.Get(r, "id").Raw != gjson.Get(req, "id").Raw {
		h.t.Fatalf("answer to %s: %s", req, r)
	}
	return r
}

// updates reads n frames and requires each to be a resources/updated,
// returning their URIs in order.
func (h *harness) updates(n int) []string {
	h.t.Helper()
	var uris []string
	for range n {
		r := h.next()
		if gjson.Get(r, "method").Str != "notifications/resources/updated" {
			h.t.Fatalf("frame to the client: %s, want notifications/resources/updated", r)
		}
		if gjson.Get(r, `params._meta.io\.modelcontextprotocol/subscriptionId`).Exists() {
			h.t.Errorf("resources/updated keeps the subscriptionId: %s", r)
		}
		uris = append(uris, gjson.Get(r, "params.uri").Str)
	}
	return uris
}

// TestSubscriptionsShareOneStream: however many URIs a client subscribes
// to, one after the other or all at once, the session holds one listen
// stream for them at the server (two while one replaces the other), whose
// filter lists them all; each URI's updates reach the client once; the
// session's end closes it.
func TestSubscriptionsShareOneStream(t *testing.T) {
	u := newSubServer(t)
	h, lc := subscribedSession(t, u, Config{})
	var uris []string
	for i := range 12 {
		uri := fmt.Sprintf("demo://one/%d", i)
		uris = append(uris, uri)
		if r := h.call(subReq(fmt.Sprintf("s%d", i), "resources/subscribe", uri)); gjson.Get(r, "result").Raw != "{}" {
			t.Fatalf("subscribe %s: %s", uri, r)
		}
	}
	u.until(t, "one stream for the 12 URIs subscribed one after the other", oneStream(uris))

	// All at once: the answers come in any order.
	const burst = 12
	for i := range burst {
		uri := fmt.Sprintf("demo://burst/%d", i)
		uris = append(uris, uri)
		h.send(subReq(fmt.Sprintf("b%d", i), "resources/subscribe", uri))
	}
	answered := map[string]bool{}
	for range burst {
		r := h.next()
		if gjson.Get(r, "result").Raw != "{}" || answered[gjson.Get(r, "id").Str] {
			t.Fatalf("answer to a burst subscribe: %s", r)
		}
		answered[gjson.Get(r, "id").Str] = true
	}
	u.until(t, "one stream for all 24 URIs", oneStream(uris))
	u.mu.Lock()
	total := u.total
	u.mu.Unlock()
	if n := lc.most(); n > 2 {
		t.Errorf("the proxy held %d listen streams open at once, want at most 2 (the stream and the one replacing it)", n)
	}
	if total > len(uris) {
		t.Errorf("%d listen requests for %d subscribes, want at most one each", total, len(uris))
	}

	// A second subscribe to a URI opens nothing.
	if r := h.call(subReq("again", "resources/subscribe", uris[0])); gjson.Get(r, "result").Raw != "{}" {
		t.Fatalf("subscribe again: %s", r)
	}
	for _, uri := range uris {
		if n := u.touch(uri); n != 1 {
			t.Fatalf("the server has %d open streams asking for %s, want 1", n, uri)
		}
	}
	if got := h.updates(len(uris)); !slices.Equal(got, uris) {
		t.Errorf("resources/updated for %v, want one for each subscribed URI in order: %v", got, uris)
	}
	u.mu.Lock()
	total2 := u.total
	u.mu.Unlock()
	if total2 != total {
		t.Errorf("a subscribe to a URI already subscribed made %d listen requests", total2-total)
	}
	if rest := h.stop(); len(rest) != 0 {
		t.Errorf("more frames to the client: %q", rest)
	}
	u.until(t, "none once the session ended", func(got [][]string) bool { return len(got) == 0 })
}

// TestSubscriptionsCap: past MaxSubscriptions URIs, resources/subscribe gets
// one error naming the bound and the flag; a URI already subscribed does
// not count twice; an unsubscribe frees a slot, and so does a subscribe
// cancelled before the server acknowledged it; updates reach the client
// for every subscribed URI and not for the unsubscribed one.
func TestSubscriptionsCap(t *testing.T) {
	u := newSubServer(t)
	h, _ := subscribedSession(t, u, Config{MaxSubscriptions: 3})
	for i, uri := range []string{"demo://a", "demo://b", "demo://c", "demo://a"} {
		if r := h.call(subReq(fmt.Sprintf("s%d", i), "resources/subscribe", uri)); gjson.Get(r, "result").Raw != "{}" {
			t.Fatalf("subscribe %s: %s", uri, r)
		}
	}
	r := h.call(subReq("over", "resources/subscribe", "demo://d"))
	e := gjson.Get(r, "error")
	if e.Get("code").Int() != -32603 {
		t.Fatalf("subscribe past the bound: %s, want a -32603 error", r)
	}
	for _, w := range []string{"demo://d", "3 resource subscriptions", "--max-subscriptions", "resources/unsubscribe"} {
		if !strings.Contains(e.Get("message").Str, w) {
			t.Errorf("error message %q does not say %q", e.Get("message").Str, w)
		}
	}
	if e.Get("data.maxSubscriptions").Int() != 3 || e.Get("data.subscriptions").Int() != 3 {
		t.Errorf("error data %s, want subscriptions 3 and maxSubscriptions 3", e.Get("data").Raw)
	}
	u.until(t, "one stream for a, b and c", oneStream([]string{"demo://a", "demo://b", "demo://c"}))

	if r := h.call(subReq("un", "resources/unsubscribe", "demo://b")); gjson.Get(r, "result").Raw != "{}" {
		t.Fatalf("unsubscribe: %s", r)
	}
	if r := h.call(subReq("d", "resources/subscribe", "demo://d")); gjson.Get(r, "result").Raw != "{}" {
		t.Fatalf("subscribe after an unsubscribe freed a slot: %s", r)
	}
	u.until(t, "one stream for a, c and d", oneStream([]string{"demo://a", "demo://c", "demo://d"}))
	u.touch("demo://b")
	for _, uri := range []string{"demo://a", "demo://c", "demo://d"} {
		if u.touch(uri) != 1 {
			t.Fatalf("no open stream asks for %s", uri)
		}
	}
	// b was touched first: had it reached the client, it would come first.
	if got, want := h.updates(3), []string{"demo://a", "demo://c", "demo://d"}; !slices.Equal(got, want) {
		t.Errorf("resources/updated for %v, want %v", got, want)
	}

	// A subscribe cancelled while the server has not acknowledged it frees
	// its slot too, and the stream opened for it is given up at once (not
	// after the idle timeout, ten minutes here).
	if r := h.call(subReq("un-d", "resources/unsubscribe", "demo://d")); gjson.Get(r, "result").Raw != "{}" {
		t.Fatalf("unsubscribe: %s", r)
	}
	u.mu.Lock()
	u.hold["demo://slow"] = true
	u.mu.Unlock()
	h.send(subReq("slow", "resources/subscribe", "demo://slow"))
	for deadline := time.Now().Add(wait); ; time.Sleep(5 * time.Millisecond) {
		u.mu.Lock()
		held := u.held
		u.mu.Unlock()
		if held == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server got no listen for demo://slow within %v", wait)
		}
	}
	h.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"slow"}}`)
	if r := h.call(subReq("e", "resources/subscribe", "demo://e")); gjson.Get(r, "result").Raw != "{}" {
		t.Fatalf("subscribe after a cancelled subscribe freed its slot: %s", r)
	}
	u.until(t, "one stream for a, c and e", oneStream([]string{"demo://a", "demo://c", "demo://e"}))
	if rest := h.stop(); len(rest) != 0 {
		t.Errorf("more frames to the client: %q", rest)
	}
}

// TestSubscriptionsUnsubscribeWithoutNewStream: when the server refuses the
// stream that would replace the shared one, an unsubscribe is answered all
// the same and the URI's updates no longer reach the client, while the
// other URIs keep theirs; a subscribe that needed the new stream gets an
// error naming the server's failure, and holds no slot.
func TestSubscriptionsUnsubscribeWithoutNewStream(t *testing.T) {
	u := newSubServer(t)
	u.reject["demo://never"] = true
	h, _ := subscribedSession(t, u, Config{MaxSubscriptions: 2})
	for _, uri := range []string{"demo://a", "demo://b"} {
		if r := h.call(subReq(uri, "resources/subscribe", uri)); gjson.Get(r, "result").Raw != "{}" {
			t.Fatalf("subscribe %s: %s", uri, r)
		}
	}
	u.until(t, "one stream for a and b", oneStream([]string{"demo://a", "demo://b"}))

	u.mu.Lock()
	u.refuse = true
	u.mu.Unlock()
	if r := h.call(subReq("un", "resources/unsubscribe", "demo://b")); gjson.Get(r, "result").Raw != "{}" {
		t.Fatalf("unsubscribe: %s", r)
	}
	r := h.call(subReq("c", "resources/subscribe", "demo://c"))
	if msg := gjson.Get(r, "error.message").Str; !strings.Contains(msg, "demo://c") || !strings.Contains(msg, "HTTP 500") {
		t.Errorf("subscribe against a refusing server: %s, want an error naming the URI and the server's HTTP 500", r)
	}
	u.until(t, "still the one stream for a and b", oneStream([]string{"demo://a", "demo://b"}))
	u.touch("demo://b")
	u.touch("demo://a")
	if got := h.updates(1); got[0] != "demo://a" {
		t.Errorf("resources/updated for %s, want demo://a (b was unsubscribed)", got[0])
	}

	// The failed subscribe held no slot; a URI the server does not
	// acknowledge is refused and holds none either.
	u.mu.Lock()
	u.refuse = false
	u.mu.Unlock()
	r = h.call(subReq("never", "resources/subscribe", "demo://never"))
	if e := gjson.Get(r, "error"); e.Get("code").Int() != -32602 || !strings.Contains(e.Get("message").Str, "not accepted") {
		t.Errorf("subscribe to a URI the server leaves out: %s, want -32602 subscription not accepted", r)
	}
	if r := h.call(subReq("c2", "resources/subscribe", "demo://c")); gjson.Get(r, "result").Raw != "{}" {
		t.Fatalf("subscribe with a slot free: %s", r)
	}
	u.until(t, "one stream for a and c", oneStream([]string{"demo://a", "demo://c"}))
	if rest := h.stop(); len(rest) != 0 {
		t.Errorf("more frames to the client: %q", rest)
	}
}
