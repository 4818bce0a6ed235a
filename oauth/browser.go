package oauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
)

// console is the person at the keyboard: the lines on Config.Out (never
// stdout), the browser it opens, and the address it pastes.
type console struct {
	host      string
	noBrowser bool
	timeout   time.Duration // AuthTimeout, how long a sign-in waits
	log       *zap.Logger
	open      func(url string) error

	mu  sync.Mutex // one line at a time
	out io.Writer
}

func (u *console) announce(authURL string) {
	if u.noBrowser {
		u.say("mcp-tasks-proxy: %s needs you to sign in. Open this address in a browser (waiting up to %v):\n\n  %s\n\n", u.host, u.timeout, authURL)
		return
	}
	u.say("mcp-tasks-proxy: %s needs you to sign in; opening a browser. If none opens, open this address (waiting up to %v):\n\n  %s\n\n", u.host, u.timeout, authURL)
	if err := u.open(authURL); err != nil {
		u.log.Warn("oauth: cannot open a browser; open the printed address", zap.Error(err))
	}
}

func (u *console) say(format string, args ...any) {
	u.mu.Lock()
	defer u.mu.Unlock()
	fmt.Fprintf(u.out, format, args...)
}

func (u *console) readPaste(ctx context.Context, paste func() (string, error), redirectURI, state string) callbackResult {
	got := make(chan callbackResult, 1)
	go func() {
		s, err := paste()
		if err != nil {
			got <- callbackResult{err: fmt.Errorf("no address was pasted (%v)", err)}
			return
		}
		got <- parsePasted(s, redirectURI, state)
	}()
	select {
	case r := <-got:
		return r
	case <-ctx.Done():
		return callbackResult{err: fmt.Errorf("nothing was pasted within %v", u.timeout)}
	}
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
