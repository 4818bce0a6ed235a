package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/tidwall/gjson"
)

// The floor target: the smallest correct stdio bridge from a 2025-11-25
// client to a 2026-07-28 server, written the obvious way, to show what any
// such bridge pays before the proxy's own work.
//
// The bench re-executes its own binary with floorEnv set to the server's
// URL (an environment variable, not a flag: it is no user's business). The
// floor:
//   - answers initialize itself, and drops the client's notifications;
//   - turns every other line into a POST on one kept-alive client, with the
//     _meta envelope spliced into params (protocol version, client
//     capabilities with the tasks extension, client info) and the MCP
//     headers (MCP-Protocol-Version, Mcp-Method, Mcp-Name, Base64 sentinel
//     where a name is not header-safe);
//   - gives each request a goroutine of its own, which reads a JSON or SSE
//     answer, removes the 2026-only members of a result (resultType, the
//     serverInfo _meta) in the buffer it was read into, follows a task
//     (waits pollIntervalMs, then tasks/get until it ends) and writes the
//     answer as one line under a mutex.
//
// What it leaves out, and the proxy does not: ids of its own, cancellation,
// MRTR, the tasks/* methods of a 2025 client, timeouts beyond a fixed bound,
// retries, capability mapping, error translation, OAuth, tracing, a 2025
// server.

// floorEnv, when set to a URL, turns this binary into the floor bridge.
const floorEnv = "MCP_TASKS_BENCH_FLOOR"

// floorProfileEnv, when set to a path, makes the floor write a CPU profile
// of its run there (--proxy-cpuprofile profiles the floor too).
const floorProfileEnv = "MCP_TASKS_BENCH_FLOOR_CPUPROFILE"

// floorBound is the longest any one request may take in the floor, task
// polling included.
const floorBound = 10 * time.Minute

// floorMain runs the bridge until stdin ends and every request in flight is
// answered; it returns the exit status.
func floorMain(url string) int {
	tr := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
		MaxIdleConns:        1024,
		MaxIdleConnsPerHost: 1024,
		IdleConnTimeout:     90 * time.Second,
	}
	if path := os.Getenv(floorProfileEnv); path != "" {
		pf, err := os.Create(path)
		if err == nil {
			err = pprof.StartCPUProfile(pf)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "mcp-tasks-bench floor: CPU profile:", err)
			return 1
		}
		defer func() {
			pprof.StopCPUProfile()
			_ = pf.Close()
		}()
	}
	f := &floor{url: url, client: &http.Client{Transport: tr}, out: os.Stdout}
	err := f.serve(os.Stdin)
	tr.CloseIdleConnections()
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcp-tasks-bench floor:", err)
		return 1
	}
	return 0
}

type floor struct {
	url    string
	client *http.Client
	ids    atomic.Int64 // ids of the floor's own tasks/get

	mu  sync.Mutex // serializes stdout lines
	out io.Writer
	err error // the first stdout write error
}

func (f *floor) serve(in io.Reader) error {
	br := bufio.NewReaderSize(in, 64<<10)
	var wg sync.WaitGroup
	for {
		line, err := br.ReadBytes('\n')
		if line = bytes.TrimRight(line, "\r\n"); len(line) > 0 {
			f.dispatch(&wg, line)
		}
		if err != nil {
			wg.Wait()
			if err == io.EOF {
				err = nil
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			return errors.Join(err, f.err)
		}
	}
}

func (f *floor) dispatch(wg *sync.WaitGroup, line []byte) {
	r := gjson.GetManyBytes(line, "id", "method", "params")
	id, method, params := r[0], r[1], r[2]
	switch {
	case !method.Exists():
		return // an answer from the client: the floor never asks
	case !id.Exists():
		return // a notification: nothing for a stateless server
	case method.Str == "initialize":
		v := params.Get("protocolVersion").String()
		if !isLegacyVersion(v) {
			v = legacyVersion
		}
		f.write([]byte(`{"jsonrpc":"2.0","id":` + id.Raw + `,"result":{"protocolVersion":"` + v +
			`","capabilities":{"tools":{}},"serverInfo":{"name":"mcp-tasks-bench-floor","version":"1"}}}` + "\n"))
		return
	}
	wg.Go(func() { f.forward(line, id.Raw, method.Str, params) })
}

// forward POSTs one request and writes its answer as one line.
func (f *floor) forward(line []byte, id, method string, params gjson.Result) {
	ctx, cancel := context.WithTimeout(context.Background(), floorBound)
	defer cancel()
	frame, err := f.post(ctx, withMeta(line, params), method, mcpName(method, params))
	if err != nil {
		f.fail(id, err)
		return
	}
	if res := gjson.Get(view(frame), "result"); res.Get("resultType").Str == "task" {
		frame, err = f.follow(ctx, id, res)
		if err != nil {
			f.fail(id, err)
			return
		}
	}
	f.write(append(strip2026(frame), '\n'))
}

// follow polls a task until it ends and returns the answer to id.
func (f *floor) follow(ctx context.Context, id string, task gjson.Result) ([]byte, error) {
	tid := task.Get("taskId").String()
	poll := task.Get("pollIntervalMs").Int()
	params := `{"_meta":` + directMeta + `,"taskId":` + quote(tid) + `}`
	for {
		t := time.NewTimer(time.Duration(max(poll, 0)) * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		body := `{"jsonrpc":"2.0","id":"floor-` + strconv.FormatInt(f.ids.Add(1), 10) + `","method":"tasks/get","params":` + params + `}`
		frame, err := f.post(ctx, []byte(body), "tasks/get", tid)
		if err != nil {
			return nil, fmt.Errorf("tasks/get: %w", err)
		}
		g := gjson.GetBytes(frame, "result")
		switch g.Get("status").Str {
		case "completed":
			return []byte(`{"jsonrpc":"2.0","id":` + id + `,"result":` + g.Get("result").Raw + `}`), nil
		case "failed", "cancelled", "":
			return nil, fmt.Errorf("task %s ended: %.300s", tid, frame)
		}
		if p := g.Get("pollIntervalMs"); p.Exists() {
			poll = p.Int()
		}
	}
}

// post sends body with the MCP headers and returns the JSON-RPC answer, from
// a JSON body or an SSE stream (whose notifications are written through).
func (f *floor) post(ctx context.Context, body []byte, method, name string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	h := req.Header
	h["Content-Type"] = []string{"application/json"}
	h["Accept"] = []string{"application/json, text/event-stream"}
	h["Mcp-Protocol-Version"] = []string{modernVersion}
	h["Mcp-Method"] = []string{method}
	if name != "" {
		h["Mcp-Name"] = []string{headerSafe(name)}
	}
	resp, err := f.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := readBody(resp)
	if err != nil {
		return nil, err
	}
	ct := resp.Header.Get("Content-Type")
	switch {
	case strings.HasPrefix(ct, "text/event-stream"):
		return sseAnswer(b, func(note []byte) { f.write(append(append([]byte(nil), note...), '\n')) })
	case strings.HasPrefix(ct, "application/json") && gjson.GetBytes(b, "id").Exists():
		return b, nil
	}
	return nil, fmt.Errorf("HTTP %d, Content-Type %q: %.200s", resp.StatusCode, ct, b)
}

// sseAnswer returns the data of the stream's answer (the event whose data
// has an id), passing the notifications before it to note. An event of one
// data line is returned in place.
func sseAnswer(b []byte, note func([]byte)) ([]byte, error) {
	for len(b) > 0 {
		var event []byte
		if i := bytes.Index(b, []byte("\n\n")); i >= 0 {
			event, b = b[:i], b[i+2:]
		} else {
			event, b = b, nil
		}
		var data []byte
		lines := 0
		for len(event) > 0 {
			var l []byte
			if i := bytes.IndexByte(event, '\n'); i >= 0 {
				l, event = event[:i], event[i+1:]
			} else {
				l, event = event, nil
			}
			if v, ok := bytes.CutPrefix(l, []byte("data:")); ok {
				v = bytes.TrimPrefix(v, []byte(" "))
				if lines == 0 {
					data = v
				} else {
					data = append(append(append([]byte(nil), data...), '\n'), v...)
				}
				lines++
			}
		}
		if lines == 0 {
			continue
		}
		r := gjson.GetManyBytes(data, "id", "method")
		if r[0].Exists() && !r[1].Exists() {
			return data, nil
		}
		if r[1].Exists() && !r[0].Exists() {
			note(data)
		}
	}
	return nil, errors.New("the SSE stream ended without an answer")
}

// withMeta splices the 2026 _meta envelope into a request's params.
func withMeta(line []byte, params gjson.Result) []byte {
	keys := directMeta[1 : len(directMeta)-1]
	var at int
	var ins string
	switch meta := params.Get("_meta"); {
	case !params.Exists():
		// Before the frame's closing brace.
		at = bytes.LastIndexByte(line, '}')
		ins = `,"params":{"_meta":` + directMeta + `}`
	case meta.IsObject() && meta.Index > 0:
		at = meta.Index + 1
		ins = keys
		if strings.TrimSpace(meta.Raw[1:len(meta.Raw)-1]) != "" {
			ins += ","
		}
	default:
		at = params.Index + 1
		ins = `"_meta":` + directMeta
		if strings.TrimSpace(params.Raw[1:len(params.Raw)-1]) != "" {
			ins += ","
		}
	}
	out := make([]byte, 0, len(line)+len(ins))
	out = append(out, line[:at]...)
	out = append(out, ins...)
	return append(out, line[at:]...)
}

// mcpName is the Mcp-Name header's value for method, "" for none.
func mcpName(method string, params gjson.Result) string {
	switch method {
	case "tools/call", "prompts/get":
		return params.Get("name").String()
	case "resources/read":
		return params.Get("uri").String()
	case "tasks/get", "tasks/update", "tasks/cancel":
		return params.Get("taskId").String()
	}
	return ""
}

// headerSafe returns v, or its Base64 sentinel when v is not printable
// ASCII or has spaces at either end.
func headerSafe(v string) string {
	safe := v == strings.TrimSpace(v)
	for i := 0; safe && i < len(v); i++ {
		safe = v[i] >= 0x20 && v[i] < 0x7f
	}
	if safe {
		return v
	}
	return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(v)) + "?="
}

// view is b as a string, without a copy (gjson.GetBytes copies what it
// returns: a second copy of a large result). b must not change while the
// view is in use.
func view(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// strip2026 removes from an answer's result the members a 2025 client must
// not see: resultType, and the serverInfo member of _meta (_meta itself
// when nothing else is left in it). It rewrites the frame in its own
// buffer: every member kept moves down, never up.
func strip2026(frame []byte) []byte {
	res := gjson.Get(view(frame), "result")
	if !res.IsObject() || res.Index <= 0 || res.Index+len(res.Raw) > len(frame) || frame[res.Index] != '{' {
		return frame
	}
	if !res.Get("resultType").Exists() && !res.Get(`_meta.io\.modelcontextprotocol/serverInfo`).Exists() {
		return frame
	}
	// First the members to keep, as spans of the frame or (for _meta) a
	// replacement; then the moves, once nothing reads the frame any more.
	type member struct {
		from, to int
		repl     string
	}
	var keep []member
	res.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "resultType":
		case "_meta":
			if m := dropMember(v, "io.modelcontextprotocol/serverInfo"); m != "{}" {
				keep = append(keep, member{repl: `"_meta":` + m})
			}
		default:
			keep = append(keep, member{from: k.Index, to: v.Index + len(v.Raw)})
		}
		return true
	})
	end := res.Index + len(res.Raw)
	w := res.Index + 1
	for i, m := range keep {
		if i > 0 {
			frame[w] = ','
			w++
		}
		if m.repl != "" {
			w += copy(frame[w:], m.repl)
		} else {
			w += copy(frame[w:], frame[m.from:m.to])
		}
	}
	frame[w] = '}'
	w++
	w += copy(frame[w:], frame[end:])
	return frame[:w]
}

// dropMember returns obj without its member key.
func dropMember(obj gjson.Result, key string) string {
	if !obj.IsObject() {
		return obj.Raw
	}
	var b strings.Builder
	b.WriteByte('{')
	obj.ForEach(func(k, v gjson.Result) bool {
		if k.Str != key {
			if b.Len() > 1 {
				b.WriteByte(',')
			}
			b.WriteString(k.Raw + ":" + v.Raw)
		}
		return true
	})
	b.WriteByte('}')
	return b.String()
}

// fail answers a request the floor could not forward with a JSON-RPC
// error, so that the bench reports it instead of waiting for an answer.
func (f *floor) fail(id string, err error) {
	f.write([]byte(`{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32603,"message":` + quote("floor: "+err.Error()) + "}}\n"))
}

func (f *floor) write(b []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return
	}
	if _, err := f.out.Write(b); err != nil {
		f.err = fmt.Errorf("write to stdout: %w", err)
	}
}
