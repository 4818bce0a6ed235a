package oauth

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
)

// console is the person at the keyboard: the lines on Config.Out (never
// stdout) and the browser it opens.
type console struct {
	open func(url string) error

	mu  sync.Mutex // one line at a time
	out io.Writer
}

func (u *console) say(format string, args ...any) {
	u.mu.Lock()
	defer u.mu.Unlock()
	fmt.Fprintf(u.out, format, args...)
}

// browserCommand is the command line that opens a URL: Config.Browser,
// else $BROWSER (its first entry, when it is a colon-separated list), else
// the platform's opener.
func browserCommand(configured string) []string {
	if f := strings.Fields(configured); len(f) > 0 {
		return f
	}
	if b := os.Getenv("BROWSER"); b != "" {
		first, _, _ := strings.Cut(b, string(os.PathListSeparator))
		if f := strings.Fields(first); len(f) > 0 {
			return f
		}
	}
	switch runtime.GOOS {
	case "darwin":
		return []string{"open"}
	case "windows":
		return []string{"rundll32", "url.dll,FileProtocolHandler"}
	}
	return []string{"xdg-open"}
}

// openBrowser starts argv with url as its last argument. The child gets no
// stdin, stdout or stderr of ours (they are /dev/null): a byte on the
// proxy's stdout would corrupt the JSON-RPC stream. It is not waited for:
// a goroutine reaps it whenever it exits.
func openBrowser(argv []string, url string) error {
	if len(argv) == 0 {
		return errors.New("no browser command")
	}
	cmd := exec.Command(argv[0], append(argv[1:len(argv):len(argv)], url)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, nil, nil
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() { _ = cmd.Wait() }()
	return nil
}
