// Package httpserve runs the demo servers of mcp-tasks-proxy (the MCP
// servers and the authorization server) on a listener, with a graceful
// stop that is forced after a timeout. It never carries the proxy's own
// traffic: serve mode's listener is package serve's.
package httpserve

import (
	"context"
	"net"
	"net/http"
	"sync"
	"time"
)

// Serve serves h on ln until stop is called or ctx ends. Handlers see a
// context cancelled when a graceful stop runs out of time, so that long
// calls end promptly. stop calls closeStreams (long-lived streams must not
// hold the shutdown up), shuts the server down, forced after timeout, waits
// until it has stopped serving, then calls cleanup; it is idempotent and
// safe for concurrent use.
func Serve(ctx context.Context, ln net.Listener, h http.Handler, timeout time.Duration, closeStreams, cleanup func()) (stop func()) {
	base, cancelBase := context.WithCancel(context.Background())
	hs := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute, // an idle keep-alive connection is not kept for good
		BaseContext:       func(net.Listener) context.Context { return base },
	}

	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = hs.Serve(ln) // always returns http.ErrServerClosed after Shutdown or Close
	}()

	var once sync.Once
	shutdown := func() {
		once.Do(func() {
			sctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			closeStreams()
			if err := hs.Shutdown(sctx); err != nil {
				cancelBase()
				_ = hs.Close()
			}
			cancelBase()
			<-served
			cleanup()
		})
	}
	stopAfter := context.AfterFunc(ctx, shutdown)
	return func() {
		stopAfter()
		shutdown()
	}
}
