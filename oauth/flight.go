package oauth

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// flights are the renewals in flight: each runs once, in a goroutine of
// its own, for every request that needs it while it runs. They end at
// Close.
type flights struct {
	target
	timeout time.Duration // AuthTimeout, the bound of one renewal

	base context.Context // ends at close
	stop context.CancelFunc
	wg   sync.WaitGroup // the renewals in flight

	mu sync.Mutex
	m  map[string]*flight
}

type flight struct {
	done chan struct{}
	err  error
}

func (fs *flights) close() {
	fs.stop()
	fs.wg.Wait()
}

// join waits for the renewal key when one is in flight, as long as ctx
// lets it, and returns its error; nil at once when none is.
func (fs *flights) join(ctx context.Context, key string) error {
	fs.mu.Lock()
	f := fs.m[key]
	fs.mu.Unlock()
	if f == nil {
		return nil
	}
	return fs.wait(ctx, f)
}

// fly runs fn once for every request that asks for the same renewal while
// it runs. fn gets a context of its own, bounded by AuthTimeout and ended
// by Close, so one request giving up does not end it for the others; each
// request waits only as long as its own ctx lets it.
func (fs *flights) fly(ctx context.Context, key string, fn func(context.Context) error) error {
	fs.mu.Lock()
	f := fs.m[key]
	if f == nil {
		if fs.base.Err() != nil {
			fs.mu.Unlock()
			return fs.fail("the proxy is shutting down", fs.base.Err())
		}
		f = &flight{done: make(chan struct{})}
		fs.m[key] = f
		fs.wg.Go(func() {
			fctx, cancel := context.WithTimeout(fs.base, fs.timeout)
			err := fn(fctx)
			if _, ok := errors.AsType[*SignInError](err); err != nil && !ok {
				err = fs.fail(err.Error(), err)
			}
			cancel()
			fs.mu.Lock()
			delete(fs.m, key)
			fs.mu.Unlock()
			f.err = err
			close(f.done)
		})
	}
	fs.mu.Unlock()
	return fs.wait(ctx, f)
}

func (fs *flights) wait(ctx context.Context, f *flight) error {
	select {
	case <-f.done:
		return f.err
	case <-ctx.Done():
		return fs.fail(fmt.Sprintf("the request ended while it waited for the sign-in (%v)", ctx.Err()), ctx.Err())
	}
}
