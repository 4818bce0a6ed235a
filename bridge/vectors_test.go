package bridge

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
	"golang.org/x/tools/txtar"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/schematest"
)

// TestSpecVectors replays the spec's task, MRTR and subscription vectors (05–15)
// through a real Session against a scripted upstream: every frame the
// session writes or POSTs must equal the vector's (volatile values — minted
// ids, proxy timestamps, synthetic task ids — are learned, not compared),
// must validate against the schemas, and the whole exchange is kept as a
// txtar transcript in ../testdata/golden/session (regenerate with -update).
//
// Each vector runs in a fresh session initialized from vector 01 that has
// listed the tools as in vector 03. Vectors 06–10 continue a task, so they
// run after vector 05 created it.
var updateVectors = flag.Bool("update", false, "rewrite ../testdata/golden/session from the replays")

var sessionVectors = []struct {
	name  string
	after string // a vector replayed first in the same session
	fresh bool   // the vector starts with notifications/initialized itself
}{
	{"05-tools-call-task-augmented.json", "", false},
	{"06-tasks-get-and-result-completed.json", "05-tools-call-task-augmented.json", false},
	{"07-tasks-failed.json", "05-tools-call-task-augmented.json", false},
	{"08-tasks-completed-iserror.json", "05-tools-call-task-augmented.json", false},
	{"09-tasks-cancel.json", "05-tools-call-task-augmented.json", false},
	{"10-task-input-required.json", "05-tools-call-task-augmented.json", false},
	{"11-mrtr-tools-call.json", "", false},
	{"12-mrtr-url-elicitation.json", "", false},
	{"13-unsolicited-task-driven-internally.json", "", false},
	{"14-sync-answer-to-task-request.json", "", false},
	{"15-subscriptions.json", "", true},
}

const vectorGoldenDir = "../testdata/golden/session"

func TestSpecVectors(t *testing.T) {
	v := schematest.Load(t)
	for _, tv := range sessionVectors {
		t.Run(strings.TrimSuffix(tv.name, ".json"), func(t *testing.T) {
			r := newReplayer(t, v)
			r.initialize(!tv.fresh)
			if tv.after != "" {
				r.replay(schematest.LoadVector(t, tv.after))
			}
			r.transcript.Files, r.n = nil, 0 // the transcript is the vector's own part
			r.replay(schematest.LoadVector(t, tv.name))
			file := filepath.Join(vectorGoldenDir, strings.TrimSuffix(tv.name, ".json")+".txtar")
			got := txtar.Format(&r.transcript)
			if *updateVectors {
				if err := os.MkdirAll(vectorGoldenDir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(file, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("%v (run go test ./bridge -run TestSpecVectors -update)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("the transcript differs from %s (review, then run go test ./bridge -run TestSpecVectors -update):\n%s", file, got)
			}
		})
	}
}

// post is one HTTP request the session made, waiting for its answer.
type post struct {
	body   []byte
	header http.Header
	answer chan func(http.ResponseWriter, *http.Request)
}

// stream is an open subscriptions/listen response: more events can be
// written to it, and done closes when the session closes it.
type stream struct {
	events chan []byte
	done   chan struct{}
}

type replayer struct {
	t             *testing.T
	v             *schematest.Validator
	h             *harness
	posts         chan post
	listens       chan post          // subscriptions/listen requests, apart
	streams       map[string]*stream // by the vector's listen id
	pending       *post
	upID          string            // the id of the pending upstream request
	learned       map[string]string // vector placeholder -> actual value
	streamIDs     map[string]string // vector listen id -> actual upstream id
	pendingStream string            // the vector id of a listen awaiting its answer
	transcript    txtar.Archive
	n             int
}

func newReplayer(t *testing.T, v *schematest.Validator) *replayer {
	r := &replayer{t: t, v: v, posts: make(chan post), listens: make(chan post), streams: map[string]*stream{}, learned: map[string]string{}, streamIDs: map[string]string{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		p := post{body: b, header: req.Header.Clone(), answer: make(chan func(http.ResponseWriter, *http.Request), 1)}
		queue := r.posts
		if gjson.GetBytes(b, "method").String() == "subscriptions/listen" {
			queue = r.listens
		}
		select {
		case queue <- p:
		case <-req.Context().Done():
			return
		}
		select {
		case write := <-p.answer:
			write(w, req)
		case <-req.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	r.h = start(t, srv.URL, Config{})
	return r
}

// initialize replays vector 01's handshake (its discover declares the tasks
// extension and list changes, and its client the capabilities every vector
// assumes). With ready, the client then sends notifications/initialized, the
// list-change stream is acknowledged and kept open, and the tools are listed
// as in vector 03.
func (r *replayer) initialize(ready bool) {
	vec := schematest.LoadVector(r.t, "01-initialize-from-discover.json")
	r.h.send(string(compactJSON(r.t, vec.Steps[0].Frame)))
	p := r.nextPost()
	id := gjson.GetBytes(p.body, "id").Raw
	resp, _ := sjson.SetRawBytes(compactJSON(r.t, vec.Steps[2].Frame), "id", []byte(id))
	p.answer <- jsonAnswer(200, resp)
	if res := r.h.next(); !gjson.Get(res, "result.capabilities.tasks").Exists() {
		r.t.Fatalf("initialize did not advertise tasks: %s", res)
	}
	if !ready {
		return
	}
	r.h.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	// Wait for the list-change stream, so that upstream ids are minted in
	// a fixed order, and keep it open.
	l := r.next(r.listens)
	listenID := gjson.GetBytes(l.body, "id").Raw
	r.openStream(l, "setup", 200, [][]byte{[]byte(`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":` + listenID + `},"notifications":{"toolsListChanged":true,"resourcesListChanged":true}}}`)})
	// The vectors assume the client listed the tools (vector 03): the
	// session knows the x-mcp-header annotations and makes no listing of
	// its own.
	r.replay(schematest.LoadVector(r.t, "03-tools-list.json"))
}

func (r *replayer) nextPost() post { return r.next(r.posts) }

func (r *replayer) next(queue chan post) post {
	r.t.Helper()
	select {
	case p := <-queue:
		return p
	case <-time.After(wait):
		r.t.Fatal("the session made no upstream request")
	}
	return post{}
}

func jsonAnswer(status int, body []byte) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		w.Write(body)
	}
}

// openStream answers a listen request with an event stream that stays open
// for more events until the session closes it.
func (r *replayer) openStream(p post, name string, status int, events [][]byte) *stream {
	st := &stream{events: make(chan []byte, 16), done: make(chan struct{})}
	r.streams[name] = st
	p.answer <- func(w http.ResponseWriter, req *http.Request) {
		defer close(st.done)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(status)
		write := func(e []byte) {
			fmt.Fprintf(w, "event: message\ndata: %s\n\n", e)
			w.(http.Flusher).Flush()
		}
		for _, e := range events {
			write(e)
		}
		for {
			select {
			case e := <-st.events:
				write(e)
			case <-req.Context().Done():
				return
			}
		}
	}
	return st
}

// sseEvents prepares a step's SSE events: placeholders substituted, and a
// response's id set to the upstream id it answers.
func (r *replayer) sseEvents(st schematest.Step) [][]byte {
	var out [][]byte
	for _, ev := range st.SSE {
		e := r.substitute(compactJSON(r.t, ev))
		if gjson.GetBytes(e, "id").Exists() {
			e, _ = sjson.SetRawBytes(e, "id", []byte(r.upID))
		}
		out = append(out, e)
	}
	return out
}

// substitute replaces learned placeholders in a vector frame.
func (r *replayer) substitute(b []byte) []byte {
	for k, v := range r.streamIDs {
		b = bytes.ReplaceAll(b, []byte(k), []byte(v))
	}
	keys := make([]string, 0, len(r.learned))
	for k := range r.learned {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return len(keys[i]) > len(keys[j]) })
	for _, k := range keys {
		b = bytes.ReplaceAll(b, []byte(k), []byte(r.learned[k]))
	}
	return b
}

// normalize turns actual values back into the vector's placeholders, so the
// transcript does not change from run to run.
func (r *replayer) normalize(b []byte) []byte {
	for k, v := range r.learned {
		b = bytes.ReplaceAll(b, []byte(v), []byte(k))
	}
	return b
}

func (r *replayer) record(dir string, b []byte) {
	r.n++
	r.transcript.Files = append(r.transcript.Files, txtar.File{Name: fmt.Sprintf("%02d/%s", r.n, dir), Data: append(r.normalize(b), '\n')})
}

func (r *replayer) replay(vec *schematest.Vector) {
	t := r.t
	volatile := map[int][]string{} // step -> pointers inside its frame
	for _, p := range vec.Volatile {
		var step int
		var rest string
		if _, err := fmt.Sscanf(p, "/steps/%d/%s", &step, &rest); err == nil && strings.HasPrefix(rest, "frame") {
			volatile[step] = append(volatile[step], strings.TrimPrefix(rest, "frame"))
		}
	}
	var method string // of the last client request, for validation
	for i, st := range vec.Steps {
		where := fmt.Sprintf("%s step %d (%s)", vec.File, i, st.Dir)
		switch st.Dir {
		case "client->proxy":
			frame := r.substitute(compactJSON(t, st.Frame))
			if m := gjson.GetBytes(frame, "method"); m.Exists() && gjson.GetBytes(frame, "id").Exists() {
				method = m.String()
			}
			r.record("client-to-proxy", frame)
			r.h.send(string(frame))
		case "proxy->server":
			if st.Action == "close-stream" {
				str := r.streams[st.Stream]
				if str == nil {
					t.Fatalf("%s: no stream %s", where, st.Stream)
				}
				select {
				case <-str.done:
				case <-time.After(wait):
					t.Fatalf("%s: the session did not close stream %s", where, st.Stream)
				}
				r.record("proxy-closes-stream", []byte(st.Stream))
				continue
			}
			want := compactJSON(t, st.Frame)
			queue := r.posts
			if gjson.GetBytes(want, "method").String() == "subscriptions/listen" {
				queue = r.listens
			}
			p := r.next(queue)
			r.pending = &p
			r.upID = gjson.GetBytes(p.body, "id").Raw
			if wid := gjson.GetBytes(want, "id"); queue == r.listens && wid.Type == gjson.String {
				// The subscriptionId of this stream's notifications.
				r.streamIDs[wid.Raw] = r.upID
				r.pendingStream = wid.Str
			}
			r.record("proxy-to-server", append(headerLines(p.header), p.body...))
			if err := r.v.ValidateUpstream(p.body); err != nil {
				t.Errorf("%s: %v", where, err)
			}
			assertSameJSON(t, where, p.body, r.substitute(want), []string{"/id"})
			gjson.GetBytes(st.HTTP, "headers").ForEach(func(k, v gjson.Result) bool {
				if got := p.header.Get(k.Str); got != string(r.substitute([]byte(v.Str))) {
					t.Errorf("%s: header %s = %q, want %q", where, k.Str, got, v.Str)
				}
				return true
			})
		case "server->proxy":
			if name := gjson.GetBytes(st.HTTP, "stream"); name.Exists() {
				str := r.streams[name.Str]
				if str == nil {
					t.Fatalf("%s: no stream %s", where, name.Str)
				}
				for _, e := range r.sseEvents(st) {
					str.events <- e
					r.record("server-to-proxy", e)
				}
				continue
			}
			if r.pending == nil {
				t.Fatalf("%s: no upstream request to answer", where)
			}
			status := int(gjson.GetBytes(st.HTTP, "status").Int())
			var body []byte
			if r.pendingStream != "" {
				events := r.sseEvents(st)
				r.openStream(*r.pending, r.pendingStream, status, events)
				r.record("server-to-proxy", bytes.Join(events, []byte("\n")))
				r.pending, r.pendingStream = nil, ""
				continue
			}
			if st.Frame != nil {
				body, _ = sjson.SetRawBytes(r.substitute(compactJSON(t, st.Frame)), "id", []byte(r.upID))
				r.pending.answer <- jsonAnswer(status, body)
			} else {
				var sse bytes.Buffer
				for _, ev := range st.SSE {
					e := r.substitute(compactJSON(t, ev))
					if gjson.GetBytes(e, "id").Exists() {
						e, _ = sjson.SetRawBytes(e, "id", []byte(r.upID))
					}
					fmt.Fprintf(&sse, "event: message\ndata: %s\n\n", e)
				}
				body = sse.Bytes()
				r.pending.answer <- func(w http.ResponseWriter, _ *http.Request) {
					w.Header().Set("Content-Type", "text/event-stream")
					w.WriteHeader(status)
					w.Write(body)
				}
			}
			r.record("server-to-proxy", body)
			r.pending = nil
		case "proxy->client":
			got := []byte(r.nextClientFrame(method))
			want := compactJSON(t, st.Frame)
			r.learn(want, got, volatile[i])
			assertSameJSON(t, where, got, r.substitute(want), volatile[i])
			r.record("proxy-to-client", got)
		}
	}
}

// nextClientFrame reads the next frame for the client, validating it and
// skipping notifications/tasks/status, which the vectors leave out (the
// proxy may send them on any status change it sees).
func (r *replayer) nextClientFrame(method string) string {
	for {
		f := r.h.next()
		m := gjson.Get(f, "method").String()
		vm := method
		if gjson.Get(f, "method").Exists() {
			vm = m
		}
		if err := r.v.ValidateClientBound([]byte(f), vm); err != nil {
			r.t.Errorf("client frame %s: %v", f, err)
		}
		if err := schematest.CheckLegacyClean([]byte(f), vm); err != nil {
			r.t.Errorf("client frame %s: %v", f, err)
		}
		if m != "notifications/tasks/status" {
			return f
		}
	}
}

// learn records what the session chose for the vector's volatile values.
func (r *replayer) learn(want, got []byte, pointers []string) {
	for _, p := range pointers {
		path := pointerToPath(p)
		w, g := gjson.GetBytes(want, path), gjson.GetBytes(got, path)
		if w.Exists() && g.Exists() && w.Raw != g.Raw {
			r.learned[w.Raw] = g.Raw
		}
	}
}

// pointerToPath turns a JSON pointer into a gjson path.
func pointerToPath(p string) string {
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for i, s := range parts {
		s = strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
		parts[i] = gjson.Escape(s)
	}
	return strings.Join(parts, ".")
}

func headerLines(h http.Header) []byte {
	var names []string
	for k := range h {
		if strings.HasPrefix(k, "Mcp-") || k == "Content-Type" || k == "Accept" {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	var b bytes.Buffer
	for _, k := range names {
		fmt.Fprintf(&b, "%s: %s\n", k, h.Get(k))
	}
	b.WriteByte('\n')
	return b.Bytes()
}

func compactJSON(t *testing.T, b []byte) []byte {
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// assertSameJSON compares two frames as JSON, ignoring the given pointers.
func assertSameJSON(t *testing.T, where string, got, want []byte, ignore []string) {
	t.Helper()
	for _, p := range ignore {
		got, _ = sjson.DeleteBytes(got, pointerToPath(p))
		want, _ = sjson.DeleteBytes(want, pointerToPath(p))
	}
	var g, w any
	dg := json.NewDecoder(bytes.NewReader(got))
	dg.UseNumber()
	dw := json.NewDecoder(bytes.NewReader(want))
	dw.UseNumber()
	if err := dg.Decode(&g); err != nil {
		t.Fatalf("%s: not JSON: %s", where, got)
	}
	if err := dw.Decode(&w); err != nil {
		t.Fatalf("%s: vector frame not JSON: %s", where, want)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("%s differs from the spec vector:\n got: %s\nwant: %s", where, got, want)
	}
}
