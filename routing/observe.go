package routing

import (
	"context"
	"net/http"
	"time"
)

// An Observer sees every HTTP exchange a Client makes under a context that
// carries it (WithObserver): the frame trace is one. Its methods run on
// the caller's goroutine, in order for one exchange, and must be quick; a
// context without an Observer costs one context lookup per exchange.
type Observer interface {
	// Request is called as a request leaves (each time it is sent): its
	// HTTP method, the URL with its secrets redacted, its headers (the
	// user's and the protocol's, before the Auth hook adds
	// Authorization) and its body (nil for GET and DELETE).
	Request(ctx context.Context, method, url string, h http.Header, body []byte)
	// Answer is called for what comes back: with err for a failure before
	// any status; with each message the caller reads (the first carries
	// the status, later ones 0); and, for an answer the caller closed
	// without reading a message, once with the status alone. since is when
	// the request left.
	Answer(ctx context.Context, status int, msg []byte, since time.Time, err error)
}

type observerKey struct{}

// WithObserver makes every exchange made under ctx seen by o, after the
// Observer ctx already carries, if any (the serve front's metrics, then the
// session's trace).
func WithObserver(ctx context.Context, o Observer) context.Context {
	if prev := observerOf(ctx); prev != nil {
		o = observers{prev, o}
	}
	return context.WithValue(ctx, observerKey{}, o)
}

// observers is two Observers, called in order.
type observers [2]Observer

func (os observers) Request(ctx context.Context, method, url string, h http.Header, body []byte) {
	os[0].Request(ctx, method, url, h, body)
	os[1].Request(ctx, method, url, h, body)
}

func (os observers) Answer(ctx context.Context, status int, msg []byte, since time.Time, err error) {
	os[0].Answer(ctx, status, msg, since, err)
	os[1].Answer(ctx, status, msg, since, err)
}

func observerOf(ctx context.Context) Observer {
	o, _ := ctx.Value(observerKey{}).(Observer)
	return o
}

// watch is one exchange's Observer (none when o is nil) and what it needs
// at the answer.
type watch struct {
	o     Observer
	ctx   context.Context
	start time.Time
	seen  bool // a message or the status was reported
}

// message reports a message read; the first carries the status.
func (w *watch) message(status int, msg []byte) {
	if w.o == nil {
		return
	}
	if w.seen {
		status = 0
	}
	w.seen = true
	w.o.Answer(w.ctx, status, msg, w.start, nil)
}

// closed reports the status of an answer closed without a message read.
func (w *watch) closed(status int) {
	if w.o == nil || w.seen {
		return
	}
	w.seen = true
	w.o.Answer(w.ctx, status, nil, w.start, nil)
}
