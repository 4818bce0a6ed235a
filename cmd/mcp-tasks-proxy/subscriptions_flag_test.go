package main

import (
	"io"
	"testing"

	"go.uber.org/zap"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/bridge"
)

// --max-subscriptions: its default is the bridge's, a value reaches the
// session's config, and a bound below 1 is a usage error naming the flag
// (TestHintsNameFlags checks that the bridge's error names it).
func TestMaxSubscriptionsFlag(t *testing.T) {
	c, err := parseArgs([]string{testURL}, env())
	if err != nil || c.sess.MaxSubscriptions != bridge.DefaultMaxSubscriptions {
		t.Errorf("default: maxSubscriptions %d, %v; want %d", c.sess.MaxSubscriptions, err, bridge.DefaultMaxSubscriptions)
	}
	c, err = parseArgs([]string{"--max-subscriptions", "3", "--no-state", testURL}, env())
	if err != nil || c.sess.MaxSubscriptions != 3 {
		t.Fatalf("--max-subscriptions 3: %d, %v", c.sess.MaxSubscriptions, err)
	}
	bcfg, done, code := sessionConfig(c, testURL, nil, zap.NewNop(), nil, io.Discard)
	if done != nil {
		defer done()
	}
	if code != 0 || bcfg.MaxSubscriptions != 3 {
		t.Errorf("session config: MaxSubscriptions %d (exit %d), want 3", bcfg.MaxSubscriptions, code)
	}
	for _, v := range []string{"0", "-1", "x"} {
		args := []string{"--max-subscriptions", v, testURL}
		_, err := parseArgs(args, env())
		wantUsageError(t, args, err, "max-subscriptions")
	}
}
