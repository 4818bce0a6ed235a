package oauth

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/routing"
	"go.uber.org/zap"
)

// The renewal policy: when a request's token is refused or due, refresh
// it, sign in again, or step up; and when not to (a server that never
// accepts its authorization server's tokens, a scope that is never
// granted, a request the client did not make).

// Flight keys: one renewal of each kind at a time (a step-up per scope
// set); different kinds exclude each other through the store lock.
const (
	keyRenew = "renew"
	// keyRenewUnattended: a renewal for a request the client did not make
	// (routing.Unattended): it refreshes, and never signs in.
	keyRenewUnattended = "renew-unattended"
	keyProactive       = "refresh ahead"
	keyStepUp          = "step up "
)

// renewals is what the policy remembers between requests.
type renewals struct {
	mu        sync.Mutex
	stepUps   map[string]int  // step-up sign-ins per challenged scope set
	mine      map[string]bool // access tokens this process signed in for
	refused   int             // sign-ins in a row for a refused signed-in token
	lastProbe time.Time       // when a proactive refresh last failed
}

func (r *renewals) note(f func(r *renewals)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f(r)
}

// due: a refreshable token within a minute (or a quarter of its lifetime,
// when shorter) of its expiry.
func due(t *token, now time.Time) bool {
	if t.RefreshToken == "" || t.Expiry.IsZero() {
		return false
	}
	margin := refreshMargin
	if !t.Obtained.IsZero() {
		if life := t.Expiry.Sub(t.Obtained); life/4 < margin {
			margin = life / 4
		}
	}
	return !now.Before(t.Expiry.Add(-margin))
}

func usable(t *token, now time.Time) bool {
	return t != nil && t.AccessToken != "" && (t.Expiry.IsZero() || now.Before(t.Expiry))
}

func (c *Client) retryUnauthorized(ctx context.Context, ch challenge, sent string) (bool, error) {
	if t := c.store.current(); t != nil && t.AccessToken != "" && bearer(t) != sent {
		return true, nil // renewed since this request left
	}
	key, attended := keyRenew, !routing.IsUnattended(ctx)
	if !attended {
		key = keyRenewUnattended // never joined by a request that may sign in
	}
	err := c.fl.fly(ctx, key, func(fctx context.Context) error { return c.renew(fctx, ch, sent, attended) })
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
	refused, over := 0, false
	c.ren.note(func(r *renewals) {
		switch {
		case !r.mine[strings.TrimPrefix(sent, "Bearer ")]:
		case r.refused >= maxRefusedSignIns:
			refused, over = r.refused, true
		default:
			r.refused++
		}
	})
	if !over {
		return nil
	}
	return c.fail(fmt.Sprintf("the server refused the token its authorization server had just issued, %d times in a row; it may expect another resource (the proxy sent %q; see %v)",
		refused, cmp.Or(rec.Resource, c.serverText), rewrite.HintResource), nil)
}

func (c *Client) stepUp(ctx context.Context, ch challenge, sent string) (bool, error) {
	if routing.IsUnattended(ctx) {
		return false, nil // a step-up signs in: the client's own request will
	}
	challenged := ch.scopes()
	key := strings.Join(slices.Compact(slices.Sorted(slices.Values(challenged))), " ")
	if t := c.store.current(); t != nil && t.AccessToken != "" && bearer(t) != sent && containsAll(t.Scopes, challenged) {
		return true, nil
	}
	var n int
	c.ren.note(func(r *renewals) { n = r.stepUps[key] })
	if n >= maxStepUps {
		return false, c.fail(fmt.Sprintf("the server asks for the scope %q, and the authorization server did not grant it after %d sign-ins", key, n), nil)
	}
	err := c.fl.fly(ctx, keyStepUp+key, func(fctx context.Context) error {
		c.ren.note(func(r *renewals) { r.stepUps[key]++ })
		return c.stepUpLocked(fctx, ch, sent, challenged)
	})
	return err == nil, err
}

// renew, under the store lock: adopt a token another process got in the
// meantime, else refresh, else sign in.
func (c *Client) renew(ctx context.Context, ch challenge, sent string, attended bool) error {
	rec, unlock, err := c.store.locked(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if t := rec.Token; usable(t, c.now()) && bearer(t) != sent {
		c.log.Debug("oauth: another process renewed the token")
		c.store.publish(rec)
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
			if reg := c.reg.registrationFor(rec, t); reg.Source == sourceDCR {
				c.log.Info("oauth: the authorization server no longer knows the registered client; registering again")
				delete(rec.Clients, t.Issuer)
				rec.Token = spent(t)
			} else {
				return c.fail(fmt.Sprintf("the authorization server does not accept the client %q (%v); check %v or %v", reg.ClientID, err, rewrite.HintStaticClientInfo, rewrite.HintClientMetadataURL), err)
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
	rec, unlock, err := c.store.locked(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	t := rec.Token
	if t == nil || t.RefreshToken == "" || (t.AccessToken != held && !due(t, c.now())) {
		c.store.publish(rec) // another process refreshed, or signed out
		return nil
	}
	err = c.refreshLocked(ctx, rec)
	if err == nil {
		return nil
	}
	now := c.now()
	c.ren.note(func(r *renewals) { r.lastProbe = now })
	c.log.Warn("oauth: refreshing the token ahead of its expiry failed", zap.Error(err))
	if isOAuthError(err, "invalid_grant") {
		// Keep the access token while it lasts; its 401 will sign in.
		rec.Token = spent(t)
		if err := c.store.save(rec); err != nil {
			return err
		}
		c.store.publish(rec)
	}
	return err
}

// spent is t without its refresh token; its scopes still count as held
// for the sign-in that replaces it.
func spent(t *token) *token {
	nt := *t
	nt.RefreshToken = ""
	return &nt
}

var errNoTokenEndpoint = errors.New("no token endpoint is known")

func (c *Client) refreshLocked(ctx context.Context, rec *record) error {
	if rec.AS == nil || rec.AS.TokenEndpoint == "" {
		return errNoTokenEndpoint
	}
	t := rec.Token
	nt, err := c.ep.refresh(ctx, rec.AS, c.reg.registrationFor(rec, t), t, cmp.Or(c.cfg.Resource, rec.Resource))
	if err != nil {
		return err
	}
	rec.Token = nt
	if err := c.store.save(rec); err != nil {
		return err
	}
	c.store.publish(rec)
	c.ren.note(func(r *renewals) { r.refused = 0 }) // refusals no longer come in a row
	c.log.Info("oauth: token refreshed", zap.Time("expiry", nt.Expiry), zap.Strings("scopes", nt.Scopes))
	return nil
}

func (c *Client) stepUpLocked(ctx context.Context, ch challenge, sent string, challenged []string) error {
	rec, unlock, err := c.store.locked(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if t := rec.Token; usable(t, c.now()) && bearer(t) != sent && containsAll(t.Scopes, challenged) {
		c.store.publish(rec)
		return nil
	}
	var held []string
	if rec.Token != nil {
		held = rec.Token.Scopes
	}
	c.log.Info("oauth: the server asks for more scopes; signing in again", zap.Strings("scopes", challenged))
	return c.signIn(ctx, rec, ch, union(held, challenged), nil)
}
