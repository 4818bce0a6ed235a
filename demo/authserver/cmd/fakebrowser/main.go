// Command fakebrowser plays the user's browser in OAuth tests: it fetches
// the URL given as its last argument and follows the redirects as a browser
// would, down to the client's loopback callback, then exits 0.
//
// Usage:
//
//	fakebrowser [-mode MODE] [-delay D] [-log FILE] URL
//
// MODE (or $FAKEBROWSER_MODE) is one of:
//
//	follow        follow every redirect, the callback included (default)
//	never         fetch the URL, follow nothing: a user who never signs in
//	tamper-state  change the callback's state before fetching it
//	twice         fetch the callback twice
//	print         print the callback URL on stdout instead of fetching it
//
// -delay (or $FAKEBROWSER_DELAY, a Go duration) waits before starting.
// -log (or $FAKEBROWSER_LOG) appends one line per run to FILE: the URL it
// was given, then the callback URL, tab-separated. The callback URL holds
// the authorization code: keep the file out of secret scans' expectations.
//
// It writes nothing on stdout except in print mode, and exits 1 with a
// message on stderr when a request fails.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/demo/authserver"
)

func main() {
	mode := flag.String("mode", os.Getenv("FAKEBROWSER_MODE"), "follow, never, tamper-state, twice or print")
	delay := flag.String("delay", os.Getenv("FAKEBROWSER_DELAY"), "wait this long before starting")
	logFile := flag.String("log", os.Getenv("FAKEBROWSER_LOG"), "append the URLs to this file")
	flag.Parse()
	if flag.NArg() < 1 {
		fmt.Fprintln(os.Stderr, "usage: fakebrowser [-mode MODE] [-delay D] [-log FILE] URL")
		os.Exit(2)
	}
	target := flag.Arg(flag.NArg() - 1)

	var o authserver.BrowseOptions
	switch *mode {
	case "", "follow":
	case "never":
		o.Never = true
	case "tamper-state":
		o.TamperState = true
	case "twice":
		o.Twice = true
	case "print":
		o.NoCallback = true
	default:
		fmt.Fprintf(os.Stderr, "fakebrowser: unknown mode %q\n", *mode)
		os.Exit(2)
	}
	// The log is opened before anything else, so that its entry exists
	// from the start: a run that ends after its test has cleaned up writes
	// to the open file, never a new one into a directory being removed.
	var log *os.File
	if *logFile != "" {
		if f, err := os.OpenFile(*logFile, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600); err == nil {
			log = f
			defer f.Close()
		}
	}
	if *delay != "" {
		d, err := time.ParseDuration(*delay)
		if err != nil {
			fmt.Fprintf(os.Stderr, "fakebrowser: bad delay: %v\n", err)
			os.Exit(2)
		}
		time.Sleep(d)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cb, err := authserver.Browse(ctx, target, o)
	if log != nil {
		fmt.Fprintf(log, "%s\t%s\n", target, cb)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakebrowser:", err)
		log.Close() // os.Exit skips the deferred Close
		os.Exit(1)
	}
	if o.NoCallback {
		fmt.Println(cb)
	}
}
