package trace

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// allocated is the disk space the file at path holds.
func allocated(t *testing.T, path string) int64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Blocks * 512
}

// TestTraceFileReservesAhead: a trace file opened by Open has its space
// reserved ahead of what is written while it is open, its size always that
// of its lines, and the reservation given back on Close.
func TestTraceFileReservesAhead(t *testing.T) {
	dir := t.TempDir()
	probe, err := os.Create(filepath.Join(dir, "probe"))
	if err != nil {
		t.Fatal(err)
	}
	perr := preallocate(probe, 0, 1<<20)
	probe.Close()
	if perr != nil {
		t.Skipf("SKIP: the file system of %s cannot reserve space (%v); the trace writes without reserving there", dir, perr)
	}

	path := filepath.Join(dir, "trace.jsonl")
	w, err := Open(path, Options{FlushInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	const n = 500
	for i := range n {
		w.Emit(Record{Dir: ClientToProxy, Op: "op", Frame: json.RawMessage(`{"jsonrpc":"2.0","id":` + strconv.Itoa(i) + `,"method":"ping"}`)})
	}
	// Written by the periodic flush (a bounded wait).
	var fi os.FileInfo
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		done := w.unwritten.Load() == 0
		if fi, err = os.Stat(path); err != nil {
			t.Fatal(err)
		}
		if done && fi.Size() > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited 10s for the records to be written: %d bytes, %d unwritten", fi.Size(), w.unwritten.Load())
		}
	}
	if got := allocated(t, path); got < fi.Size()+preallocChunk/2 {
		t.Errorf("while open: %d bytes allocated for %d written, want the next %d reserved", got, fi.Size(), preallocChunk)
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	out, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if recs := lines(t, out); len(recs) != n || bytes.IndexByte(out, 0) >= 0 {
		t.Fatalf("%d records, NUL bytes %v; want %d records and only lines", len(recs), bytes.IndexByte(out, 0) >= 0, n)
	}
	if got := allocated(t, path); got > int64(len(out))+64<<10 {
		t.Errorf("after Close: %d bytes allocated for a %d-byte file; the reservation was not given back", got, len(out))
	}
}

// BenchmarkTraceFileAppend is the trace goroutine's writes, 64 KiB each,
// to a new file: plain, and with space reserved ahead (as Open does). The
// time may include waits for the disk once much is dirty; cpu-ns/op is the
// process's CPU (getrusage), the kernel's copy and allocation work.
func BenchmarkTraceFileAppend(b *testing.B) {
	chunk := bytes.Repeat([]byte(`{"ts":"2026-12-02T17:43:20.121326613Z","dir":"client->proxy"}`+"\n"), writeSize/64)
	for _, reserve := range []bool{false, true} {
		name := "plain"
		if reserve {
			name = "reserved"
		}
		b.Run(name, func(b *testing.B) {
			f, err := os.Create(filepath.Join(b.TempDir(), "trace.jsonl"))
			if err != nil {
				b.Fatal(err)
			}
			pf := &preallocFile{f: f, failed: !reserve}
			b.SetBytes(int64(len(chunk)))
			cpu0 := processCPU(b)
			for b.Loop() {
				if _, err := pf.Write(chunk); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
			if err := pf.Close(); err != nil {
				b.Fatal(err)
			}
		})
	}
}

func processCPU(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
