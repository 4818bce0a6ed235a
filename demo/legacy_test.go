package demo

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/capabilities"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/routing"
)

// The proxy's era probe must find the legacy demo legacy: that is what
// sends it into passthrough mode.
func TestLegacyProbesAsLegacy(t *testing.T) {
	srv := httptest.NewServer(NewLegacy())
	defer srv.Close()
	c, err := routing.New(routing.Config{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n := int64(0)
	p := capabilities.Prober{Client: c, NextID: func() []byte { n++; return []byte{byte('0' + n)} }}
	v := p.Probe(ctx, capabilities.Meta([]byte(`{}`), []byte(`{"name":"t","version":"1"}`), ""))
	t.Logf("verdict %+v", v)
	if v.Era != capabilities.Legacy {
		t.Fatalf("era = %v (%s), want legacy", v.Era, v.Reason)
	}
}
