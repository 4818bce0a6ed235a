package routing

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestSSELongLineExact: a line longer than the read buffer is returned in
// one buffer with BodyRoom spare bytes in front, and handed over whole by
// takeRoom: the event ends the room, and the buffer is no larger than the
// line with its CRLF (or the first chunk, for a line shorter than that).
func TestSSELongLineExact(t *testing.T) {
	t.Parallel()
	for _, n := range []int{100, 40 << 10, largeMin + 1, 3*largeMin + 17} {
		data := strings.Repeat("x", n)
		r := newSSEReaderSize(strings.NewReader("data: "+data+"\r\n\n"), 0, 16, nil)
		got, err := r.Next()
		if err != nil || string(got) != data {
			t.Fatalf("%d bytes: got %d bytes, %v", n, len(got), err)
		}
		room := r.takeRoom()
		line := len("data: ") + n + len("\r\n")
		if len(room) != BodyRoom+len("data: ")+n || cap(room) > BodyRoom+max(line, minChunk) || !bytes.HasSuffix(room, got) || &room[len(room)-n] != &got[0] {
			t.Errorf("%d bytes: room len %d cap %d", n, len(room), cap(room))
		}
		if r.takeRoom() != nil {
			t.Errorf("%d bytes: the room was handed out twice", n)
		}
	}
}

// TestChunkedJSONBody: a JSON body without a Content-Length (sent chunked)
// is read whole, with BodyRoom in front. The client keeps
// the size of the last large one: the next of about that size is read into
// one buffer of that size and a sixty-fourth more, with nothing to join; a
// small one after it comes in a small buffer, not one of the large size.
func TestChunkedJSONBody(t *testing.T) {
	t.Parallel()
	body := func(n int) []byte { return []byte(`{"x":"` + strings.Repeat("y", n-8) + `"}`) }
	sizes := []int{3<<20 + 5, 3<<20 + 900, 100}
	var served atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		b := body(sizes[served.Add(1)-1])
		for len(b) > 0 { // flushed in pieces: no Content-Length, chunked
			k := min(len(b), 64<<10)
			w.Write(b[:k])
			w.(http.Flusher).Flush()
			b = b[k:]
		}
	}))
	defer srv.Close()
	c, err := New(Config{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdle()
	for i, n := range sizes {
		resp, err := c.Post(context.Background(), []byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`), nil)
		if err != nil {
			t.Fatal(err)
		}
		msg, err := resp.Next()
		room := resp.Room()
		resp.Close()
		if err != nil || !bytes.Equal(msg, body(n)) {
			t.Fatalf("body of %d bytes: got %d, %v", n, len(msg), err)
		}
		if len(room) != BodyRoom+n || &room[BodyRoom] != &msg[0] {
			t.Fatalf("body of %d bytes: room len %d", n, len(room))
		}
		want := []int{BodyRoom + n, BodyRoom + sizes[0] + sizes[0]/64, BodyRoom + minChunk}[i]
		if cap(room) != want {
			t.Errorf("body %d (%d bytes): a buffer of %d bytes, want %d", i, n, cap(room), want)
		}
	}
}
