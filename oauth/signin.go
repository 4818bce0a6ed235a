package oauth

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"

	"go.uber.org/zap"
	"golang.org/x/oauth2"
)

// The sign-in: the authorization code flow with PKCE, under the store
// lock, from discovery to the stored token.

type attempt struct {
	d           *discovery
	scopes      []string
	state       string
	verifier    string
	cb          *callback // nil when the person pastes the address
	redirectURI string
	reg         *registration
	reused      bool // reg is a stored registration
	cfg         *oauth2.Config
	authURL     string
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
	d, err := c.disc.discover(ctx, ch)
	if err != nil {
		return c.fail(err.Error(), fmt.Errorf("%w: %w", errDiscovery, err))
	}
	a, err := c.start(ctx, rec, d, c.scopesFor(rec, d, ch, extra), paste == nil)
	if err != nil {
		return err
	}
	if a.cb != nil {
		defer a.cb.close()
	}
	res, err := c.awaitCode(ctx, rec, a, paste)
	if err == nil {
		err = c.redeem(ctx, rec, a, res.code)
	}
	// The browser's page waits for this: it says "Signed in" only now.
	select {
	case res.verdict <- err: // a nil verdict (no page waits) takes nothing
	default:
	}
	return err
}

// start prepares a sign-in: its state and PKCE verifier, the callback
// listener (with listen), the client, and the address to sign in at.
func (c *Client) start(ctx context.Context, rec *record, d *discovery, scopes []string, listen bool) (*attempt, error) {
	a := &attempt{d: d, scopes: scopes, state: rand.Text(), verifier: oauth2.GenerateVerifier()}
	a.redirectURI = c.cb.redirectURI(c.cb.candidatePorts()[0])
	if listen {
		cb, err := c.cb.listen(a.state)
		if err != nil {
			return nil, c.fail(err.Error(), err)
		}
		a.cb, a.redirectURI = cb, cb.redirectURI
	}
	reg, reused, err := c.reg.clientFor(ctx, rec, d.as, a.redirectURI)
	if err != nil {
		if a.cb != nil {
			a.cb.close()
		}
		return nil, c.fail(err.Error(), err)
	}
	a.reg, a.reused = reg, reused
	a.cfg = &oauth2.Config{ClientID: reg.ClientID, ClientSecret: reg.ClientSecret, RedirectURL: a.redirectURI, Scopes: scopes,
		Endpoint: oauth2.Endpoint{AuthURL: d.as.AuthorizationEndpoint, TokenURL: d.as.TokenEndpoint, AuthStyle: authStyle(reg, d.as)}}
	a.authURL = a.cfg.AuthCodeURL(a.state, oauth2.S256ChallengeOption(a.verifier), oauth2.SetAuthURLParam("resource", d.resource))
	c.log.Info("oauth: signing in", zap.String("issuer", d.as.Issuer), zap.String("client_id", reg.ClientID),
		zap.Strings("scopes", scopes), zap.String("resource", d.resource), zap.String("redirect_uri", a.redirectURI))
	return a, nil
}

// awaitCode shows the person where to sign in and waits for the
// authorization response: at the callback, or pasted. It returns the code
// once the response's issuer is checked, in the response (whose verdict
// the callback page waits for) in any case.
func (c *Client) awaitCode(ctx context.Context, rec *record, a *attempt, paste func() (string, error)) (callbackResult, error) {
	var res callbackResult
	timeout := c.cfg.AuthTimeout
	switch {
	case paste != nil:
		c.user.say("To sign in to %s, open this address in a browser:\n\n  %s\n\nAfter you sign in, the browser goes to an address starting with %s that will not load. Copy that whole address from the address bar and paste it here.\n", c.host, a.authURL, a.redirectURI)
		got := make(chan callbackResult, 1)
		go func() {
			s, err := paste()
			if err != nil {
				got <- callbackResult{err: fmt.Errorf("no address was pasted (%v)", err)}
				return
			}
			got <- parsePasted(s, a.redirectURI, a.state)
		}()
		select {
		case res = <-got:
		case <-ctx.Done():
			res = callbackResult{err: fmt.Errorf("nothing was pasted within %v", timeout)}
		}
	case c.cfg.NoBrowser:
		c.user.say("mcp-tasks-proxy: %s needs you to sign in. Open this address in a browser (waiting up to %v):\n\n  %s\n\n", c.host, timeout, a.authURL)
	default:
		c.user.say("mcp-tasks-proxy: %s needs you to sign in; opening a browser. If none opens, open this address (waiting up to %v):\n\n  %s\n\n", c.host, timeout, a.authURL)
		if err := c.user.open(a.authURL); err != nil {
			c.log.Warn("oauth: cannot open a browser; open the printed address", zap.Error(err))
		}
	}
	if paste == nil {
		select {
		case res = <-a.cb.results:
		case <-ctx.Done():
			if a.reused {
				// A stale registration ends at the AS's error page, never
				// here: register afresh next time.
				delete(rec.Clients, a.d.as.Issuer)
				_ = c.store.save(rec)
			}
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return res, c.fail(fmt.Sprintf("nobody finished signing in within %v (the sign-in page was printed on stderr)", timeout), ctx.Err())
			}
			return res, c.fail("the sign-in was stopped", ctx.Err())
		}
	}
	if res.err != nil {
		return res, c.fail(res.err.Error(), res.err)
	}
	// RFC 9207: an iss, when present (or promised), must be the issuer's,
	// before the code is redeemed.
	as := a.d.as
	if res.iss != "" && res.iss != as.Issuer {
		return res, c.fail(fmt.Sprintf("the authorization response names the issuer %q, not %q (RFC 9207); the code was not redeemed", clip(res.iss, 200), as.Issuer), nil)
	}
	if res.iss == "" && as.AuthorizationResponseIssParameterSupported {
		return res, c.fail(fmt.Sprintf("the authorization server %s promises an iss in its answer (RFC 9207) and sent none; the code was not redeemed", as.Issuer), nil)
	}
	return res, nil
}

func (c *Client) redeem(ctx context.Context, rec *record, a *attempt, code string) error {
	d := a.d
	tok, err := c.ep.exchange(ctx, a.cfg, code, a.verifier, d.resource)
	if err != nil {
		if isOAuthError(err, "invalid_client") && a.reg.Source == sourceDCR {
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
		Scopes:       a.scopes,
		Issuer:       d.as.Issuer,
		ClientID:     a.reg.ClientID,
	}
	if s, ok := tok.Extra("scope").(string); ok && s != "" {
		nt.Scopes = strings.Fields(s)
	}
	rec.Resource, rec.ResourceScopes, rec.AS, rec.Token = d.resource, d.scopes, d.as, nt
	if err := c.store.save(rec); err != nil {
		return err
	}
	c.store.publish(rec)
	c.ren.note(func(r *renewals) { r.mine[nt.AccessToken] = true })
	c.log.Info("oauth: signed in", zap.String("issuer", d.as.Issuer), zap.Strings("scopes", nt.Scopes), zap.Time("expiry", nt.Expiry))
	c.user.say("mcp-tasks-proxy: signed in to %s.\n", c.host)
	return nil
}
