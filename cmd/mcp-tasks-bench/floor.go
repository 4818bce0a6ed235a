package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"
)

// The floor target: the smallest stdio→HTTP forwarder, to show what a
// second process and its pipes cost before any bridge does any work.
//
// The bench re-executes its own binary with floorEnv set to the server's
// URL (an environment variable, not a flag: it is no user's business). The
// forwarder reads stdin one line at a time; each line goes out as the body
// of a POST, in its own goroutine so that requests in flight overlap, with
// the 2025-11-25 headers; a JSON answer is written to stdout as one line, a
// 202 (a notification) writes nothing. It translates nothing: initialize is
// sent as it is, and the bench server answers in its 2025 era (as it does
// for --compare bridges). So the task workload, which needs a 2026 client
// of the tasks extension, does not apply to it.

// floorEnv, when set to a URL, turns this binary into the floor forwarder.
const floorEnv = "MCP_TASKS_BENCH_FLOOR"

// floorMain runs the forwarder until stdin ends and every request in
// flight is answered; it returns the exit status.
func floorMain(url string) int {
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
		MaxIdleConns:        1024,
		MaxIdleConnsPerHost: 1024,
		IdleConnTimeout:     90 * time.Second,
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
			wg.Go(func() { f.forward(line) })
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

// forward POSTs one line and writes the answer, if any, as one line.
func (f *floor) forward(line []byte) {
	req, err := http.NewRequest(http.MethodPost, f.url, bytes.NewReader(line))
	if err != nil {
		f.fail(line, err)
		return
	}
	h := req.Header
	h["Content-Type"] = []string{"application/json"}
	h["Accept"] = []string{"application/json, text/event-stream"}
	h["Mcp-Protocol-Version"] = []string{legacyVersion}
	resp, err := f.client.Do(req)
	if err != nil {
		f.fail(line, err)
		return
	}
	defer resp.Body.Close()
	b, err := readBody(resp)
	if err != nil {
		f.fail(line, err)
		return
	}
	if resp.StatusCode == http.StatusAccepted && b.Len() == 0 {
		return // a notification's 202
	}
	// Only JSON: the bench server never answers with a stream.
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		f.fail(line, fmt.Errorf("HTTP %d, Content-Type %q: %.200s", resp.StatusCode, ct, b.Bytes()))
		return
	}
	b.WriteByte('\n')
	f.write(b.Bytes())
}

// fail answers a request the forwarder could not forward with a JSON-RPC
// error, so that the bench reports it instead of waiting for an answer.
func (f *floor) fail(line []byte, err error) {
	id := gjson.GetBytes(line, "id")
	if !id.Exists() {
		fmt.Fprintln(os.Stderr, "mcp-tasks-bench floor:", err)
		return
	}
	f.write([]byte(`{"jsonrpc":"2.0","id":` + id.Raw + `,"error":{"code":-32603,"message":` + quote("floor: "+err.Error()) + "}}\n"))
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
