package e2e

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/demo"
	"github.com/tidwall/gjson"
)

// Plain forwarding: methods without special handling carry _meta and the 2026 headers (Mcp-Name,
// Mcp-Param-* from x-mcp-header).

// TestEraParamHeaders: x-mcp-header against the demo, whose server checks
// the Mcp-Param-* headers strictly.
func TestEraParamHeaders(t *testing.T) {
	t.Parallel()

	t.Run("after tools/list", func(t *testing.T) {
		t.Parallel()
		up := newDemoUpstream(t)
		p := startProxy(t, []string{up.URL})
		erInit(p, `{}`)
		tools := resultOf(t, p.call(`"list"`, "tools/list", `{}`)).Get("tools").Array()
		var names []string
		var weather gjson.Result
		for _, tool := range tools {
			names = append(names, tool.Get("name").String())
			if tool.Get("name").String() == "weather" {
				weather = tool
			}
		}
		if slices.Contains(names, demo.BadHeaderTool) {
			t.Errorf("tools/list = %v still lists %s, whose x-mcp-header is invalid", names, demo.BadHeaderTool)
		}
		if !weather.Exists() {
			t.Fatalf("tools/list = %v, missing weather", names)
		}
		if got := weather.Get(`inputSchema.properties.city.x-mcp-header`).String(); got != "City" {
			t.Errorf("weather's city annotation = %q, want City (valid annotations stay): %s", got, weather.Raw)
		}
		for _, tool := range tools {
			if got := tool.Get("execution.taskSupport").String(); got != "optional" {
				t.Errorf("tool %s execution.taskSupport = %q, want optional (the demo has the tasks extension)", tool.Get("name").String(), got)
			}
		}

		res := resultOf(t, p.call(`"zurich"`, "tools/call", `{"name":"weather","arguments":{"city":"Zürich","days":3}}`))
		if got := res.Get("content.0.text").String(); got != "weather for Zürich (3 days)" || res.Get("isError").Bool() {
			t.Errorf("weather Zürich = %s", res.Raw)
		}
		calls := erToolCalls(up, "weather")
		if len(calls) != 1 {
			t.Fatalf("upstream saw %d weather calls, want 1 (the headers were right the first time)", len(calls))
		}
		h := calls[0].Header
		if got := h.Values("Mcp-Param-City"); !slices.Equal(got, []string{"=?base64?WsO8cmljaA==?="}) {
			t.Errorf("Mcp-Param-City = %q, want [=?base64?WsO8cmljaA==?=]", got)
		}
		if got := h.Values("Mcp-Param-Days"); !slices.Equal(got, []string{"3"}) {
			t.Errorf("Mcp-Param-Days = %q, want [3]", got)
		}

		res = resultOf(t, p.call(`"paris"`, "tools/call", `{"name":"weather","arguments":{"city":"Paris"}}`))
		if got := res.Get("content.0.text").String(); got != "weather for Paris (1 days)" || res.Get("isError").Bool() {
			t.Errorf("weather Paris = %s", res.Raw)
		}
		calls = erToolCalls(up, "weather")
		if len(calls) != 2 {
			t.Fatalf("upstream saw %d weather calls, want 2", len(calls))
		}
		h = calls[1].Header
		if got := h.Values("Mcp-Param-City"); !slices.Equal(got, []string{"Paris"}) {
			t.Errorf("Mcp-Param-City = %q, want [Paris]", got)
		}
		if got := h.Values("Mcp-Param-Days"); len(got) != 0 {
			t.Errorf("Mcp-Param-Days = %q for an absent argument, want none", got)
		}
		if n := len(up.requests("tools/list")); n != 1 {
			t.Errorf("upstream saw %d tools/list, want 1 (the client's own)", n)
		}
		p.closeStdin()
		if code := p.waitExit(cleanupExitTimeout); code != 0 {
			t.Errorf("exit status %d", code)
		}
		if log := p.stderr.String(); !strings.Contains(log, demo.BadHeaderTool) {
			t.Errorf("no warning naming %s on stderr:\n%s", demo.BadHeaderTool, log)
		}
	})

	t.Run("value shapes", func(t *testing.T) {
		t.Parallel()
		up := newDemoUpstream(t)
		p := startProxy(t, []string{up.URL})
		erInit(p, `{}`)
		resultOf(t, p.call(`"list"`, "tools/list", `{}`))
		for i, tc := range []struct {
			args, header string // header: the exact Mcp-Param-City, "" for a Base64 sentinel
		}{
			{`{"city":"Oslo","days":-1}`, "Oslo"},
			{`{"city":" padded "}`, ""},
			{`{"city":"=?base64?T3Nsbw==?="}`, ""},
			{`{"city":"東京","days":14}`, ""},
			{`{"city":"tab\there"}`, ""},
			{`{"city":"New York","days":null}`, "New York"},
		} {
			id := fmt.Sprintf(`"v%d"`, i)
			res := resultOf(t, p.call(id, "tools/call", `{"name":"weather","arguments":`+tc.args+`}`))
			nullDays := gjson.Get(tc.args, "days").Type == gjson.Null && gjson.Get(tc.args, "days").Exists()
			// With days null the headers pass (the server checks them
			// first) and the tool's schema then refuses null.
			if !nullDays && (res.Get("isError").Bool() || !strings.HasPrefix(res.Get("content.0.text").String(), "weather for ")) {
				t.Errorf("weather %s = %s", tc.args, res.Raw)
				continue
			}
			calls := erToolCalls(up, "weather")
			if d := calls[len(calls)-1].Header.Values("Mcp-Param-Days"); nullDays && len(d) != 0 {
				t.Errorf("weather %s: Mcp-Param-Days = %q for a null argument, want none", tc.args, d)
			}
			h := calls[len(calls)-1].Header.Values("Mcp-Param-City")
			city := gjson.Get(tc.args, "city").String()
			switch {
			case len(h) != 1:
				t.Errorf("weather %s: Mcp-Param-City = %q, want one value", tc.args, h)
			case tc.header != "" && h[0] != tc.header:
				t.Errorf("weather %s: Mcp-Param-City = %q, want %q", tc.args, h[0], tc.header)
			case tc.header == "" && city != "" && !strings.HasPrefix(h[0], "=?base64?"):
				t.Errorf("weather %s: Mcp-Param-City = %q, want the Base64 sentinel", tc.args, h[0])
			}
		}
		if n := len(erToolCalls(up, "weather")); n != 6 {
			t.Errorf("upstream saw %d weather calls for 6, want 6 (no -32020 retries: the headers were right)", n)
		}
	})

	t.Run("first call of the session", func(t *testing.T) {
		t.Parallel()
		up := newDemoUpstream(t)
		p := startProxy(t, []string{up.URL})
		erInit(p, `{}`)
		res := resultOf(t, p.call(`"first"`, "tools/call", `{"name":"weather","arguments":{"city":"Zürich","days":2}}`))
		if got := res.Get("content.0.text").String(); got != "weather for Zürich (2 days)" || res.Get("isError").Bool() {
			t.Errorf("weather as the first call = %s", res.Raw)
		}
		calls := erToolCalls(up, "weather")
		if len(calls) != 1 {
			t.Fatalf("upstream saw %d weather calls, want 1 (headers right the first time, no -32020 retry)", len(calls))
		}
		if got := calls[0].Header.Get("Mcp-Param-City"); got != "=?base64?WsO8cmljaA==?=" {
			t.Errorf("Mcp-Param-City = %q", got)
		}
		lists := up.requests("tools/list")
		if len(lists) != 1 {
			t.Fatalf("upstream saw %d tools/list, want 1 (fetched once, lazily)", len(lists))
		}
		all := up.requests("")
		if slices.Index(all, lists[0]) > slices.Index(all, calls[0]) {
			t.Errorf("the lazy tools/list came after the call it was for")
		}
		resultOf(t, p.call(`"second"`, "tools/call", `{"name":"weather","arguments":{"city":"Oslo"}}`))
		if n := len(up.requests("tools/list")); n != 1 {
			t.Errorf("upstream saw %d tools/list after two calls, want 1", n)
		}
	})
}

// TestEraForwarded: methods without special handling are forwarded with
// _meta and headers, and their answers (results or the server's errors)
// come back.
func TestEraForwarded(t *testing.T) {
	t.Parallel()

	t.Run("demo", func(t *testing.T) {
		t.Parallel()
		up := newDemoUpstream(t)
		p := startProxy(t, []string{up.URL})
		erInit(p, `{}`)

		tl := resultOf(t, p.call(`"templates"`, "resources/templates/list", `{}`))
		found := false
		for _, rt := range tl.Get("resourceTemplates").Array() {
			found = found || rt.Get("uriTemplate").String() == "demo://echo/{text}"
		}
		if !found {
			t.Errorf("resources/templates/list = %s, want demo://echo/{text}", tl.Raw)
		}
		if n := len(up.requests("resources/templates/list")); n != 1 {
			t.Errorf("upstream saw %d resources/templates/list, want 1", n)
		}

		resp := p.call(`"complete"`, "completion/complete", `{"ref":{"type":"ref/prompt","name":"greeting"},"argument":{"name":"name","value":"W"}}`)
		exs := up.requests("completion/complete")
		if len(exs) != 1 {
			t.Fatalf("upstream saw %d completion/complete, want 1", len(exs))
		}
		status, _, body := up.response(t, exs[0])
		if e := gjson.GetBytes(resp, "error"); e.Exists() {
			// The server's own error, passed through.
			want := gjson.GetBytes(body, "error")
			if e.Get("code").Int() != want.Get("code").Int() || e.Get("message").String() != want.Get("message").String() {
				t.Errorf("completion/complete error %s, want the server's %s", e.Raw, want.Raw)
			}
			if status != http.StatusOK && e.Get("data.httpStatus").Int() != int64(status) {
				t.Errorf("completion/complete error %s: data.httpStatus should be %d", e.Raw, status)
			}
		} else if !resultOf(t, resp).Get("completion").IsObject() {
			t.Errorf("completion/complete = %s, want a CompleteResult", resp)
		}

		e := errorOf(t, p.call(`"foo"`, "foo/bar", `{"x":1}`))
		if e.Get("code").Int() != -32601 {
			t.Errorf("foo/bar: %s, want -32601", e.Raw)
		}
		exs = up.requests("foo/bar")
		if len(exs) != 1 {
			t.Fatalf("upstream saw %d foo/bar, want 1 (unknown methods are forwarded)", len(exs))
		}
		if status, _, _ := up.response(t, exs[0]); status != http.StatusNotFound || e.Get("data.httpStatus").Int() != 404 {
			t.Errorf("foo/bar: the demo answered HTTP %d, the client got %s; want 404 and data.httpStatus 404", status, e.Raw)
		}
		if got := gjson.GetBytes(exs[0].Body, "params.x").Raw; got != "1" {
			t.Errorf("foo/bar params not forwarded: %s", shortBytes(exs[0].Body))
		}
	})

	t.Run("404 method not found", func(t *testing.T) {
		t.Parallel()
		up := newUpstream(t, &fakeServer{})
		p := startProxy(t, []string{up.URL})
		erInit(p, `{}`)
		e := errorOf(t, p.call(`"foo"`, "foo/bar", `{"_meta":{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}`))
		if e.Get("code").Int() != -32601 {
			t.Errorf("foo/bar: %s, want -32601 (method not found)", e.Raw)
		}
		if got := e.Get("data.httpStatus").Int(); got != 404 {
			t.Errorf("foo/bar: error.data.httpStatus = %d, want 404 (error %s)", got, e.Raw)
		}
		exs := up.requests("foo/bar")
		if len(exs) != 1 {
			t.Fatalf("upstream saw %d foo/bar, want 1", len(exs))
		}
		if got := gjson.GetBytes(exs[0].Body, "params._meta.traceparent").String(); !strings.HasPrefix(got, "00-0af7") {
			t.Errorf("the client's _meta was not kept: %s", shortBytes(exs[0].Body))
		}
		resultOf(t, p.call(`"after"`, "ping", ""))
		// The server declares no listChanged and the client subscribed to
		// nothing: no listen stream (it would have been opened at
		// notifications/initialized, before the calls above).
		if n := len(up.requests("subscriptions/listen")); n != 0 {
			t.Errorf("upstream saw %d subscriptions/listen with nothing to listen for, want 0", n)
		}
	})
}

// TestEraLazyToolsListConcurrent: many first calls at once fetch the tool
// list once, and every one carries its Mcp-Param-* headers.
func TestEraLazyToolsListConcurrent(t *testing.T) {
	t.Parallel()
	up := newDemoUpstream(t)
	p := startProxy(t, []string{up.URL})
	erInit(p, `{}`)
	const n = 8
	for i := range n {
		p.request(fmt.Sprint(i), "tools/call", fmt.Sprintf(`{"name":"weather","arguments":{"city":"Zürich","days":%d}}`, i+1))
	}
	for i := range n {
		res := resultOf(t, p.expect(fmt.Sprint(i)))
		if got, want := res.Get("content.0.text").String(), fmt.Sprintf("weather for Zürich (%d days)", i+1); got != want || res.Get("isError").Bool() {
			t.Errorf("call %d = %s, want %q", i, res.Raw, want)
		}
	}
	if got := len(up.requests("tools/list")); got != 1 {
		t.Errorf("upstream saw %d tools/list, want 1", got)
	}
	if got := len(erToolCalls(up, "weather")); got != n {
		t.Errorf("upstream saw %d weather calls, want %d (no header-mismatch retries)", got, n)
	}
}
