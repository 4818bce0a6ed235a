package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/oauth"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/routing"
)

// authHelpText is auth's --help; its flags come from their table.
var authHelpText = authHelpIntro + helpFlags(authFlagGroups, docs(authFlags)) + "\n" + authHelpOutro

const authHelpIntro = `mcp-tasks-proxy auth signs in to an OAuth-protected MCP server from a terminal,
shows what is stored, and signs out. The proxy itself signs in when a server
first answers 401; use these to do it ahead of time, on a machine without a
browser, or to check and remove what is stored.

Usage:
  mcp-tasks-proxy auth login  [flags] URL   sign in (opens a browser), store the tokens
  mcp-tasks-proxy auth status [flags] URL   show the server, issuer, client, scopes and
                                            expiry (never a token)
  mcp-tasks-proxy auth logout [flags] URL   revoke the tokens where the authorization
                                            server supports it, then delete them

Examples:
  # Sign in with the browser of this machine
  mcp-tasks-proxy auth login https://mcp.example.com/mcp

  # On a machine without a browser (over SSH): open the printed address on any
  # machine, sign in, then paste the address the browser ends up at
  mcp-tasks-proxy auth login --no-browser https://mcp.example.com/mcp

  # What is stored, for people or for scripts
  mcp-tasks-proxy auth status https://mcp.example.com/mcp
  mcp-tasks-proxy auth status --json https://mcp.example.com/mcp

  # Sign out
  mcp-tasks-proxy auth logout https://mcp.example.com/mcp

`

const authHelpOutro = `Exit status: 0 on success (status: signed in; logout: also when nothing was
stored); 1 when the sign-in, the revocation or the store failed (status: not
signed in); 2 on a usage error.
`

// authFlagSet is auth's parser (also read by completion).
func authFlagSet(c *authConfig) *flag.FlagSet {
	return newTableFlagSet("mcp-tasks-proxy auth", authFlags, c)
}

// parseAuthArgs reads `auth VERB [flags] URL`; flags may come after the URL.
func parseAuthArgs(args []string, getenv func(string) string) (*authConfig, error) {
	c := &authConfig{}
	if len(args) > 0 {
		switch args[0] {
		case "login", "status", "logout":
			c.verb, args = args[0], args[1:]
		case "-h", "--help", "-help", "help":
			c.help = true
			return c, nil
		default:
			if !strings.HasPrefix(args[0], "-") {
				return nil, usagef("auth %s: unknown command; use login, status or logout (mcp-tasks-proxy auth --help)", args[0])
			}
		}
	}
	fs := authFlagSet(c)
	positional, err := parseInterspersed(fs, args)
	if err != nil {
		return nil, usagef("auth: %s", flagProblem(err, fs, "mcp-tasks-proxy auth --help"))
	}
	if c.help {
		return c, nil
	}
	if c.verb == "" {
		return nil, usagef("auth: say what to do: mcp-tasks-proxy auth login|status|logout URL")
	}
	switch len(positional) {
	case 0:
	case 1:
		if c.url != "" && c.url != positional[0] {
			return nil, usagef("auth %s: the URL is given twice; give it once", c.verb)
		}
		c.url = positional[0]
	default:
		return nil, usagef("auth %s: unexpected argument %s: give one server URL", c.verb, routing.Redact(positional[1]))
	}
	if c.url = cmp.Or(c.url, getenv(envURL)); c.url == "" {
		return nil, usagef("auth %s: no server URL: mcp-tasks-proxy auth %s https://host/mcp", c.verb, c.verb)
	}
	if _, err := routing.New(routing.Config{URL: c.url}); err != nil {
		return nil, usagef("auth %s: %v", c.verb, err)
	}
	switch {
	case c.paste && c.verb != "login":
		return nil, usagef("auth %s: --no-browser is for auth login", c.verb)
	case c.json && c.verb != "status":
		return nil, usagef("auth %s: --json is for auth status", c.verb)
	case c.paste && c.oauth.NoBrowser:
		return nil, usagef("auth login: --no-browser (paste the address back) and --oauth-no-browser (wait for the browser on the loopback callback) are two ways; pass one")
	}
	if err := c.oauth.check(); err != nil {
		return nil, err
	}
	return c, nil
}

// authCommand runs `mcp-tasks-proxy auth login|status|logout [flags] URL`.
func authCommand(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	c, err := parseAuthArgs(args, getenv)
	if err != nil {
		return fail(stderr, 2, "%v", err)
	}
	if c.help {
		fmt.Fprint(stdout, authHelpText)
		return 0
	}
	var caPEM []byte
	if c.caFile != "" {
		if caPEM, err = os.ReadFile(c.caFile); err != nil {
			return fail(stderr, 2, "--ca-file: %v", err)
		}
	}
	if c.insecure {
		fmt.Fprintln(stderr, "mcp-tasks-proxy: warning: --insecure: TLS certificates are NOT verified")
	}
	hc, err := oauthHTTPClient(caPEM, c.insecure, routing.DefaultConnectTimeout)
	if err != nil {
		return fail(stderr, 2, "--ca-file: %v", err)
	}
	o := c.oauth.Config
	o.ServerURL, o.AllowHTTP, o.HTTPClient, o.Out = c.url, c.allowHTTP, hc, &userLines{stderr: stderr}
	cl, err := oauth.New(o)
	if err != nil {
		return fail(stderr, 1, "auth %s: %v", c.verb, err)
	}
	defer cl.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	switch c.verb {
	case "login":
		return authLogin(ctx, c, cl, stdin, stdout, stderr)
	case "status":
		return authStatus(c, cl, stdout, stderr)
	}
	return authLogout(ctx, cl, stdout, stderr)
}

func authLogin(ctx context.Context, c *authConfig, cl *oauth.Client, stdin io.Reader, stdout, stderr io.Writer) int {
	var paste func() (string, error)
	if c.paste {
		rd := bufio.NewReader(stdin)
		paste = func() (string, error) {
			line, err := rd.ReadString('\n')
			if strings.TrimSpace(line) != "" {
				return line, nil
			}
			if err == nil {
				err = errors.New("an empty line")
			}
			return "", err
		}
	}
	if err := cl.Login(ctx, paste); err != nil {
		if se, ok := errors.AsType[*oauth.SignInError](err); ok {
			// Not the SignInError's own text: its way out is this command.
			return fail(stderr, 1, "auth login: sign-in to %s did not complete: %s", se.Host, se.Reason)
		}
		return fail(stderr, 1, "auth login: %v", err)
	}
	st, err := cl.Status()
	if err != nil {
		return fail(stderr, 1, "auth login: signed in, but the store cannot be read back: %v", err)
	}
	fmt.Fprintf(stdout, "Signed in to %s.\nThe tokens are stored in %s (mode 0600); the proxy uses and refreshes them.\n", st.Server, st.StoreFile)
	return 0
}

func authStatus(c *authConfig, cl *oauth.Client, stdout, stderr io.Writer) int {
	st, err := cl.Status()
	if err != nil {
		return fail(stderr, 1, "auth status: %v", err)
	}
	now := time.Now()
	expired := !st.Expiry.IsZero() && !now.Before(st.Expiry)
	if c.json {
		j := struct { // never a token; the members in the order scripts have seen
			oauth.Status
			Expiry      string `json:"expiry,omitempty"`
			Expired     bool   `json:"expired,omitempty"`
			Refreshable bool   `json:"refreshable"`
		}{Status: st, Expired: expired, Refreshable: st.Refreshable}
		if !st.Expiry.IsZero() {
			j.Expiry = st.Expiry.UTC().Format(time.RFC3339)
		}
		b, _ := json.MarshalIndent(j, "", "  ")
		fmt.Fprintf(stdout, "%s\n", b)
	} else if !st.SignedIn {
		fmt.Fprintf(stdout, "Not signed in to %s (store: %s).\nSign in with: mcp-tasks-proxy auth login %s\n", st.Server, st.StoreFile, st.Server)
	} else {
		scopes := cmp.Or(strings.Join(st.Scopes, " "), "(none named)")
		fmt.Fprintf(stdout, "Server:   %s\nIssuer:   %s\nClient:   %s (%s)\nScopes:   %s\nExpires:  %s\nStore:    %s\n",
			st.Server, st.Issuer, st.ClientID, st.ClientSource, scopes, describeExpiry(st, now), st.StoreFile)
	}
	if !st.SignedIn {
		return 1
	}
	return 0
}

// describeExpiry says when the access token expires, and what happens then.
func describeExpiry(st oauth.Status, now time.Time) string {
	if st.Expiry.IsZero() {
		return "not said by the authorization server"
	}
	at := st.Expiry.Local().Format("2006-01-02 15:04:05 MST")
	left := st.Expiry.Sub(now).Round(time.Second)
	switch {
	case left > 0 && st.Refreshable:
		return fmt.Sprintf("%s (in %v; refreshed automatically)", at, left)
	case left > 0:
		return fmt.Sprintf("%s (in %v; no refresh token: sign in again then)", at, left)
	case st.Refreshable:
		return fmt.Sprintf("%s (expired %v ago; refreshed at the next request)", at, -left)
	}
	return fmt.Sprintf("%s (expired %v ago; no refresh token: the next request signs in again)", at, -left)
}

func authLogout(ctx context.Context, cl *oauth.Client, stdout, stderr io.Writer) int {
	st, _ := cl.Status()
	err := cl.Logout(ctx)
	switch {
	case errors.Is(err, oauth.ErrNotSignedIn):
		fmt.Fprintf(stdout, "Not signed in to %s: nothing to remove.\n", st.Server)
		return 0
	case err != nil:
		return fail(stderr, 1, "auth logout: %v", err)
	}
	fmt.Fprintf(stdout, "Signed out of %s: the tokens were revoked where the authorization server supports it, and %s is deleted.\n", st.Server, st.StoreFile)
	return 0
}
