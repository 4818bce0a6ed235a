package oauth

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/filelock"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/routing"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"go.uber.org/zap"
	"golang.org/x/oauth2"
)

// Client is the OAuth client toward one MCP server. It implements
// routing.Auth. It is safe for concurrent use; see the package comment.
type Client struct {
	cfg        Config
	server     *url.URL // canonical
	serverText string   // displayURL(server), for messages and the way out
	host       string
	store      *store
	static     *staticClient
	clientMeta map[string]json.RawMessage
	hc         *http.Client
	log        *zap.Logger
	cbListen   string // the loopback address the callback binds
	cbURLHost  string // the host in the redirect URI
	open       func(url string) error
	now        func() time.Time

	base context.Context // ends at Close
	stop context.CancelFunc
	wg   sync.WaitGroup // the renewals in flight

	outMu sync.Mutex
	out   io.Writer

	mu        sync.Mutex
	rec       *record // the state last read or written; never changed once set
	flights   map[string]*flight
	stepUps   map[string]int  // step-up sign-ins per challenged scope set
	mine      map[string]bool // access tokens this process signed in for
	refused   int             // sign-ins in a row for a refused signed-in token
	lastProbe time.Time       // when a proactive refresh last failed
}

// flight is one renewal that every request needing it waits on.
type flight struct {
	done chan struct{}
	err  error
}

// Flight keys: one renewal of each kind at a time in a process (a step-up
// per scope set); different kinds exclude each other through the store
// lock, as processes do.
const (
	keyRenew = "renew"
	// keyRenewUnattended: a renewal for a request the client did not make
	// (routing.Unattended): it refreshes, and never signs in.
	keyRenewUnattended = "renew-unattended"
	keyProactive       = "refresh ahead"
	keyStepUp          = "step up "
)

// New validates cfg, opens the store (creating its directory) and reads
// the server's record. It does not touch the network.
func New(cfg Config) (*Client, error) {
	server, err := canonicalURL(cfg.ServerURL)
	if err != nil {
		return nil, err
	}
	if cfg.AuthTimeout <= 0 {
		cfg.AuthTimeout = DefaultAuthTimeout
	}
	if cfg.CallbackPort < 0 || cfg.CallbackPort > 65535 {
		return nil, fmt.Errorf("the OAuth callback port %d is not a port number (1-65535, or 0 to derive one)", cfg.CallbackPort)
	}
	listen, urlHost, err := normalizeCallbackHost(cfg.CallbackHost)
	if err != nil {
		return nil, err
	}
	static, err := parseStaticClient(cfg.ClientInfo)
	if err != nil {
		return nil, err
	}
	meta, err := parseClientMetadata(cfg.ClientMetadata)
	if err != nil {
		return nil, err
	}
	if cfg.ClientMetadataURL != "" {
		u, err := url.Parse(cfg.ClientMetadataURL)
		if err != nil || u.Scheme != "https" || u.Host == "" || strings.Trim(u.Path, "/") == "" {
			return nil, fmt.Errorf("the OAuth client metadata URL %q must be an https:// URL with a path", clip(cfg.ClientMetadataURL, 200))
		}
	}
	if cfg.Resource != "" {
		if _, err := canonicalURL(cfg.Resource); err != nil {
			return nil, fmt.Errorf("the OAuth resource %q must be an absolute http:// or https:// URL", clip(cfg.Resource, 200))
		}
	}
	if cfg.StoreDir == "" {
		if cfg.StoreDir, err = defaultStoreDir(); err != nil {
			return nil, err
		}
	}
	st, err := openStore(cfg.StoreDir, server.String())
	if err != nil {
		return nil, err
	}
	rec, err := st.load(server.String())
	if err != nil {
		return nil, err
	}
	hc := &http.Client{Transport: &http.Transport{Proxy: http.ProxyFromEnvironment, ForceAttemptHTTP2: true, TLSHandshakeTimeout: 10 * time.Second}}
	if cfg.HTTPClient != nil {
		cp := *cfg.HTTPClient
		hc = &cp
	}
	hc.CheckRedirect = sameOriginRedirect
	log := cfg.Logger
	if log == nil {
		log = zap.NewNop()
	}
	out := cfg.Out
	if out == nil {
		out = io.Discard
	}
	base, stop := context.WithCancel(context.Background())
	c := &Client{
		cfg:        cfg,
		server:     server,
		serverText: displayURL(server),
		host:       server.Host,
		store:      st,
		static:     static,
		clientMeta: meta,
		hc:         hc,
		log:        log.With(zap.String("server", server.Host)),
		cbListen:   listen,
		cbURLHost:  urlHost,
		now:        time.Now,
		base:       base,
		stop:       stop,
		out:        out,
		rec:        rec,
		flights:    map[string]*flight{},
		stepUps:    map[string]int{},
		mine:       map[string]bool{},
	}
	argv := browserCommand(cfg.Browser)
	c.open = func(u string) error { return openBrowser(argv, u) }
	return c, nil
}

// Close ends the renewals in flight (their waiters get an error) and waits
// for them: the callback listener is closed when Close returns.
func (c *Client) Close() error {
	c.stop()
	c.wg.Wait()
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

func (c *Client) current() *token {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rec.Token
}

// publish makes rec the current state. rec must not change afterwards.
func (c *Client) publish(rec *record) {
	c.mu.Lock()
	c.rec = rec
	c.mu.Unlock()
}

// Authorization implements routing.Auth: the stored bearer, refreshed
// ahead of its expiry; "" before the first sign-in, so that the server's
// 401 says where to sign in. While a sign-in runs, it waits for it.
func (c *Client) Authorization(ctx context.Context) (string, error) {
	c.mu.Lock()
	f := c.flights[keyRenew]
	c.mu.Unlock()
	if f != nil {
		if err := c.wait(ctx, f); err != nil {
			return "", err
		}
	}
	t := c.current()
	if t == nil || t.AccessToken == "" {
		return "", nil
	}
	if c.dueForRefresh(t) {
		held := t.AccessToken
		_ = c.fly(ctx, keyProactive, func(fctx context.Context) error { return c.refreshAhead(fctx, held) })
		t = c.current()
	}
	return bearer(t), nil
}

// dueForRefresh: a refreshable token that is due (see due), and no
// refresh ahead failed in the last 30s.
func (c *Client) dueForRefresh(t *token) bool {
	if !c.due(t) {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastProbe.IsZero() || c.now().Sub(c.lastProbe) > 30*time.Second
}

// due: a refreshable token within a minute (or a quarter of its lifetime,
// when shorter) of its expiry.
func (c *Client) due(t *token) bool {
	if t.RefreshToken == "" || t.Expiry.IsZero() {
		return false
	}
	margin := refreshMargin
	if !t.Obtained.IsZero() {
		if life := t.Expiry.Sub(t.Obtained); life/4 < margin {
			margin = life / 4
		}
	}
	return !c.now().Before(t.Expiry.Add(-margin))
}

// Retry implements routing.Auth. A 401 refreshes the token, or signs in
// when there is no refresh token or the authorization server refuses it
// (invalid_grant; invalid_client registers the proxy again first). A 403
// insufficient_scope signs in for the union of the scopes held and the
// scopes challenged, at most twice per challenged set. It reports true
// when the request should go once more; a request whose token another
// request has already replaced goes again at once.
func (c *Client) Retry(ctx context.Context, status int, h http.Header, sent string) (bool, error) {
	ch := parseChallenge(h)
	switch {
	case status == http.StatusUnauthorized:
		return c.retryUnauthorized(ctx, ch, sent)
	case status == http.StatusForbidden && ch["error"] == "insufficient_scope":
		return c.stepUp(ctx, ch, sent)
	}
	return false, nil
}

func (c *Client) retryUnauthorized(ctx context.Context, ch challenge, sent string) (bool, error) {
	c.mu.Lock()
	t := c.rec.Token
	if t != nil && t.AccessToken != "" && bearer(t) != sent {
		c.mu.Unlock()
		return true, nil // renewed since this request left
	}
	c.mu.Unlock()
	key, attended := keyRenew, !routing.IsUnattended(ctx)
	if !attended {
		key = keyRenewUnattended // never joined by a request that may sign in
	}
	err := c.fly(ctx, key, func(fctx context.Context) error { return c.renew(fctx, ch, sent, attended) })
	if errors.Is(err, errNotOAuth) {
		c.log.Info("oauth: the server answered 401 but publishes no OAuth metadata; the 401 is passed on", zap.Error(err))
		return false, nil
	}
	return err == nil, err
}

// againAfterRefusal counts a sign-in caused by the server refusing a token
// this process just signed in for, and refuses the third in a row (with no
// successful refresh between): a server that never accepts the tokens its
// authorization server issues must not open a browser tab per request.
func (c *Client) againAfterRefusal(sent string, rec *record) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.mine[strings.TrimPrefix(sent, "Bearer ")] {
		return nil
	}
	if c.refused >= maxRefusedSignIns {
		resource := rec.Resource
		if resource == "" {
			resource = c.serverText
		}
		return c.fail(fmt.Sprintf("the server refused the token its authorization server had just issued, %d times in a row; it may expect another resource (the proxy sent %q; see --resource)", c.refused, resource), nil)
	}
	c.refused++
	return nil
}

func (c *Client) stepUp(ctx context.Context, ch challenge, sent string) (bool, error) {
	if routing.IsUnattended(ctx) {
		return false, nil // a step-up signs in: the client's own request will
	}
	challenged := ch.scopes()
	key := strings.Join(sortedCopy(challenged), " ")
	c.mu.Lock()
	t := c.rec.Token
	if t != nil && t.AccessToken != "" && bearer(t) != sent && containsAll(t.Scopes, challenged) {
		c.mu.Unlock()
		return true, nil
	}
	n := c.stepUps[key]
	c.mu.Unlock()
	if n >= maxStepUps {
		return false, c.fail(fmt.Sprintf("the server asks for the scope %q, and the authorization server did not grant it after %d sign-ins", key, n), nil)
	}
	err := c.fly(ctx, keyStepUp+key, func(fctx context.Context) error {
		c.mu.Lock()
		c.stepUps[key]++
		c.mu.Unlock()
		return c.stepUpLocked(fctx, ch, sent, challenged)
	})
	return err == nil, err
}

// fly runs fn once for every request that asks for the same renewal while
// it runs. fn gets a context of its own, bounded by AuthTimeout and ended
// by Close, so one request giving up does not end it for the others; each
// request waits only as long as its own ctx lets it.
func (c *Client) fly(ctx context.Context, key string, fn func(context.Context) error) error {
	c.mu.Lock()
	f := c.flights[key]
	if f == nil {
		if c.base.Err() != nil {
			c.mu.Unlock()
			return c.fail("the proxy is shutting down", c.base.Err())
		}
		f = &flight{done: make(chan struct{})}
		c.flights[key] = f
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			fctx, cancel := context.WithTimeout(c.base, c.cfg.AuthTimeout)
			err := fn(fctx)
			if err != nil {
				var se *SignInError
				if !errors.As(err, &se) {
					err = c.fail(err.Error(), err)
				}
			}
			cancel()
			c.mu.Lock()
			delete(c.flights, key)
			c.mu.Unlock()
			f.err = err
			close(f.done)
		}()
	}
	c.mu.Unlock()
	return c.wait(ctx, f)
}

func (c *Client) wait(ctx context.Context, f *flight) error {
	select {
	case <-f.done:
		return f.err
	case <-ctx.Done():
		return c.fail(fmt.Sprintf("the request ended while it waited for the sign-in (%v)", ctx.Err()), ctx.Err())
	}
}

// fail is the SignInError of this server.
func (c *Client) fail(reason string, err error) *SignInError {
	return &SignInError{Host: c.host, Server: c.serverText, Reason: reason, Err: err}
}

// lock takes the server's store lock, bounded by ctx.
func (c *Client) lock(ctx context.Context) (func(), error) {
	unlock, err := filelock.LockContext(ctx, c.store.lockPath())
	if err != nil {
		if errors.Is(ctx.Err(), context.Canceled) {
			return nil, c.fail("the sign-in was stopped", ctx.Err())
		}
		if ctx.Err() != nil {
			return nil, c.fail(fmt.Sprintf("another mcp-tasks-proxy was signing in to it, or refreshing its token, and did not finish within %v", c.cfg.AuthTimeout), ctx.Err())
		}
		return nil, c.fail(err.Error(), err)
	}
	return unlock, nil
}

// locked takes the server's store lock, bounded by ctx, and reads the
// store under it; the record is the caller's until published. The caller
// calls unlock.
func (c *Client) locked(ctx context.Context) (rec *record, unlock func(), err error) {
	unlock, err = c.lock(ctx)
	if err != nil {
		return nil, nil, err
	}
	rec, err = c.store.load(c.server.String())
	if err != nil {
		unlock()
		return nil, nil, c.fail(err.Error(), err)
	}
	return rec, unlock, nil
}

func (c *Client) save(rec *record) error {
	if err := c.store.save(rec); err != nil {
		return c.fail(err.Error(), err)
	}
	return nil
}

func usable(t *token, now time.Time) bool {
	return t != nil && t.AccessToken != "" && (t.Expiry.IsZero() || now.Before(t.Expiry))
}

// renew, under the store lock: adopt a token another process got in the
// meantime, else refresh, else sign in.
func (c *Client) renew(ctx context.Context, ch challenge, sent string, attended bool) error {
	rec, unlock, err := c.locked(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if t := rec.Token; usable(t, c.now()) && bearer(t) != sent {
		c.log.Debug("oauth: another process renewed the token")
		c.publish(rec)
		return nil
	}
	if t := rec.Token; t != nil && t.RefreshToken != "" {
		err := c.refreshLocked(ctx, rec)
		switch {
		case err == nil:
			return nil
		case isOAuthError(err, "invalid_grant") || errors.Is(err, errNoTokenEndpoint):
			c.log.Info("oauth: the refresh token is no longer accepted; signing in again")
			rec.Token = spent(t)
		case isOAuthError(err, "invalid_client"):
			if reg := c.registrationFor(rec, t); reg.Source == sourceDCR {
				c.log.Info("oauth: the authorization server no longer knows the registered client; registering again")
				delete(rec.Clients, t.Issuer)
				rec.Token = spent(t)
			} else {
				return c.fail(fmt.Sprintf("the authorization server does not accept the client %q (%v); check --static-oauth-client-info or --oauth-client-metadata-url", reg.ClientID, err), err)
			}
		default:
			return c.fail(fmt.Sprintf("the token could not be refreshed: %v", err), err)
		}
	}
	if !attended {
		return c.fail("a sign-in is needed, and it is started only by a request of the client's, not by a stream the proxy keeps open", errUnattended)
	}
	if err := c.againAfterRefusal(sent, rec); err != nil {
		return err
	}
	return c.signIn(ctx, rec, ch, nil, nil)
}

// refreshAhead refreshes a token shortly before it expires, under the
// store lock. A failure is logged; the request goes with what there is.
func (c *Client) refreshAhead(ctx context.Context, held string) error {
	rec, unlock, err := c.locked(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	t := rec.Token
	if t == nil || t.RefreshToken == "" || (t.AccessToken != held && !c.due(t)) {
		c.publish(rec) // another process refreshed, or signed out
		return nil
	}
	err = c.refreshLocked(ctx, rec)
	if err == nil {
		return nil
	}
	c.mu.Lock()
	c.lastProbe = c.now()
	c.mu.Unlock()
	c.log.Warn("oauth: refreshing the token ahead of its expiry failed", zap.Error(err))
	if isOAuthError(err, "invalid_grant") {
		// Keep the access token while it lasts; its 401 will sign in.
		rec.Token = spent(t)
		if err := c.save(rec); err != nil {
			return err
		}
		c.publish(rec)
	}
	return err
}

// spent is t without its refresh token: its scopes still count as held
// for the sign-in that replaces it.
func spent(t *token) *token {
	nt := *t
	nt.RefreshToken = ""
	return &nt
}

var errNoTokenEndpoint = errors.New("no token endpoint is known")

// refreshLocked refreshes rec's token, saves and publishes it.
func (c *Client) refreshLocked(ctx context.Context, rec *record) error {
	if rec.AS == nil || rec.AS.TokenEndpoint == "" {
		return errNoTokenEndpoint
	}
	t := rec.Token
	resource := rec.Resource
	if c.cfg.Resource != "" {
		resource = c.cfg.Resource
	}
	nt, err := c.refresh(ctx, rec.AS, c.registrationFor(rec, t), t, resource)
	if err != nil {
		return err
	}
	rec.Token = nt
	if err := c.save(rec); err != nil {
		return err
	}
	c.publish(rec)
	c.mu.Lock()
	c.refused = 0
	c.mu.Unlock()
	c.log.Info("oauth: token refreshed", zap.Time("expiry", nt.Expiry), zap.Strings("scopes", nt.Scopes))
	return nil
}

func (c *Client) stepUpLocked(ctx context.Context, ch challenge, sent string, challenged []string) error {
	rec, unlock, err := c.locked(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if t := rec.Token; usable(t, c.now()) && bearer(t) != sent && containsAll(t.Scopes, challenged) {
		c.publish(rec)
		return nil
	}
	var held []string
	if rec.Token != nil {
		held = rec.Token.Scopes
	}
	c.log.Info("oauth: the server asks for more scopes; signing in again", zap.Strings("scopes", challenged))
	return c.signIn(ctx, rec, ch, union(held, challenged), nil)
}

// registrationFor is the client that got t: the static one, the metadata
// document, or the registration stored for its issuer.
func (c *Client) registrationFor(rec *record, t *token) *registration {
	if c.static != nil && c.static.ClientID == t.ClientID {
		return c.staticRegistration()
	}
	if c.cfg.ClientMetadataURL != "" && c.cfg.ClientMetadataURL == t.ClientID {
		return &registration{ClientID: t.ClientID, AuthMethod: "none", Source: sourceCIMD}
	}
	if r := rec.Clients[t.Issuer]; r != nil && r.ClientID == t.ClientID {
		return r
	}
	return &registration{ClientID: t.ClientID, AuthMethod: "none", Source: sourceDCR}
}

func (c *Client) staticRegistration() *registration {
	return &registration{ClientID: c.static.ClientID, ClientSecret: c.static.ClientSecret, AuthMethod: c.static.AuthMethod, Source: sourceStatic}
}

// clientFor picks the client for a sign-in, in the spec's order: the
// static one, the metadata document (when the authorization server
// supports it), the stored registration for the issuer (when it lists the
// redirect URI), a new registration. reused is true for a stored one.
func (c *Client) clientFor(ctx context.Context, rec *record, as *oauthex.AuthServerMeta, redirectURI string) (reg *registration, reused bool, err error) {
	if c.static != nil {
		if c.static.Issuer != "" && c.static.Issuer != as.Issuer {
			return nil, false, fmt.Errorf("the static OAuth client is for the authorization server %s, but %s uses %s", c.static.Issuer, c.host, as.Issuer)
		}
		return c.staticRegistration(), false, nil
	}
	if c.cfg.ClientMetadataURL != "" && as.ClientIDMetadataDocumentSupported {
		return &registration{ClientID: c.cfg.ClientMetadataURL, AuthMethod: "none", Source: sourceCIMD}, false, nil
	}
	if r := rec.Clients[as.Issuer]; r != nil && slices.Contains(r.RedirectURIs, redirectURI) {
		return r, true, nil
	}
	uris := c.redirectURIs()
	if !slices.Contains(uris, redirectURI) {
		uris = append(uris, redirectURI)
	}
	r, err := c.register(ctx, as, uris)
	if err != nil {
		return nil, false, err
	}
	if rec.Clients == nil {
		rec.Clients = map[string]*registration{}
	}
	rec.Clients[as.Issuer] = r
	if err := c.save(rec); err != nil { // kept even if the sign-in fails
		return nil, false, err
	}
	c.log.Info("oauth: registered the proxy with the authorization server", zap.String("issuer", as.Issuer), zap.String("client_id", r.ClientID))
	return r, false, nil
}

// scopesFor is what a sign-in asks for: Config.Scope, else the challenge's,
// else the resource metadata's scopes_supported; with the scopes held from
// the same issuer, and extra (a step-up's).
func (c *Client) scopesFor(rec *record, d *discovery, ch challenge, extra []string) []string {
	base := strings.Fields(c.cfg.Scope)
	if len(base) == 0 {
		base = ch.scopes()
	}
	if len(base) == 0 {
		base = d.scopes
	}
	var held []string
	if t := rec.Token; t != nil && t.Issuer == d.as.Issuer {
		held = t.Scopes
	}
	return union(union(held, base), extra)
}

// signIn runs the authorization code flow, under the store lock, and
// stores the token. With paste nil the browser comes back to the loopback
// callback; else the person pastes the address it was sent to.
func (c *Client) signIn(ctx context.Context, rec *record, ch challenge, extra []string, paste func() (string, error)) error {
	d, err := c.discover(ctx, ch)
	if err != nil {
		return c.fail(err.Error(), fmt.Errorf("%w: %w", errDiscovery, err))
	}
	scopes := c.scopesFor(rec, d, ch, extra)
	state := rand.Text()
	verifier := oauth2.GenerateVerifier()

	var cb *callback
	redirectURI := c.redirectURI(c.candidatePorts()[0])
	if paste == nil {
		if cb, err = c.listen(state); err != nil {
			return c.fail(err.Error(), err)
		}
		defer cb.close()
		redirectURI = cb.redirectURI
	}
	reg, reused, err := c.clientFor(ctx, rec, d.as, redirectURI)
	if err != nil {
		return c.fail(err.Error(), err)
	}
	cfg := c.oauth2Config(reg, d.as, redirectURI, scopes)
	authURL := cfg.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", d.resource))
	c.log.Info("oauth: signing in", zap.String("issuer", d.as.Issuer), zap.String("client_id", reg.ClientID),
		zap.Strings("scopes", scopes), zap.String("resource", d.resource), zap.String("redirect_uri", redirectURI))

	var res callbackResult
	if paste != nil {
		c.say("To sign in to %s, open this address in a browser:\n\n  %s\n\nAfter you sign in, the browser goes to an address starting with %s that will not load. Copy that whole address from the address bar and paste it here.\n", c.host, authURL, redirectURI)
		res = c.readPaste(ctx, paste, redirectURI, state)
	} else {
		c.announce(authURL)
		select {
		case res = <-cb.results:
		case <-ctx.Done():
			if reused {
				// A stale registration ends at the AS's error page, never
				// here: register afresh next time.
				delete(rec.Clients, d.as.Issuer)
				_ = c.store.save(rec)
			}
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return c.fail(fmt.Sprintf("nobody finished signing in within %v (the sign-in page was printed on stderr)", c.cfg.AuthTimeout), ctx.Err())
			}
			return c.fail("the sign-in was stopped", ctx.Err())
		}
	}
	if res.err != nil {
		return c.fail(res.err.Error(), res.err)
	}
	// RFC 9207: an iss, when present (or promised), must be the issuer's,
	// before the code is redeemed.
	if res.iss != "" && res.iss != d.as.Issuer {
		return c.fail(fmt.Sprintf("the authorization response names the issuer %q, not %q (RFC 9207); the code was not redeemed", clip(res.iss, 200), d.as.Issuer), nil)
	}
	if res.iss == "" && d.as.AuthorizationResponseIssParameterSupported {
		return c.fail(fmt.Sprintf("the authorization server %s promises an iss in its answer (RFC 9207) and sent none; the code was not redeemed", d.as.Issuer), nil)
	}
	tok, err := c.exchange(ctx, cfg, res.code, verifier, d.resource)
	if err != nil {
		if isOAuthError(err, "invalid_client") && reg.Source == sourceDCR {
			delete(rec.Clients, d.as.Issuer)
			_ = c.store.save(rec)
		}
		return c.fail(fmt.Sprintf("the authorization server did not redeem the code: %v", err), err)
	}
	nt := &token{
		AccessToken:  tok.AccessToken,
		TokenType:    tok.TokenType,
		RefreshToken: tok.RefreshToken,
		Expiry:       tok.Expiry,
		Obtained:     c.now(),
		Scopes:       scopes,
		Issuer:       d.as.Issuer,
		ClientID:     reg.ClientID,
	}
	if s, ok := tok.Extra("scope").(string); ok && s != "" {
		nt.Scopes = strings.Fields(s)
	}
	rec.Resource, rec.ResourceScopes, rec.AS, rec.Token = d.resource, d.scopes, d.as, nt
	if err := c.save(rec); err != nil {
		return err
	}
	c.publish(rec)
	c.mu.Lock()
	c.mine[nt.AccessToken] = true
	c.mu.Unlock()
	c.log.Info("oauth: signed in", zap.String("issuer", d.as.Issuer), zap.Strings("scopes", nt.Scopes), zap.Time("expiry", nt.Expiry))
	c.say("mcp-tasks-proxy: signed in to %s.\n", c.host)
	return nil
}

// announce prints the sign-in address and opens the browser on it.
func (c *Client) announce(authURL string) {
	if c.cfg.NoBrowser {
		c.say("mcp-tasks-proxy: %s needs you to sign in. Open this address in a browser (waiting up to %v):\n\n  %s\n\n", c.host, c.cfg.AuthTimeout, authURL)
		return
	}
	c.say("mcp-tasks-proxy: %s needs you to sign in; opening a browser. If none opens, open this address (waiting up to %v):\n\n  %s\n\n", c.host, c.cfg.AuthTimeout, authURL)
	if err := c.open(authURL); err != nil {
		c.log.Warn("oauth: cannot open a browser; open the printed address", zap.Error(err))
	}
}

func (c *Client) say(format string, args ...any) {
	c.outMu.Lock()
	defer c.outMu.Unlock()
	fmt.Fprintf(c.out, format, args...)
}

// readPaste waits for the pasted address, bounded by ctx.
func (c *Client) readPaste(ctx context.Context, paste func() (string, error), redirectURI, state string) callbackResult {
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
		return callbackResult{err: fmt.Errorf("nothing was pasted within %v", c.cfg.AuthTimeout)}
	}
}

// Login signs in from a terminal, whatever the store holds: the browser
// and the loopback callback, or, with paste set, no listener: the person
// opens the printed address anywhere and pastes the address the browser
// was sent to. It is bounded by ctx and AuthTimeout.
func (c *Client) Login(ctx context.Context, paste func() (string, error)) error {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.AuthTimeout)
	defer cancel()
	ch := c.probe(ctx)
	rec, unlock, err := c.locked(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	return c.signIn(ctx, rec, ch, nil, paste)
}

// probe sends the server one request without a token, for the challenge
// of its 401 (where its resource metadata is, which scopes it wants).
func (c *Client) probe(ctx context.Context) challenge {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.server.String(), strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		return nil
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Method", "ping")
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusUnauthorized {
		return nil
	}
	return parseChallenge(resp.Header)
}

// Status is what the store holds for a server: never a token.
type Status struct {
	// Server is the MCP server URL (without userinfo or query).
	Server string
	// StoreFile is the file that holds it.
	StoreFile string
	// SignedIn: a token is stored.
	SignedIn bool
	// Issuer is the authorization server that issued the token.
	Issuer string
	// ClientID is the client that got it, and ClientSource how that client
	// came to be: "static", "metadata-document" or "dynamic".
	ClientID, ClientSource string
	// Scopes are the scopes granted.
	Scopes []string
	// Expiry is when the access token expires (zero: not said).
	Expiry time.Time
	// Refreshable: a refresh token is stored.
	Refreshable bool
}

// Status reads the store (not the network).
func (c *Client) Status() (Status, error) {
	st := Status{Server: c.serverText, StoreFile: c.store.path()}
	rec, err := c.store.load(c.server.String())
	if err != nil {
		return st, err
	}
	t := rec.Token
	if t == nil || t.AccessToken == "" {
		return st, nil
	}
	reg := c.registrationFor(rec, t)
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
	unlock, err := c.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	rec, err := c.store.load(c.server.String())
	if err != nil {
		return err
	}
	empty := rec.Token == nil && len(rec.Clients) == 0 && rec.AS == nil
	var revokeErr error
	if t := rec.Token; t != nil && rec.AS != nil && rec.AS.RevocationEndpoint != "" {
		reg := c.registrationFor(rec, t)
		if t.RefreshToken != "" {
			revokeErr = c.revoke(ctx, rec.AS, reg, t.RefreshToken, "refresh_token")
		}
		if err := c.revoke(ctx, rec.AS, reg, t.AccessToken, "access_token"); err != nil && revokeErr == nil {
			revokeErr = err
		}
	}
	if err := c.store.remove(); err != nil {
		return fmt.Errorf("cannot delete %s: %w", c.store.path(), err)
	}
	c.publish(&record{Version: storeVersion, Server: c.server.String()})
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
	for _, s := range want {
		if !slices.Contains(have, s) {
			return false
		}
	}
	return true
}

func sortedCopy(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return slices.Compact(c)
}
