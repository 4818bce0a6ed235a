package routing

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestSSELongLineExact: a line longer than the read buffer, the first of
// its process, is returned in one buffer (of bufCap), with BodyRoom spare
// bytes in front, and handed over whole by takeRoom.
func TestSSELongLineExact(t *testing.T) {
	for _, n := range []int{100, partSize - 7, partSize - 6, partSize + 1, 3*partSize + 17} {
		lastLong.Store(0)
		data := strings.Repeat("x", n)
		r := newSSEReaderSize(strings.NewReader("data: "+data+"\r\n\n"), 0, 16)
		got, err := r.Next()
		if err != nil || string(got) != data {
			t.Fatalf("%d bytes: got %d bytes, %v", n, len(got), err)
		}
		room := r.takeRoom()
		if len(room) != BodyRoom+len("data: ")+n || cap(room) != bufCap(len(room)+2-BodyRoom) || !bytes.HasSuffix(room, got) {
			t.Errorf("%d bytes: room len %d cap %d", n, len(room), cap(room))
		}
		if len(r.line.parts) != 0 || r.line.n != 0 {
			t.Errorf("%d bytes: parts kept after the join", n)
		}
	}
}

// TestSSECollectsAfterLongLines: once garbageMin bytes of large lines
// were gathered, the next long line starts with a collection, and the
// count starts again. A long line shorter than largeLine does not count.
func TestSSECollectsAfterLongLines(t *testing.T) {
	gathered.Store(0)
	r0 := NewSSEReader(strings.NewReader("data: "+strings.Repeat("z", largeLine-100)+"\n\n"), 0)
	if _, err := r0.Next(); err != nil {
		t.Fatal(err)
	}
	if got := gathered.Load(); got != 0 {
		t.Fatalf("a line under largeLine counted: %d", got)
	}
	line := "data: " + strings.Repeat("y", garbageMin/2+1) + "\n\n"
	var after runtime.MemStats
	r := NewSSEReader(strings.NewReader(line+line), 0)
	for range 2 {
		if _, err := r.Next(); err != nil {
			t.Fatal(err)
		}
	}
	if got := gathered.Load(); got < garbageMin {
		t.Fatalf("gathered %d after two lines of %d", got, garbageMin/2+1)
	}
	runtime.ReadMemStats(&after)
	gcs := after.NumGC
	r = NewSSEReader(strings.NewReader(line), 0)
	if _, err := r.Next(); err != nil && err != io.EOF {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); collecting.Load() && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	runtime.ReadMemStats(&after)
	if after.NumGC == gcs {
		t.Error("no collection when the long line started")
	}
	if got := gathered.Load(); got != int64(len(line)-1) {
		t.Errorf("gathered %d after the collection, want the one line's %d", got, len(line)-1)
	}
}

// TestJSONCollectsBeforeLargeBodies: a JSON body of a known length counts
// in gathered as a long SSE line does, and once garbageMin bytes of them
// were read, the next large body starts with a collection: the last one's
// buffer is free for it, where GOGC would leave it until the heap doubled.
func TestJSONCollectsBeforeLargeBodies(t *testing.T) {
	defer goleak.VerifyNone(t)
	body := func(n int) string { return `{"x":"` + strings.Repeat("y", n-8) + `"}` }
	var sizes = []int{largeLine - 100, garbageMin/2 + 1, garbageMin/2 + 1, garbageMin/2 + 1}
	var served atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b := body(sizes[served.Add(1)-1])
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		io.WriteString(w, b)
	}))
	defer srv.Close()
	c, err := New(Config{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdle()
	gathered.Store(0)
	var forced []uint32
	for i, n := range sizes {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		forced = append(forced, ms.NumForcedGC)
		resp, err := c.Post(context.Background(), []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"blob"}}`), nil)
		if err != nil {
			t.Fatal(err)
		}
		msg, err := resp.Next()
		resp.Close()
		if err != nil || len(msg) != n {
			t.Fatalf("body %d: %d bytes, %v; want %d", i, len(msg), err, n)
		}
		want := []int64{0, int64(n), 2 * int64(n), int64(n)}[i] // the fourth starts with a collection
		if got := gathered.Load(); got != want {
			t.Errorf("after body %d (%d bytes) gathered %d, want %d", i, n, got, want)
		}
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	forced = append(forced, ms.NumForcedGC)
	if forced[3] != forced[0] || forced[4] != forced[3]+1 {
		t.Errorf("forced collections before each body %v: want none until the fourth, then one", forced)
	}
}
