package modern

import (
	"slices"
	"testing"
	"time"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/bridge/internal/link"
)

// The delays a flapping server gets (streams acknowledged and closed at
// once, or never acknowledged) grow strictly to the cap and stay there.
func TestNextListenDelayFlapping(t *testing.T) {
	want := []time.Duration{
		250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second,
		8 * time.Second, 16 * time.Second, link.BackoffMax, link.BackoffMax, link.BackoffMax,
	}
	for _, up := range []time.Duration{0, time.Millisecond, ListenStableAfter - 1} {
		var got []time.Duration
		var d time.Duration
		for range want {
			d = nextListenDelay(d, up)
			got = append(got, d)
		}
		if !slices.Equal(got, want) {
			t.Errorf("streams up %v each: delays %v, want %v", up, got, want)
		}
		for i := 1; i < len(got) && got[i-1] < link.BackoffMax; i++ {
			if got[i] <= got[i-1] {
				t.Errorf("streams up %v each: delay %d (%v) does not grow from %v", up, i, got[i], got[i-1])
			}
		}
	}
}

// A stream that stayed up for ListenStableAfter starts the delays again
// from the minimum, whatever they had grown to; a shorter one does not.
func TestNextListenDelayResetsAfterStableStream(t *testing.T) {
	for _, tt := range []struct {
		prev, up, want time.Duration
	}{
		{0, 0, link.BackoffMin},
		{0, time.Hour, link.BackoffMin},
		{link.BackoffMax, ListenStableAfter, link.BackoffMin},
		{link.BackoffMax, time.Hour, link.BackoffMin},
		{4 * time.Second, ListenStableAfter + time.Millisecond, link.BackoffMin},
		{4 * time.Second, ListenStableAfter - time.Millisecond, 8 * time.Second},
		{link.BackoffMax, ListenStableAfter - time.Millisecond, link.BackoffMax},
		{link.BackoffMin, 0, 2 * link.BackoffMin},
	} {
		if got := nextListenDelay(tt.prev, tt.up); got != tt.want {
			t.Errorf("nextListenDelay(%v, %v) = %v, want %v", tt.prev, tt.up, got, tt.want)
		}
	}
}
