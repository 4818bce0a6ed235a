package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tidwall/gjson"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/demo"
)

// serveSessions is how many client sessions the isolation tests run at once.
const serveSessions = 16

// serveLevels are the 2025 logging levels; session i sets the i-th (mod 8).
var serveLevels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// serveBarrier lets concurrent sessions wait (bounded) until each has
// reached a point; a session that fails before it still arrives (defer).
type serveBarrier struct {
	n    atomic.Int64
	want int64
	all  chan struct{}
}

func newServeBarrier(n int) *serveBarrier {
	return &serveBarrier{want: int64(n), all: make(chan struct{})}
}

// arrive returns a func that marks the caller arrived, once.
func (b *serveBarrier) arrive() func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			if b.n.Add(1) == b.want {
				close(b.all)
			}
		})
	}
}

func (b *serveBarrier) wait(t *testing.T, desc string) {
	t.Helper()
	select {
	case <-b.all:
	case <-time.After(waitTimeout):
		t.Fatalf("not every session reached %s within %v", desc, waitTimeout)
	}
}

// serveConcurrently runs body for serveSessions sessions at once, each
// as a subtest of its own. The subtests do not call t.Parallel: -parallel
// (GOMAXPROCS by default) would bound how many run at once, and the
// sessions must really overlap.
func serveConcurrently(t *testing.T, body func(t *testing.T, i int)) {
	var wg sync.WaitGroup
	for i := 0; i < serveSessions; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.Run(fmt.Sprintf("session-%02d", i), func(t *testing.T) { body(t, i) })
		}()
	}
	wg.Wait()
}

// serveNoCrossTalk fails t when a frame session i received carries the tag
// of another session.
func serveNoCrossTalk(t *testing.T, i int, frames [][]byte) {
	t.Helper()
	for _, fr := range frames {
		for j := 0; j < serveSessions; j++ {
			if j != i && strings.Contains(string(fr), serveTag(j)) {
				t.Errorf("session %d received a frame of session %d (cross-talk): %s", i, j, shortBytes(fr))
			}
		}
	}
}

// serveEndSession deletes the session and requires that its id is then
// unknown (404), for a POST and for a GET.
func serveEndSession(t *testing.T, c *serveSession) {
	t.Helper()
	if st := c.del(); st < 200 || st > 299 {
		t.Fatalf("DELETE of the session: status %d, want 2xx", st)
	}
	a := c.send(http.MethodPost, serveRequest(`"after-delete"`, "ping", ""), nil)
	if a.status != http.StatusNotFound {
		t.Errorf("POST with the deleted session id: status %d, want 404; body %s", a.status, shortBytes(a.body))
	}
	a = c.send(http.MethodGet, nil, nil)
	if a.status != http.StatusNotFound {
		t.Errorf("GET with the deleted session id: status %d, want 404", a.status)
	}
}

// TestServeSessionsDemo: 16 raw-client sessions at once against the demo
// server (2026), all with the same request ids, each sending its own
// client info, capabilities and log level upstream (whoami), and running
// echo, a task (tasks/get, tasks/result,
// tasks/list) and an MRTR elicitation (ask_name, whose elicitation/create
// travels on the POST's stream and is answered with the session's own
// name). Every answer carries the session's own data, tasks/list shows only
// its own task while all 16 exist, no frame of one session reaches another,
// and after DELETE the id is unknown (404).
func TestServeSessionsDemo(t *testing.T) {
	t.Parallel()
	up := newServeUp(t, demo.Handler(), true)
	s := startServe(t, "--state-file", filepath.Join(t.TempDir(), "tasks.json"), up.URL)
	created := newServeBarrier(serveSessions)

	serveConcurrently(t, func(t *testing.T, i int) {
		arrived := created.arrive()
		defer arrived()
		tag := serveTag(i)
		f := newServeFrames(t, false)
		c := s.rawSession(t, f)
		c.answer = func(req gjson.Result) string {
			if req.Get("method").String() == "elicitation/create" {
				return `{"action":"accept","content":{"name":"` + tag + `"}}`
			}
			return ""
		}
		// Half the sessions also declare roots: each session's requests
		// upstream carry its own capabilities.
		caps := `{"elicitation":{},"tasks":{"list":{},"cancel":{}}}`
		if i%2 == 0 {
			caps = `{"elicitation":{},"roots":{},"tasks":{"list":{},"cancel":{}}}`
		}
		res := c.initialize(`{"protocolVersion":"2025-11-25","capabilities":` + caps + `,"clientInfo":{"name":"e2e-serve-` + tag + `","version":"1"}}`)
		if v := res.Get("protocolVersion").String(); v != legacyVersion {
			t.Errorf("initialize protocolVersion = %q, want %s", v, legacyVersion)
		}
		if !res.Get("capabilities.tasks").Exists() {
			t.Errorf("initialize advertises no tasks capability: %s", res.Raw)
		}

		// its own client info, capabilities and log level, as the
		// upstream saw them (whoami)
		level := serveLevels[i%len(serveLevels)]
		resultOf(t, c.call(`"level"`, "logging/setLevel", `{"level":"`+level+`"}`))
		who := resultOf(t, c.call(`"who"`, "tools/call", `{"name":"whoami","arguments":{}}`)).Get("structuredContent")
		if got := who.Get("clientInfo.name").String(); got != "e2e-serve-"+tag {
			t.Errorf("the upstream saw clientInfo %q, want this session's e2e-serve-%s", got, tag)
		}
		if got := who.Get("clientCapabilities.roots").Exists(); got != (i%2 == 0) {
			t.Errorf("the upstream saw roots declared: %v, want %v (this session's capabilities): %s", got, i%2 == 0, who.Get("clientCapabilities").Raw)
		}
		if got := who.Get("logLevel").String(); got != level {
			t.Errorf("the upstream saw logLevel %q, want this session's %q", got, level)
		}

		// echo
		echo := resultOf(t, c.call(`"echo"`, "tools/call", `{"name":"echo","arguments":{"text":"echo `+tag+`"}}`))
		if got := tkText(echo); got != "echo "+tag {
			t.Errorf("echo = %q, want %q", got, "echo "+tag)
		}

		// a task
		ms := 200 + 20*i
		resp := c.call(`"task"`, "tools/call", fmt.Sprintf(`{"name":"slow","arguments":{"ms":%d},"task":{"ttl":60000}}`, ms))
		task := resultOf(t, resp).Get("task")
		id := task.Get("taskId").String()
		if id == "" {
			t.Fatalf("task-augmented slow: want a CreateTaskResult, got %s", shortBytes(resp))
		}
		arrived()
		created.wait(t, "task creation")
		// Every session's task exists now: the list must show this
		// one and no other.
		list := resultOf(t, c.call(`"list"`, "tasks/list", `{}`))
		var ids []string
		for _, tk := range list.Get("tasks").Array() {
			ids = append(ids, tk.Get("taskId").String())
		}
		if len(ids) != 1 || ids[0] != id {
			t.Errorf("tasks/list shows %v, want exactly this session's task [%s]", ids, id)
		}
		deadline := time.Now().Add(waitTimeout)
		for n := 0; ; n++ {
			view := resultOf(t, c.call(fmt.Sprintf(`"get-%d"`, n), "tasks/get", tkTaskParams(id)))
			if view.Get("taskId").String() != id {
				t.Fatalf("tasks/get answered for task %s, want %s", view.Get("taskId").String(), id)
			}
			st := view.Get("status").String()
			if st == "completed" {
				break
			}
			if st != "working" {
				t.Fatalf("task status %q, want working then completed: %s", st, view.Raw)
			}
			if time.Now().After(deadline) {
				t.Fatalf("the task did not complete within %v", waitTimeout)
			}
			time.Sleep(50 * time.Millisecond)
		}
		payload := resultOf(t, c.call(`"result"`, "tasks/result", tkTaskParams(id)))
		if got, want := tkText(payload), fmt.Sprintf("slept %d ms", ms); got != want {
			t.Errorf("tasks/result text = %q, want %q (this session's own task)", got, want)
		}

		// an MRTR elicitation
		ask := resultOf(t, c.call(`"ask"`, "tools/call", `{"name":"ask_name","arguments":{}}`))
		if got := tkText(ask); got != "hello, "+tag {
			t.Errorf("ask_name = %q, want %q (the answer this session gave)", got, "hello, "+tag)
		}
		c.mu.Lock()
		asked := slices.Clone(c.asked)
		c.mu.Unlock()
		if !slices.Equal(asked, []string{"elicitation/create"}) {
			t.Errorf("the proxy's requests on this session's POST streams: %v, want [elicitation/create]", asked)
		}

		serveNoCrossTalk(t, i, f.all())
		serveEndSession(t, c)
	})
}

// TestServeSessionsLegacy: 16 raw-client sessions at once against a 2025
// upstream (the legacy demo, go-sdk in stateful 2025-11-25 mode: the proxy
// passes through). Each runs echo, an elicitation during a call (confirm;
// 2025 servers ask with a request on the call's stream, the 2025 form of
// the MRTR elicitation) and a sampling request carrying its own text
// (summarize). Each client session is its own upstream session, every
// answer carries the session's own data, no frame crosses sessions, and
// DELETE ends the session (404). The legacy demo has no tasks, so the task
// part runs against the demo server only (TestServeSessionsDemo).
func TestServeSessionsLegacy(t *testing.T) {
	t.Parallel()
	up := newLegacyUpstream(t, demo.NewLegacy())
	s := startServe(t, "--state-file", filepath.Join(t.TempDir(), "tasks.json"), up.URL)

	serveConcurrently(t, func(t *testing.T, i int) {
		tag := serveTag(i)
		ok := i%2 == 0
		f := newServeFrames(t, true)
		c := s.rawSession(t, f)
		c.answer = func(req gjson.Result) string {
			switch req.Get("method").String() {
			case "elicitation/create":
				return fmt.Sprintf(`{"action":"accept","content":{"ok":%v}}`, ok)
			case "sampling/createMessage":
				return `{"role":"assistant","model":"e2e","content":{"type":"text","text":"short ` + tag + `"}}`
			}
			return ""
		}
		res := c.initialize(`{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{},"sampling":{}},"clientInfo":{"name":"e2e-serve-` + tag + `","version":"1"}}`)
		if got := res.Get("serverInfo.name").String(); got != "mcp-tasks-proxy-legacy-demo" {
			t.Errorf("serverInfo.name = %q, want the 2025 server's own", got)
		}

		echo := resultOf(t, c.call(`"echo"`, "tools/call", `{"name":"echo","arguments":{"text":"echo `+tag+`"}}`))
		if got := tkText(echo); got != "echo "+tag {
			t.Errorf("echo = %q, want %q", got, "echo "+tag)
		}
		confirm := resultOf(t, c.call(`"confirm"`, "tools/call", `{"name":"confirm","arguments":{}}`))
		if got, want := tkText(confirm), fmt.Sprintf("confirmed: accept %v", ok); got != want {
			t.Errorf("confirm = %q, want %q (this session's answer)", got, want)
		}
		sum := resultOf(t, c.call(`"sum"`, "tools/call", `{"name":"summarize","arguments":{"text":"`+tag+`"}}`))
		if got, want := tkText(sum), "summary: short "+tag; got != want {
			t.Errorf("summarize = %q, want %q (this session's answer)", got, want)
		}
		c.mu.Lock()
		asked := slices.Clone(c.asked)
		c.mu.Unlock()
		if !slices.Equal(asked, []string{"elicitation/create", "sampling/createMessage"}) {
			t.Errorf("the proxy's requests on this session's POST streams: %v, want [elicitation/create sampling/createMessage]", asked)
		}
		serveNoCrossTalk(t, i, f.all())
		serveEndSession(t, c)
	})

	inits := up.seen(func(ls legacySeen) bool { return isPost("initialize")(ls) && ls.Status == http.StatusOK })
	sids := map[string]bool{}
	for _, in := range inits {
		sids[in.RespHeader.Get("Mcp-Session-Id")] = true
	}
	if len(inits) != serveSessions || len(sids) != serveSessions {
		t.Errorf("the 2025 server saw %d initialize and issued %d session ids, want %d of each (one upstream session per client session)", len(inits), len(sids), serveSessions)
	}
}

// serveSDKNotes is what a go-sdk session's handlers received.
type serveSDKNotes struct {
	changes
	listChanged int
	updated     []string
	elicits     int
}

// newServeSDKClient is a go-sdk client that answers elicitations with
// name, and records list_changed and resources/updated notifications.
func newServeSDKClient(n *serveSDKNotes, name string) *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "e2e-serve-sdk", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			n.mu.Lock()
			n.elicits++
			n.notifyLocked()
			n.mu.Unlock()
			if strings.Contains(req.Params.Message, "name") {
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": name}}, nil
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"ok": true}}, nil
		},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			n.mu.Lock()
			n.listChanged++
			n.notifyLocked()
			n.mu.Unlock()
		},
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			n.mu.Lock()
			n.updated = append(n.updated, req.Params.URI)
			n.notifyLocked()
			n.mu.Unlock()
		},
	})
}

// serveSDKKind is one upstream for the go-sdk tests.
type serveSDKKind struct {
	name     string
	verbatim bool
	start    func(t *testing.T) *serveProc
	// elicit is the tool whose call asks for an elicitation, and the
	// answer it gives with name.
	elicit       string
	elicitAnswer func(name string) string
	// touchTools makes a tools/list_changed; touchURI a
	// resources/updated for uri.
	touchTools func(i int) map[string]any
	touchTool  string
	touchURI   func(uri string) map[string]any
	uri        func(i int) string
}

var serveSDKKinds = []serveSDKKind{
	{
		name:     "demo",
		verbatim: false,
		// The built-in demo upstream (--demo).
		start:        func(t *testing.T) *serveProc { return startServe(t, "--demo") },
		elicit:       "ask_name",
		elicitAnswer: func(name string) string { return "hello, " + name },
		touchTool:    "touch",
		touchTools:   func(int) map[string]any { return map[string]any{"what": "tools"} },
		touchURI:     func(uri string) map[string]any { return map[string]any{"what": "resource", "uri": uri} },
		uri:          func(i int) string { return fmt.Sprintf("demo://echo/sdk-%s", serveTag(i)) },
	},
	{
		name:     "2025",
		verbatim: true,
		start: func(t *testing.T) *serveProc {
			up := newLegacyUpstream(t, demo.NewLegacy())
			return startServe(t, up.URL)
		},
		elicit:       "confirm",
		elicitAnswer: func(string) string { return "confirmed: accept true" },
		touchTool:    "touch",
		touchTools:   nil, // add_tool, below
		touchURI:     func(uri string) map[string]any { return map[string]any{"uri": uri} },
		uri:          func(i int) string { return fmt.Sprintf("legacy://sdk/%s", serveTag(i)) },
	},
}

// TestServeSDK drives serve with go-sdk v1.8.0's Streamable HTTP client
// pinned to 2025-11-25, 16 sessions at once, against the demo server
// (serve --demo) and a 2025 upstream: initialize, tools/list, echo, an
// elicitation answered with the session's own name, a tools/list_changed
// on each session's GET stream, a resources/updated that reaches only the
// session subscribed to the URI, and Close (DELETE).
func TestServeSDK(t *testing.T) {
	t.Parallel()
	const n = serveSessions
	for _, k := range serveSDKKinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			s := k.start(t)
			ctx, cancel := context.WithTimeout(context.Background(), 3*waitTimeout)
			defer cancel()
			notes := make([]*serveSDKNotes, n)
			sessions := make([]*mcp.ClientSession, n)
			frames := make([]*serveFrames, n)
			for i := range sessions {
				notes[i] = &serveSDKNotes{}
				frames[i] = newServeFrames(t, k.verbatim)
				sessions[i] = sdkServeConnect(t, ctx, s, newServeSDKClient(notes[i], serveTag(i)), frames[i])
			}
			defer func() {
				for _, cs := range sessions {
					cs.Close()
				}
			}()
			call := func(t *testing.T, i int, tool string, args map[string]any) string {
				t.Helper()
				res, err := sessions[i].CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
				if err != nil {
					t.Fatalf("session %d: %s: %v", i, tool, err)
				}
				return sdkText(t, res)
			}

			t.Run("calls", func(t *testing.T) {
				var wg sync.WaitGroup
				for i := range sessions {
					wg.Add(1)
					go func() {
						defer wg.Done()
						ir := sessions[i].InitializeResult()
						if ir == nil || ir.ProtocolVersion != legacyVersion {
							t.Errorf("session %d: InitializeResult %+v, want protocolVersion %s", i, ir, legacyVersion)
						}
						if sessions[i].ID() == "" {
							t.Errorf("session %d: no Mcp-Session-Id", i)
						}
						res, err := sessions[i].ListTools(ctx, nil)
						if err != nil {
							t.Errorf("session %d: tools/list: %v", i, err)
							return
						}
						if !slices.ContainsFunc(res.Tools, func(tl *mcp.Tool) bool { return tl.Name == "echo" }) {
							t.Errorf("session %d: tools/list has no echo", i)
						}
						text := "sdk echo " + serveTag(i)
						r, err := sessions[i].CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": text}})
						if err != nil || r.IsError || len(r.Content) != 1 {
							t.Errorf("session %d: echo: %v %+v", i, err, r)
						} else if got := erText(r); got != text {
							t.Errorf("session %d: echo = %q, want %q", i, got, text)
						}
						r, err = sessions[i].CallTool(ctx, &mcp.CallToolParams{Name: k.elicit, Arguments: map[string]any{}})
						if err != nil {
							t.Errorf("session %d: %s: %v", i, k.elicit, err)
						} else if got, want := erText(r), k.elicitAnswer(serveTag(i)); got != want {
							t.Errorf("session %d: %s = %q, want %q", i, k.elicit, got, want)
						}
					}()
				}
				wg.Wait()
				for i, nt := range notes {
					nt.mu.Lock()
					if nt.elicits != 1 {
						t.Errorf("session %d handled %d elicitations, want 1", i, nt.elicits)
					}
					nt.mu.Unlock()
				}
			})

			t.Run("list_changed on the GET streams", func(t *testing.T) {
				// The upstream's change reaches every session. The proxy's
				// own subscription upstream may not be open yet at the first
				// change, so the change is repeated until each session saw
				// one; the count is not asserted.
				deadline := time.Now().Add(waitTimeout)
				for round := 0; ; round++ {
					if k.touchTools != nil {
						call(t, 0, k.touchTool, k.touchTools(round))
					} else {
						call(t, 0, "add_tool", map[string]any{"name": fmt.Sprintf("added_%d", round)})
					}
					missing := 0
					for _, nt := range notes {
						nt.mu.Lock()
						if nt.listChanged == 0 {
							missing++
						}
						nt.mu.Unlock()
					}
					if missing == 0 {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("%d of %d sessions got no notifications/tools/list_changed within %v", missing, n, waitTimeout)
					}
					time.Sleep(100 * time.Millisecond)
				}
			})

			t.Run("resources/updated only where subscribed", func(t *testing.T) {
				// Each session subscribes to its own URI; session i touches
				// it until its own handler sees it.
				for i := range sessions {
					if err := sessions[i].Subscribe(ctx, &mcp.SubscribeParams{URI: k.uri(i)}); err != nil {
						t.Fatalf("session %d: resources/subscribe: %v", i, err)
					}
				}
				for i := range sessions {
					deadline := time.Now().Add(waitTimeout)
					for {
						call(t, i, k.touchTool, k.touchURI(k.uri(i)))
						nt := notes[i]
						nt.mu.Lock()
						got := slices.Contains(nt.updated, k.uri(i))
						nt.mu.Unlock()
						if got {
							break
						}
						if time.Now().After(deadline) {
							t.Fatalf("session %d got no resources/updated for %s within %v", i, k.uri(i), waitTimeout)
						}
						time.Sleep(100 * time.Millisecond)
					}
				}
				for i, nt := range notes {
					nt.mu.Lock()
					for _, u := range nt.updated {
						if u != k.uri(i) {
							t.Errorf("session %d got resources/updated for %s, which only another session subscribed to", i, u)
						}
					}
					nt.mu.Unlock()
				}
			})

			t.Run("close", func(t *testing.T) {
				for i, cs := range sessions {
					if err := cs.Close(); err != nil {
						t.Errorf("session %d: Close (DELETE): %v", i, err)
					}
				}
				for i, f := range frames {
					serveNoCrossTalk(t, i, f.all())
				}
			})
		})
	}
}

// TestServeTaskInput: 16 sessions at once each run a task that needs input
// (needs_input) and wait for it with tasks/result: the proxy's question
// (elicitation/create, related to the task) travels on that tasks/result
// POST's stream of the session that owns the task, and the session's own
// answer completes its own task.
func TestServeTaskInput(t *testing.T) {
	t.Parallel()
	up := newServeUp(t, demo.Handler(), true)
	s := startServe(t, "--state-file", filepath.Join(t.TempDir(), "tasks.json"), up.URL)
	serveConcurrently(t, func(t *testing.T, i int) {
		tag := serveTag(i)
		f := newServeFrames(t, false)
		c := s.rawSession(t, f)
		var related []string
		c.answer = func(req gjson.Result) string {
			if req.Get("method").String() != "elicitation/create" {
				return ""
			}
			related = append(related, req.Get("params."+tkRelatedTask).String())
			return `{"action":"accept","content":{"name":"` + tag + `"}}`
		}
		c.initialize(`{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{},"tasks":{"list":{},"cancel":{}}},"clientInfo":{"name":"e2e-serve","version":"1"}}`)
		resp := c.call(`"task"`, "tools/call", `{"name":"needs_input","arguments":{},"task":{"ttl":60000}}`)
		id := resultOf(t, resp).Get("task.taskId").String()
		if id == "" {
			t.Fatalf("task-augmented needs_input: want a CreateTaskResult, got %s", shortBytes(resp))
		}
		res := resultOf(t, c.call(`"result"`, "tasks/result", tkTaskParams(id)))
		if got := tkText(res); got != "hello, "+tag {
			t.Errorf("tasks/result = %q, want %q (this session's answer)", got, "hello, "+tag)
		}
		c.mu.Lock()
		asked := slices.Clone(c.asked)
		c.mu.Unlock()
		if !slices.Equal(asked, []string{"elicitation/create"}) || !slices.Equal(related, []string{id}) {
			t.Errorf("asked %v related to tasks %v on the tasks/result stream, want one elicitation/create related to %s", asked, related, id)
		}
		serveNoCrossTalk(t, i, f.all())
	})
}

// TestServeTaskReread: a task outlives the session that made it: after
// that session ends, a new session of the same client (the same bearer)
// re-reads it by id, as a client does after a replica died; the new
// session's tasks/list still shows only its own tasks.
func TestServeTaskReread(t *testing.T) {
	t.Parallel()
	const token = "e2e-serve-reread-token"
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	up := newServeUp(t, demo.Handler(), true)
	s := startServe(t, "--auth-token-file", file, "--state-file", filepath.Join(t.TempDir(), "tasks.json"), up.URL)
	f := newServeFrames(t, false)
	handshake := `{"protocolVersion":"2025-11-25","capabilities":{"tasks":{"list":{},"cancel":{}}},"clientInfo":{"name":"e2e-serve","version":"1"}}`

	first := s.rawSession(t, f)
	first.header.Set("Authorization", "Bearer "+token)
	first.initialize(handshake)
	resp := first.call(`"task"`, "tools/call", `{"name":"slow","arguments":{"ms":200},"task":{"ttl":60000}}`)
	id := resultOf(t, resp).Get("task.taskId").String()
	if id == "" {
		t.Fatalf("task-augmented slow: want a CreateTaskResult, got %s", shortBytes(resp))
	}
	serveEndSession(t, first)

	second := s.rawSession(t, f)
	second.header.Set("Authorization", "Bearer "+token)
	second.initialize(handshake)
	deadline := time.Now().Add(waitTimeout)
	for n := 0; ; n++ {
		view := resultOf(t, second.call(fmt.Sprintf(`"get-%d"`, n), "tasks/get", tkTaskParams(id)))
		if view.Get("taskId").String() != id {
			t.Fatalf("tasks/get from a new session answered task %q, want %s", view.Get("taskId").String(), id)
		}
		if view.Get("status").String() == "completed" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the task did not complete within %v: %s", waitTimeout, view.Raw)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := tkText(resultOf(t, second.call(`"result"`, "tasks/result", tkTaskParams(id)))); got != "slept 200 ms" {
		t.Errorf("tasks/result from a new session = %q, want slept 200 ms", got)
	}
	if list := resultOf(t, second.call(`"list"`, "tasks/list", `{}`)).Get("tasks").Array(); len(list) != 0 {
		t.Errorf("the new session's tasks/list shows %d tasks, want none of its own: %v", len(list), list)
	}
}
