package routing

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestSSELongLineExact: a line longer than the read buffer is returned in
// one buffer with BodyRoom spare bytes in front, and handed over whole by
// takeRoom: the event ends the room, and the buffer is no larger than the
// line with its CRLF (or the first chunk, for a line shorter than that).
func TestSSELongLineExact(t *testing.T) {
	t.Parallel()
	for _, n := range []int{100, 40 << 10, maxChunk + 1, 3*maxChunk + 17} {
		data := strings.Repeat("x", n)
		r := newSSEReaderSize(strings.NewReader("data: "+data+"\r\n\n"), 0, 16)
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
// is read whole, with BodyRoom in front of a large one, and a small one
// after it comes in a buffer of its own size.
func TestChunkedJSONBody(t *testing.T) {
	t.Parallel()
	body := func(n int) []byte { return []byte(`{"x":"` + strings.Repeat("y", n-8) + `"}`) }
	sizes := []int{3<<20 + 5, 100}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := sizes[0]
		if r.URL.Query().Get("small") != "" {
			n = sizes[1]
		}
		w.Header().Set("Content-Type", "application/json")
		b := body(n)
		for len(b) > 0 { // flushed in pieces: no Content-Length, chunked
			k := min(len(b), 64<<10)
			w.Write(b[:k])
			w.(http.Flusher).Flush()
			b = b[k:]
		}
	}))
	defer srv.Close()
	for i, target := range []string{srv.URL, srv.URL + "?small=1"} {
		c, err := New(Config{URL: target})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.Post(context.Background(), []byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`), nil)
		if err != nil {
			t.Fatal(err)
		}
		msg, err := resp.Next()
		room := resp.Room()
		resp.Close()
		c.CloseIdle()
		if err != nil || !bytes.Equal(msg, body(sizes[i])) {
			t.Fatalf("body of %d bytes: got %d, %v", sizes[i], len(msg), err)
		}
		if large := sizes[i] >= RoomMin; (room != nil) != large || large && (len(room) != BodyRoom+len(msg) || cap(room) != len(room)) {
			t.Errorf("body of %d bytes: room len %d cap %d", sizes[i], len(room), cap(room))
		}
		if cap(msg) > 512 && sizes[i] < 512 {
			t.Errorf("a small body after a large one: a buffer of %d", cap(msg))
		}
	}
}
