package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/capabilities"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/protocol"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/routing"
)

const rewriteHelp = `mcp-tasks-proxy rewrite shows what the bridge does to frames, offline: no
network, no server. It reads one JSON-RPC frame per line on stdin.

Usage:
  mcp-tasks-proxy rewrite --up   [flags] < legacy-frames     what the proxy POSTs upstream
  mcp-tasks-proxy rewrite --down [flags] < modern-frames     what the legacy client gets

Flags:
  --client-caps JSON|@FILE   the legacy client's initialize capabilities (default {})
  --client-info JSON|@FILE   the legacy client's clientInfo (default {"name":"client","version":"0"})
  --log-level LEVEL          a logging/setLevel level to stamp on requests
  --discover JSON|@FILE      the server's DiscoverResult: --up shows initialize's answer from it;
                             --down marks tools for tasks when it declares the tasks extension
  --method METHOD            --down: the method the frames answer (default tools/call)
  --id JSON                  --down: the client's id to restore (default: keep the frame's id)
  --task-augmented           --down: the client asked for a task (a task result is nested)
  --task-iserror MODE        --down: completed (default) or failed
  --help, -h                 print this help and exit

Examples:
  echo '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}' |
    mcp-tasks-proxy rewrite --up --client-caps '{"elicitation":{}}'
  echo '{"jsonrpc":"2.0","id":7,"result":{"resultType":"task","taskId":"t1","status":"working","createdAt":"2026-01-01T00:00:00Z","lastUpdatedAt":"2026-01-01T00:00:00Z","ttlMs":60000}}' |
    mcp-tasks-proxy rewrite --down --task-augmented --id 1
`

// rewriteFlagSet is rewrite's flag set (also read by completion).
func rewriteFlagSet() (*flag.FlagSet, *rewriter) {
	fs := flag.NewFlagSet("rewrite", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	o := &rewriter{}
	for name, p := range map[string]*bool{"up": &o.up, "down": &o.down, "task-augmented": &o.augmented, "help": &o.help, "h": &o.help} {
		fs.BoolVar(p, name, false, "")
	}
	for name, p := range map[string]*string{"client-caps": &o.capsFlag, "client-info": &o.info, "log-level": &o.level,
		"discover": &o.discover, "method": &o.method, "id": &o.id, "task-iserror": &o.isError} {
		fs.StringVar(p, name, rewriteDefaults[name], "")
	}
	return fs, o
}

var rewriteDefaults = map[string]string{"client-caps": "{}", "client-info": `{"name":"client","version":"0"}`,
	"method": "tools/call", "task-iserror": "completed"}

// rewriteCommand runs `mcp-tasks-proxy rewrite`.
func rewriteCommand(args []string, stdin io.Reader, stdout, stderr io.Writer, _ func(string) string) int {
	fs, r := rewriteFlagSet()
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "mcp-tasks-proxy rewrite: "+format+"\n", a...)
		return 2
	}
	if err := fs.Parse(args); err != nil {
		return fail("%s", flagProblem(err, fs, "mcp-tasks-proxy rewrite --help"))
	}
	if r.help {
		fmt.Fprint(stdout, rewriteHelp)
		return 0
	}
	if fs.NArg() > 0 {
		return fail("unexpected argument %q: the frames come on stdin; run mcp-tasks-proxy rewrite --help", fs.Arg(0))
	}
	if r.up == r.down {
		return fail("give exactly one of --up and --down")
	}
	values := map[string]*string{"--client-caps": &r.capsFlag, "--client-info": &r.info, "--discover": &r.discover}
	for name, v := range values {
		b, err := jsonFlag(name, *v) // JSON, or @FILE holding it
		switch {
		case err != nil:
			return fail("%v", err)
		case b != nil && !gjson.ValidBytes(b):
			return fail("%s: not valid JSON", name)
		}
		*v = string(rewrite.TrimFrame(b))
	}
	if r.id != "" && !gjson.Valid(r.id) {
		return fail("--id %s is not a JSON value (a string id needs quotes: --id '\"abc\"')", r.id)
	}
	r.out, r.caps = bufio.NewWriter(stdout), capabilities.ClientCapabilities([]byte(r.capsFlag))
	r.tasks = rewrite.TaskOptions{IsErrorFailed: r.isError == "failed"}
	r.meta = capabilities.Meta(r.caps, []byte(r.info), r.level)
	defer r.out.Flush()
	lr := bufio.NewReaderSize(stdin, 1<<20)
	for n := 1; ; n++ {
		line, err := lr.ReadBytes('\n')
		if t := rewrite.TrimFrame(line); len(t) > 0 {
			if n > 1 {
				fmt.Fprintln(r.out)
			}
			if r.up {
				r.upFrame(t)
			} else {
				r.downFrame(t)
			}
		}
		if err != nil {
			return 0
		}
	}
}

// rewriter is rewrite's command line, and what the frames it has read
// have changed of it, as in a session.
type rewriter struct {
	up, down, augmented, help                            bool
	capsFlag, info, level, discover, method, id, isError string
	out                                                  *bufio.Writer
	caps                                                 []byte // mapped client capabilities
	meta                                                 rewrite.MetaBlock
	tasks                                                rewrite.TaskOptions
	upID                                                 int64
}

func (r *rewriter) mint() []byte {
	r.upID++
	return strconv.AppendInt(nil, r.upID, 10)
}

// post prints one upstream request: headers, a blank line, the body.
func (r *rewriter) post(body []byte) {
	h := routing.Headers(body, nil)
	fmt.Fprintln(r.out, "POST <upstream URL>")
	for _, k := range slices.Sorted(maps.Keys(h)) {
		fmt.Fprintf(r.out, "%s: %s\n", k, h.Get(k))
	}
	fmt.Fprintf(r.out, "\n%s\n", body)
}

func (r *rewriter) upFrame(line []byte) {
	f, err := rewrite.Parse(line)
	if err != nil {
		fmt.Fprintf(r.out, "→ client (error): %s\n", rewrite.ErrorFrame([]byte(f.ID.Raw), rewrite.Code(err), err.Error(), nil))
		return
	}
	id := []byte(f.ID.Raw)
	// The session's rules, from the same method table and functions.
	local := protocol.LocalOf(f.Method)
	switch {
	case f.Kind == rewrite.KindNotification:
		fmt.Fprintf(r.out, "consumed by the proxy: %s sends nothing upstream\n", f.Method)
	case f.Kind == rewrite.KindResponse:
		fmt.Fprintln(r.out, "a response: routed to the request the proxy sent the client; nothing upstream")
	case local == protocol.LocalAnswer:
		if f.Method == "logging/setLevel" {
			r.level = f.Params.Get("level").String()
			r.meta = capabilities.Meta(r.caps, []byte(r.info), r.level)
		}
		fmt.Fprintf(r.out, "answered locally: %s\n", rewrite.ResultFrame(id, []byte(`{}`)))
	case local == protocol.LocalInitialize:
		// The client's own capabilities and clientInfo win over the flags,
		// as in a session; the log level carries over.
		r.caps = capabilities.ClientCapabilities([]byte(f.Params.Get("capabilities").Raw))
		if ci := f.Params.Get("clientInfo"); ci.IsObject() {
			r.info = ci.Raw
		}
		r.meta = capabilities.Meta(r.caps, []byte(r.info), r.level)
		r.post(capabilities.DiscoverBody(r.mint(), r.meta))
		if len(r.discover) > 0 {
			res := capabilities.InitializeResult([]byte(r.discover), capabilities.InitializeOptions{
				RequestedVersion: f.Params.Get("protocolVersion").String(), Tasks: true, Subscriptions: true})
			fmt.Fprintf(r.out, "answered locally from the DiscoverResult: %s\n", rewrite.ResultFrame(id, res))
		}
	default:
		if e, ok := rewrite.CheckNameParam(&f); !ok {
			fmt.Fprintf(r.out, "→ client (error): %s\n", e.Frame(id, nil))
			return
		}
		body, err := rewrite.RequestUp(&f, rewrite.UpFor(&f, r.mint(), r.meta, nil))
		if err != nil {
			fmt.Fprintf(r.out, "→ client (error): %s\n", rewrite.ErrorFrame(id, rewrite.Code(err), err.Error(), nil))
			return
		}
		r.post(body)
	}
}

func (r *rewriter) downFrame(line []byte) {
	f, err := rewrite.Parse(line)
	if err != nil {
		fmt.Fprintf(r.out, "invalid upstream frame: %v\n", err)
		return
	}
	if f.Kind != rewrite.KindResponse {
		if f.Params.Get(gjson.Escape(protocol.MetaSubscriptionID)).Exists() || f.Params.Get("_meta."+gjson.Escape(protocol.MetaSubscriptionID)).Exists() {
			fmt.Fprintf(r.out, "→ client: %s\n", rewrite.ListenNotification(&f))
			return
		}
		fmt.Fprintf(r.out, "→ client: %s\n", f.Raw)
		return
	}
	id := []byte(r.id)
	if len(id) == 0 {
		id = []byte(f.ID.Raw)
	}
	tasks := gjson.Get(r.discover, "capabilities.extensions."+gjson.Escape(protocol.TasksExtension)).Exists()
	d, err := rewrite.ResponseDown(&f, rewrite.Down{ID: id, Method: r.method, TaskSupport: tasks})
	if err != nil {
		fmt.Fprintf(r.out, "invalid upstream result: %v\n", err)
		return
	}
	switch {
	case protocol.AnswerOf(r.method) == protocol.AnswerTaskView && !d.IsError:
		t := rewrite.ReadTask(f.Result)
		fmt.Fprintf(r.out, "→ client [task.view ttl.rename]: %s\n", rewrite.ResultFrame(id, rewrite.TaskResult(t, r.tasks, rewrite.ViewOverride{})))
	case d.ResultType == protocol.ResultTask && protocol.MayBecomeTask(r.method) && r.augmented:
		t := rewrite.ReadTask(f.Result)
		fmt.Fprintf(r.out, "→ client [task.nest ttl.rename]: %s\n", rewrite.ResultFrame(id, rewrite.CreateTaskResult(t, r.tasks)))
	case d.ResultType == protocol.ResultTask && protocol.MayBecomeTask(r.method):
		fmt.Fprintln(r.out, "the proxy follows this task (tasks/get polls) and answers with its final result")
	case d.ResultType == protocol.ResultInputRequired && protocol.InputRequired(r.method):
		fmt.Fprintln(r.out, "the proxy asks the client for each inputRequests entry, then retries with inputResponses and requestState")
	case d.ResultType != protocol.ResultComplete:
		// As in the session: a task only for a method that may become
		// one, input_required only for one that may ask.
		fmt.Fprintf(r.out, "invalid upstream result: resultType %q\n", d.ResultType)
	default:
		fmt.Fprintf(r.out, "→ client [%s]: %s\n", strings.Join(d.Rewrites, " "), d.Frame)
		for _, t := range d.Rejected {
			fmt.Fprintf(r.out, "  tool %s removed: %s\n", t.Tool, t.Reason)
		}
	}
}
