//go:build unix

package trace

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// BenchmarkTraceFileAppend is the trace goroutine's writes, 64 KiB each,
// to a new file; cpu-ns/op is the process's CPU (getrusage): the kernel's
// copy into the page cache and its work per page. On a virtual machine the
// first write into guest memory never touched before costs several times a
// write into recycled memory (BENCHMARKS.md): compare runs made one after
// the other, not a first run with a later one.
func BenchmarkTraceFileAppend(b *testing.B) {
	chunk := bytes.Repeat([]byte(`{"ts":"2026-12-02T17:43:20.121326613Z","dir":"client->proxy"}`+"\n"), wakeSize/64)
	f, err := os.Create(filepath.Join(b.TempDir(), "trace.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	b.SetBytes(int64(len(chunk)))
	cpu0 := processCPU(b)
	for b.Loop() {
		if _, err := f.Write(chunk); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
}

func processCPU(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
