package main

import (
	"strings"
	"testing"
	"time"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/serve"
)

// The connection bounds: their defaults, and their values as given;
// --max-body-memory's default follows --max-message-size, and a value
// below it (no message that large could be read) is a usage error.
func TestServeConnFlags(t *testing.T) {
	env := func(string) string { return "" }
	c, err := parseServeArgs([]string{"--demo"}, env)
	if err != nil {
		t.Fatal(err)
	}
	if c.srv.ReadTimeout != serve.DefaultReadTimeout || int64(c.maxBodyMemory) != serve.DefaultBodyMemory(c.sess.MaxMessageBytes) || c.maxBodyMemory != 512<<20 {
		t.Errorf("defaults: --read-timeout %v, --max-body-memory %d; want %v and 512MiB", c.srv.ReadTimeout, c.maxBodyMemory, serve.DefaultReadTimeout)
	}
	c, err = parseServeArgs([]string{"--demo", "--max-message-size", "1MiB", "--read-timeout", "5s"}, env)
	if err != nil {
		t.Fatal(err)
	}
	if c.srv.ReadTimeout != 5*time.Second || c.maxBodyMemory != 4<<20 {
		t.Errorf("--read-timeout 5s, --max-message-size 1MiB: %v and --max-body-memory %d; want 5s and 4MiB", c.srv.ReadTimeout, c.maxBodyMemory)
	}
	c, err = parseServeArgs([]string{"--demo", "--max-message-size", "1MiB", "--max-body-memory", "1MiB"}, env)
	if err != nil || c.maxBodyMemory != 1<<20 {
		t.Errorf("--max-body-memory 1MiB with --max-message-size 1MiB: %v, %d", err, c.maxBodyMemory)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--demo", "--max-message-size", "2MiB", "--max-body-memory", "1MiB"}, "--max-body-memory"},
		{[]string{"--demo", "--max-body-memory", "0"}, "--max-body-memory"},
		{[]string{"--demo", "--read-timeout", "0"}, "--read-timeout"},
	} {
		code, out, errs := runServeCmd(t, tc.args...)
		if code != 2 || out != "" || !strings.Contains(errs, tc.want) || strings.Count(errs, "\n") != 1 {
			t.Errorf("serve %v: exit %d, stdout %q, stderr %q; want exit 2 and one line naming %s", tc.args, code, out, errs, tc.want)
		}
	}
}
