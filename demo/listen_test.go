package demo_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
	"go.uber.org/goleak"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/demo"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/schematest"
)

const subscriptionIDKey = "io.modelcontextprotocol/subscriptionId"

// listenStream is an open subscriptions/listen response.
type listenStream struct {
	id     string
	events chan []byte
	close  func()
}

// listen opens a subscriptions/listen stream on url with the given filter.
// Its events arrive on the channel, which is closed when the stream ends.
func listen(t *testing.T, client *http.Client, v *schematest.Validator, url, id string, filter map[string]any) *listenStream {
	t.Helper()
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "subscriptions/listen",
		"params": map[string]any{"_meta": meta(nil), "notifications": filter}})
	if err != nil {
		t.Fatal(err)
	}
	if err := v.ValidateUpstream(body); err != nil {
		t.Errorf("listen request: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(string(body)))
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	resp, err := client.Do(req)
	if err != nil {
		cancel()
		t.Fatalf("POST subscriptions/listen: %v", err)
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		resp.Body.Close()
		cancel()
		t.Fatalf("listen: status %d, Content-Type %q; want 200 text/event-stream", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	ls := &listenStream{id: id, events: make(chan []byte, 16)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(ls.events)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
		var data []string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "" && data != nil:
				ls.events <- []byte(strings.Join(data, "\n"))
				data = nil
			case strings.HasPrefix(line, "data:"):
				data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
			}
		}
	}()
	ls.close = func() {
		cancel()
		resp.Body.Close()
		for range ls.events { // drain, so the reader can finish
		}
		<-done
	}
	t.Cleanup(ls.close)
	return ls
}

// next returns the next event of the stream, validated as a frame
// answering subscriptions/listen; ok is false when the stream ended.
func (ls *listenStream) next(t *testing.T, v *schematest.Validator) (msg message, raw []byte, ok bool) {
	t.Helper()
	timer := time.NewTimer(testTimeout)
	defer timer.Stop()
	select {
	case raw, ok = <-ls.events:
		if !ok {
			return msg, nil, false
		}
	case <-timer.C:
		t.Fatalf("listen %s: no event within %v", ls.id, testTimeout)
	}
	if err := v.ValidateUpstreamResult(raw, "subscriptions/listen"); err != nil {
		t.Errorf("listen %s event: %v", ls.id, err)
	}
	decode(t, raw, &msg)
	return msg, raw, true
}

// expect reads the next event and checks it is method, carrying the
// stream's subscriptionId.
func (ls *listenStream) expect(t *testing.T, v *schematest.Validator, method string) []byte {
	t.Helper()
	m, raw, ok := ls.next(t, v)
	if !ok {
		t.Fatalf("listen %s ended, want %s", ls.id, method)
	}
	if m.Method != method || m.ID != nil {
		t.Fatalf("listen %s: event %s, want notification %s", ls.id, raw, method)
	}
	if got := gjson.GetBytes(m.Params, "_meta."+gjson.Escape(subscriptionIDKey)).Str; got != ls.id {
		t.Errorf("event %s: subscriptionId %q, want %q", raw, got, ls.id)
	}
	return raw
}

func touch(t *testing.T, c *mrtrClient, what, uri string) {
	t.Helper()
	args := map[string]any{"what": what}
	if uri != "" {
		args["uri"] = uri
	}
	rd := c.call(t, "touch-"+what, "touch", args, "", "")
	c.complete(t, rd)
}

func TestListenReceivesChanges(t *testing.T) {
	c := newMRTRClient(t)
	all := map[string]any{
		"toolsListChanged":      true,
		"promptsListChanged":    true,
		"resourcesListChanged":  true,
		"resourceSubscriptions": []any{"demo://readme", "demo://echo/x"},
	}
	full := listen(t, c.client, c.v, c.url, "listen-all", all)
	toolsOnly := listen(t, c.client, c.v, c.url, "listen-tools", map[string]any{"toolsListChanged": true})

	for _, ls := range []struct {
		s      *listenStream
		filter map[string]any
	}{{full, all}, {toolsOnly, map[string]any{"toolsListChanged": true}}} {
		raw := ls.s.expect(t, c.v, "notifications/subscriptions/acknowledged")
		var acked map[string]any
		decode(t, []byte(gjson.GetBytes(raw, "params.notifications").Raw), &acked)
		if !reflect.DeepEqual(acked, ls.filter) {
			t.Errorf("%s acknowledged %v, want %v", ls.s.id, acked, ls.filter)
		}
	}

	// The tools-only stream sees nothing of prompts and resources: its
	// next event after these touches is the tools one.
	touch(t, c, "prompts", "")
	full.expect(t, c.v, "notifications/prompts/list_changed")
	touch(t, c, "resources", "")
	full.expect(t, c.v, "notifications/resources/list_changed")
	touch(t, c, "resource", "")
	raw := full.expect(t, c.v, "notifications/resources/updated")
	if uri := gjson.GetBytes(raw, "params.uri").Str; uri != "demo://readme" {
		t.Errorf("resources/updated %s: uri %q, want demo://readme", raw, uri)
	}
	touch(t, c, "resource", "demo://echo/x")
	raw = full.expect(t, c.v, "notifications/resources/updated")
	if uri := gjson.GetBytes(raw, "params.uri").Str; uri != "demo://echo/x" {
		t.Errorf("resources/updated %s: uri %q, want demo://echo/x", raw, uri)
	}
	touch(t, c, "resource", "demo://not-subscribed") // goes nowhere
	touch(t, c, "tools", "")
	full.expect(t, c.v, "notifications/tools/list_changed")
	toolsOnly.expect(t, c.v, "notifications/tools/list_changed")

	// The tool list did not really change.
	m := jsonReply(t, c.post(t, 1, "tools/list", "", nil), http.StatusOK)
	if n := gjson.GetBytes(m.Result, `tools.#(name=="echo")#`).Array(); len(n) != 1 {
		t.Errorf("tools/list after touch has %d echo tools", len(n))
	}

	// Closing a stream ends its subscription; the other keeps working.
	toolsOnly.close()
	touch(t, c, "tools", "")
	full.expect(t, c.v, "notifications/tools/list_changed")
}

func TestListenDeclaresCapabilities(t *testing.T) {
	p := startPeer(t)
	m := jsonReply(t, p.post(t, 1, "server/discover", "", nil), http.StatusOK)
	caps := gjson.GetBytes(m.Result, "capabilities")
	for _, path := range []string{"tools.listChanged", "prompts.listChanged", "resources.listChanged", "resources.subscribe"} {
		if !caps.Get(path).Bool() {
			t.Errorf("capabilities %s: %s is not true", caps.Raw, path)
		}
	}
}

// TestListenEndsOnStop: stopping the server ends an open listen with its
// result instead of holding the shutdown until the timeout.
func TestListenEndsOnStop(t *testing.T) {
	defer goleak.VerifyNone(t)
	v := schematest.Load(t)
	url, stop, err := demo.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	ls := listen(t, &http.Client{Transport: tr}, v, url, "listen-stop", map[string]any{"toolsListChanged": true})
	ls.expect(t, v, "notifications/subscriptions/acknowledged")

	start := time.Now()
	stop()
	if d := time.Since(start); d > time.Second {
		t.Errorf("stop took %v with a listen open", d)
	}
	m, raw, ok := ls.next(t, v)
	if !ok {
		t.Fatal("listen stream ended without a result")
	}
	if string(m.ID) != `"listen-stop"` || gjson.GetBytes(raw, "result.resultType").Str != "complete" ||
		gjson.GetBytes(raw, "result._meta."+gjson.Escape(subscriptionIDKey)).Str != "listen-stop" {
		t.Errorf("last event %s, want the listen result with resultType complete and the subscriptionId", raw)
	}
	if _, raw, ok := ls.next(t, v); ok {
		t.Errorf("event %s after the listen result", raw)
	}
}
