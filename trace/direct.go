package trace

import (
	"bytes"
	"errors"
	"os"
	"syscall"
	"unsafe"
)

// dioAlign is the alignment of direct I/O: of the buffer's address, and of
// each write's file offset and length. A page is a multiple of every
// logical block size in use (512 or 4096 bytes).
const dioAlign = 4096

// directFile writes a trace file with direct I/O (O_DIRECT, Linux): whole
// blocks go from its buffer to the disk without passing through the page
// cache. A trace is written once and read rarely, so caching it only costs:
// the kernel's copy, and a new page of memory for every 4 KiB, which on a
// virtual machine that hands freed memory back to its host costs several
// times the copy (BENCHMARKS.md). Direct I/O takes both off the process's
// CPU and leaves the page cache to what is read again.
//
// Direct writes are whole blocks at block offsets, so the last partial
// block of what was written (the tail) is held in the buffer. settle writes
// it through the page cache (plain), so that the file shows every byte
// written; the next direct write of that block replaces it. The Writer
// settles whenever it goes quiet: its timer fires, or it closes.
//
// When the file system refuses direct I/O (EINVAL, at open or at the first
// write), everything goes through plain, as without directFile.
type directFile struct {
	direct blockFile // opened O_DIRECT; nil once refused
	plain  *os.File  // the same file, through the page cache

	// buf[:held] is the tail: the bytes from off, a block offset, not yet
	// written directly. settled says they are in the file (through plain).
	buf     []byte
	held    int
	off     int64
	settled bool
}

// blockFile is the file opened for direct I/O (an *os.File).
type blockFile interface {
	WriteAt(p []byte, off int64) (int, error)
	Close() error
}

// openDirect opens path, which plain has just created or truncated, for
// direct writes beside plain. It returns nil when the system or the file
// system has no direct I/O.
func openDirect(path string, plain *os.File) *directFile {
	if oDirect == 0 {
		return nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|oDirect, 0)
	if err != nil {
		return nil
	}
	return &directFile{direct: f, plain: plain, settled: true}
}

// Write writes the blocks that p completes directly and keeps the rest as
// the new tail, not yet settled.
func (d *directFile) Write(p []byte) (int, error) {
	if d.direct == nil {
		return d.plainWrite(p)
	}
	need := d.held + len(p)
	if need > len(d.buf) {
		d.grow(need)
	}
	copy(d.buf[d.held:], p)
	n := need &^ (dioAlign - 1)
	if n > 0 {
		if _, err := d.direct.WriteAt(d.buf[:n], d.off); err != nil {
			if !errors.Is(err, syscall.EINVAL) {
				return 0, err
			}
			// Refused: the file system's blocks are not what dioAlign
			// assumes, or it takes no direct I/O. What is held and p go
			// through the page cache from now on.
			d.direct.Close()
			d.direct = nil
			d.held, d.settled = need, false
			if err := d.settle(); err != nil {
				return 0, err
			}
			return len(p), nil
		}
		d.off += int64(n)
		d.held = copy(d.buf, d.buf[n:need])
	} else {
		d.held = need
	}
	d.settled = d.held == 0
	return len(p), nil
}

// plainWrite appends p through the page cache, after what settle wrote.
func (d *directFile) plainWrite(p []byte) (int, error) {
	n, err := d.plain.WriteAt(p, d.off)
	d.off += int64(n)
	return n, err
}

// settle writes the tail through the page cache, so that the file holds
// every byte written.
func (d *directFile) settle() error {
	if d.settled {
		return nil
	}
	if _, err := d.plain.WriteAt(d.buf[:d.held], d.off); err != nil {
		return err
	}
	d.settled = true
	if d.direct == nil { // plain from now on: the tail is written
		d.off += int64(d.held)
		d.held = 0
	}
	return nil
}

// holding reports whether d holds bytes that are in no file yet.
func (d *directFile) holding() bool { return !d.settled && d.held > 0 }

// discard forgets the tail, after a write error, and returns the number of
// records (lines) that ended in it and so are in no file: lost.
func (d *directFile) discard() int64 {
	n := int64(0)
	if d.holding() {
		n = int64(bytes.Count(d.buf[:d.held], newline))
	}
	d.held, d.settled = 0, true
	return n
}

// grow makes buf, aligned, hold at least n bytes, keeping the tail.
func (d *directFile) grow(n int) {
	size := (n + dioAlign - 1) &^ (dioAlign - 1)
	b := make([]byte, size+dioAlign)
	skip := 0
	if r := int(uintptr(unsafe.Pointer(&b[0])) & (dioAlign - 1)); r != 0 {
		skip = dioAlign - r
	}
	b = b[skip : skip+size : skip+size]
	copy(b, d.buf[:d.held])
	d.buf = b
}

// Close settles the tail and closes both files.
func (d *directFile) Close() error {
	err := d.settle()
	if d.direct != nil {
		if cerr := d.direct.Close(); err == nil {
			err = cerr
		}
	}
	if cerr := d.plain.Close(); err == nil {
		err = cerr
	}
	return err
}
