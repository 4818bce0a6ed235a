package oauth

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
)

// refreshAheadQuiet is how long after a failed refresh ahead of expiry the
// stored token is used as it is, without trying again.
const refreshAheadQuiet = 30 * time.Second

// Client is the OAuth client toward one MCP server. It implements
// routing.Auth. It is safe for concurrent use; see the package comment.
type Client struct {
	target
	cfg Config
	log *zap.Logger
	hc  *http.Client
	now func() time.Time // the clock of every part (tests move it)

	// The parts (see the package doc); the renewal policy is in renew.go,
	// the sign-in in signin.go.
	store *tokenStore
	disc  *discoverer
	reg   *registrar
	ep    *tokenEndpoint
	cb    *loopback
	user  *console
	fl    *flights
	ren   renewals
}

// target is the server a Client is for, shared by its parts.
type target struct {
	server     *url.URL // canonical
	serverText string   // displayURL(server), for messages and the way out
	host       string
}

func (t target) fail(reason string, err error) *SignInError {
	return &SignInError{Host: t.host, Server: t.serverText, Reason: reason, Err: err}
}

// New reads cfg, opens the store (creating its directory) and reads the
// server's record. It does not touch the network. The callback port and
// the metadata and resource URLs are the caller's to check (the command
// line does, naming its flags).
func New(cfg Config) (*Client, error) {
	server, err := canonicalURL(cfg.ServerURL)
	if err != nil {
		return nil, err
	}
	if cfg.AuthTimeout <= 0 {
		cfg.AuthTimeout = DefaultAuthTimeout
	}
	listen, urlHost := "127.0.0.1", "127.0.0.1"
	switch strings.Trim(cfg.CallbackHost, "[]") {
	case "", "127.0.0.1":
	case "localhost":
		urlHost = "localhost"
	case "::1":
		listen, urlHost = "::1", "::1"
	default:
		return nil, fmt.Errorf("the OAuth callback host %q is not a loopback name: use 127.0.0.1, localhost or ::1", cfg.CallbackHost)
	}
	var static *staticClient // the parsed ClientInfo
	if len(bytes.TrimSpace(cfg.ClientInfo)) > 0 {
		static = &staticClient{}
		if err := json.Unmarshal(cfg.ClientInfo, static); err != nil {
			return nil, fmt.Errorf("the static OAuth client info is not a JSON object with client_id (%v)", syntaxOnly(err))
		}
		if static.ClientID == "" {
			return nil, fmt.Errorf("the static OAuth client info has no client_id")
		}
	}
	var meta map[string]json.RawMessage
	if len(bytes.TrimSpace(cfg.ClientMetadata)) > 0 {
		if err := json.Unmarshal(cfg.ClientMetadata, &meta); err != nil {
			return nil, fmt.Errorf("the static OAuth client metadata is not a JSON object (%v)", syntaxOnly(err))
		}
	}
	if cfg.StoreDir == "" {
		d, err := os.UserConfigDir()
		if err != nil {
			return nil, fmt.Errorf("no directory for the OAuth store (%v): pass one with %v", err, rewrite.HintOAuthStore)
		}
		cfg.StoreDir = filepath.Join(d, "mcp-tasks-proxy", "oauth")
	}
	tgt := target{server: server, serverText: displayURL(server), host: server.Host}
	st, err := openTokenStore(cfg.StoreDir, tgt, cfg.AuthTimeout)
	if err != nil {
		return nil, err
	}
	// A copy of the given client (or a default one) with the package's
	// redirect policy.
	hc := &http.Client{Transport: &http.Transport{Proxy: http.ProxyFromEnvironment, ForceAttemptHTTP2: true, TLSHandshakeTimeout: 10 * time.Second}}
	if cfg.HTTPClient != nil {
		cp := *cfg.HTTPClient
		hc = &cp
	}
	hc.CheckRedirect = sameOriginRedirect
	c := &Client{target: tgt, cfg: cfg, hc: hc, now: time.Now, store: st}
	c.log = cmp.Or(cfg.Logger, zap.NewNop()).With(zap.String("server", server.Host))
	clock := func() time.Time { return c.now() }
	c.disc = &discoverer{target: tgt, hc: c.hc, resource: cfg.Resource, allowHTTP: cfg.AllowHTTP}
	c.cb = &loopback{target: tgt, port: cfg.CallbackPort, listenHost: listen, urlHost: urlHost, log: c.log}
	c.reg = &registrar{target: tgt, static: static, meta: meta, metadataURL: cfg.ClientMetadataURL,
		hc: c.hc, now: clock, log: c.log, store: st, redirectURIs: c.cb.redirectURIs}
	c.ep = &tokenEndpoint{hc: c.hc, now: clock}
	argv := browserCommand(cfg.Browser)
	c.user = &console{open: func(u string) error { return openBrowser(argv, u) }, out: cmp.Or(cfg.Out, io.Discard)}
	c.fl = &flights{target: tgt, timeout: cfg.AuthTimeout, m: map[string]*flight{}}
	c.fl.base, c.fl.stop = context.WithCancel(context.Background())
	c.ren = renewals{stepUps: map[string]int{}, mine: map[string]bool{}}
	return c, nil
}

// Close ends the renewals in flight (their waiters get an error) and waits
// for them, and so for the callback listener.
func (c *Client) Close() error {
	c.fl.close()
	c.hc.CloseIdleConnections()
	return nil
}

// StoreFile is the path of the server's file in the store.
func (c *Client) StoreFile() string { return c.store.path() }

func bearer(t *token) string {
	if t == nil || t.AccessToken == "" {
		return ""
	}
	return "Bearer " + t.AccessToken
}

// Authorization implements routing.Auth: the stored bearer, refreshed
// ahead of its expiry; "" before the first sign-in, so that the server's
// 401 says where to sign in. While a sign-in runs, it waits for it.
func (c *Client) Authorization(ctx context.Context) (string, error) {
	if err := c.fl.join(ctx, keyRenew); err != nil {
		return "", err
	}
	t := c.store.current()
	if t == nil || t.AccessToken == "" {
		return "", nil
	}
	// Refreshed ahead when due, unless a refresh ahead failed within
	// refreshAheadQuiet.
	now, quiet := c.now(), false
	c.ren.note(func(r *renewals) { quiet = r.lastProbe.IsZero() || now.Sub(r.lastProbe) > refreshAheadQuiet })
	if due(t, now) && quiet {
		held := t.AccessToken
		_ = c.fl.fly(ctx, keyProactive, func(fctx context.Context) error { return c.refreshAhead(fctx, held) })
		t = c.store.current()
	}
	return bearer(t), nil
}

// Retry implements routing.Auth. A 401 refreshes the token, or signs in
// when there is no refresh token or the authorization server refuses it
// (invalid_grant; invalid_client registers the proxy again first). A 403
// insufficient_scope signs in for the union of the scopes held and the
// scopes challenged, at most twice per challenged set. It reports true
// when the request should go once more; a request whose token another
// request has already replaced goes again at once.
func (c *Client) Retry(ctx context.Context, status int, h http.Header, sent string) (bool, error) {
	ch := ParseChallenge(h)
	switch {
	case status == http.StatusUnauthorized:
		return c.retryUnauthorized(ctx, ch, sent)
	case status == http.StatusForbidden && ch["error"] == "insufficient_scope":
		return c.stepUp(ctx, ch, sent)
	}
	return false, nil
}

// Login signs in from a terminal, whatever the store holds: the browser
// and the loopback callback, or, with paste set, no listener: the person
// opens the printed address anywhere and pastes the address the browser
// was sent to. It is bounded by ctx and AuthTimeout.
func (c *Client) Login(ctx context.Context, paste func() (string, error)) error {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.AuthTimeout)
	defer cancel()
	ch := c.disc.probe(ctx)
	rec, unlock, err := c.store.locked(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	return c.signIn(ctx, rec, ch, nil, paste)
}

// Status is what the store holds for a server (never a token): the
// server's URL (without userinfo or query) and its file; whether a token
// is stored, its issuer, the client that got it and how that client came
// to be ("static", "metadata-document" or "dynamic"), the scopes granted,
// when it expires (zero: not said), and whether it can be refreshed. Its
// JSON form is what `auth status --json` prints, with the expiry its own.
type Status struct {
	Server       string    `json:"server"`
	StoreFile    string    `json:"storeFile"`
	SignedIn     bool      `json:"signedIn"`
	Issuer       string    `json:"issuer,omitempty"`
	ClientID     string    `json:"clientId,omitempty"`
	ClientSource string    `json:"clientSource,omitempty"`
	Scopes       []string  `json:"scopes,omitempty"`
	Expiry       time.Time `json:"-"`
	Refreshable  bool      `json:"refreshable"`
}

// Status reads the store, not the network.
func (c *Client) Status() (Status, error) {
	st := Status{Server: c.serverText, StoreFile: c.store.path()}
	rec, err := c.store.load()
	if err != nil {
		return st, err
	}
	t := rec.Token
	if t == nil || t.AccessToken == "" {
		return st, nil
	}
	reg := c.reg.registrationFor(rec, t)
	st.SignedIn, st.Issuer, st.ClientID, st.ClientSource = true, t.Issuer, t.ClientID, reg.Source
	st.Scopes, st.Expiry, st.Refreshable = slices.Clone(t.Scopes), t.Expiry, t.RefreshToken != ""
	return st, nil
}

// Logout revokes the tokens where the authorization server supports it
// (RFC 7009), then deletes the server's file from the store. It returns
// ErrNotSignedIn when there was nothing to delete, and an error naming the
// authorization server when the file is gone but a revocation failed.
func (c *Client) Logout(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.AuthTimeout)
	defer cancel()
	unlock, err := c.store.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	rec, err := c.store.load()
	if err != nil {
		return err
	}
	empty := rec.Token == nil && len(rec.Clients) == 0 && rec.AS == nil
	var revokeErr error
	if t := rec.Token; t != nil && rec.AS != nil && rec.AS.RevocationEndpoint != "" {
		reg := c.reg.registrationFor(rec, t)
		if t.RefreshToken != "" {
			revokeErr = c.ep.revoke(ctx, rec.AS, reg, t.RefreshToken, "refresh_token")
		}
		if err := c.ep.revoke(ctx, rec.AS, reg, t.AccessToken, "access_token"); err != nil && revokeErr == nil {
			revokeErr = err
		}
	}
	if err := c.store.remove(); err != nil {
		return fmt.Errorf("cannot delete %s: %w", c.store.path(), err)
	}
	if revokeErr != nil {
		return fmt.Errorf("signed out of %s on this machine, but the authorization server %s did not confirm the revocation: %v", c.host, rec.AS.Issuer, revokeErr)
	}
	if empty {
		return ErrNotSignedIn
	}
	return nil
}

func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

func containsAll(have, want []string) bool {
	return !slices.ContainsFunc(want, func(s string) bool { return !slices.Contains(have, s) })
}
