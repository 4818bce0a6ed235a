package oauth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/hostconfig"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/statefile"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// storeVersion is the file format's version. A file of a later version is
// refused rather than overwritten.
const storeVersion = 1

// record is one server's stored state.
type record struct {
	Version int    `json:"version"`
	Server  string `json:"server"`
	// Resource is what the last sign-in sent as resource (RFC 8707), and
	// what refreshes send.
	Resource string `json:"resource,omitempty"`
	// ResourceScopes is the protected resource metadata's scopes_supported.
	ResourceScopes []string `json:"resource_scopes,omitempty"`
	// AS is the metadata of the authorization server of the last sign-in:
	// its token endpoint serves refreshes, its revocation endpoint logout.
	AS *oauthex.AuthServerMeta `json:"authorization_server,omitempty"`
	// Clients are the dynamically registered clients, by issuer.
	Clients map[string]*registration `json:"clients,omitempty"`
	// Token is the current grant.
	Token *token `json:"token,omitempty"`
}

// registration is a client the proxy uses with one issuer.
type registration struct {
	ClientID     string    `json:"client_id"`
	ClientSecret string    `json:"client_secret,omitempty"`
	AuthMethod   string    `json:"token_endpoint_auth_method,omitempty"`
	RedirectURIs []string  `json:"redirect_uris,omitempty"`
	Source       string    `json:"source"` // sourceStatic, sourceCIMD, sourceDCR
	RegisteredAt time.Time `json:"registered_at,omitzero"`
}

// How the client was obtained.
const (
	sourceStatic = "static"
	sourceCIMD   = "metadata-document"
	sourceDCR    = "dynamic"
)

// token is a grant. Expiry is zero when the server gave no lifetime.
type token struct {
	AccessToken  string    `json:"access_token"`
	TokenType    string    `json:"token_type,omitempty"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`
	Obtained     time.Time `json:"obtained,omitzero"`
	Scopes       []string  `json:"scopes,omitempty"`
	Issuer       string    `json:"issuer,omitempty"`
	ClientID     string    `json:"client_id,omitempty"`
}

// tokenStore is the server's part of the store as this process knows it:
// the record last read or written (published: requests take their bearer
// from it), its file, and the cross-process lock (internal/statefile) that
// a sign-in, a refresh and a logout hold, and an ordinary request never
// takes. Whoever takes the lock reads the file again under it.
type tokenStore struct {
	target
	doc     statefile.File
	timeout time.Duration // AuthTimeout, named when the lock is not had in time

	mu  sync.Mutex
	rec *record // the state last read or written; never changed once set
}

// openTokenStore makes dir (mode 0700) when it is missing, refuses one
// that others can read, and reads the server's record.
func openTokenStore(dir string, t target, timeout time.Duration) (*tokenStore, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("cannot create the OAuth store %s: %w", dir, err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("cannot open the OAuth store %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("the OAuth store %s is not a directory", dir)
	}
	if err := checkPrivate(dir, fi.Mode(), "700"); err != nil {
		return nil, err
	}
	name := filepath.Join(dir, storeName(t.server))
	s := &tokenStore{target: t, timeout: timeout,
		doc: statefile.File{Path: name + ".json", LockPath: name + ".lock", Version: storeVersion, Indent: "  "}}
	s.doc.Check = func(fi fs.FileInfo) error { return checkPrivate(s.doc.Path, fi.Mode(), "600") }
	if s.rec, err = s.load(); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *tokenStore) path() string { return s.doc.Path }

// current is the published token (nil before any).
func (s *tokenStore) current() *token {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rec.Token
}

// publish makes rec the current state. rec must not change afterwards.
func (s *tokenStore) publish(rec *record) {
	s.mu.Lock()
	s.rec = rec
	s.mu.Unlock()
}

// lock takes the server's store lock, bounded by ctx.
func (s *tokenStore) lock(ctx context.Context) (func(), error) {
	unlock, err := s.doc.Lock(ctx)
	if err != nil {
		if errors.Is(ctx.Err(), context.Canceled) {
			return nil, s.fail("the sign-in was stopped", ctx.Err())
		}
		if ctx.Err() != nil {
			return nil, s.fail(fmt.Sprintf("another mcp-tasks-proxy was signing in to it, or refreshing its token, and did not finish within %v", s.timeout), ctx.Err())
		}
		return nil, s.fail(err.Error(), err)
	}
	return unlock, nil
}

// locked takes the server's store lock, bounded by ctx, and reads the
// store under it; the record is the caller's until published. The caller
// calls unlock.
func (s *tokenStore) locked(ctx context.Context) (rec *record, unlock func(), err error) {
	unlock, err = s.lock(ctx)
	if err != nil {
		return nil, nil, err
	}
	rec, err = s.load()
	if err != nil {
		unlock()
		return nil, nil, s.fail(err.Error(), err)
	}
	return rec, unlock, nil
}

// load reads the server's record (a missing file is an empty one),
// without the lock.
func (s *tokenStore) load() (*record, error) {
	var r record
	_, err := s.doc.Read(&r)
	if invalid, ok := errors.AsType[*statefile.InvalidError](err); ok {
		return nil, fmt.Errorf("the OAuth store file %s is not valid JSON (%v); delete it to sign in again", s.path(), syntaxOnly(invalid.Err))
	} else if newer, ok := errors.AsType[*statefile.NewerError](err); ok {
		return nil, fmt.Errorf("the OAuth store file %s has version %d, newer than this mcp-tasks-proxy knows (%d); upgrade, or delete it", s.path(), newer.Version, storeVersion)
	} else if err != nil {
		return nil, err
	}
	r.Version, r.Server = storeVersion, s.server.String()
	return &r, nil
}

// save writes rec atomically (statefile.File.Write: a reader sees the old
// record or the new one, never a part), not publishing it; its error is a
// *SignInError.
func (s *tokenStore) save(rec *record) error {
	if err := s.doc.Write(rec); err != nil {
		return s.fail(err.Error(), err)
	}
	return nil
}

// remove deletes the server's file (not its lock file: see statefile) and
// publishes an empty record.
func (s *tokenStore) remove() error {
	if err := os.Remove(s.doc.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	s.publish(&record{Version: storeVersion, Server: s.server.String()})
	return nil
}

// checkPrivate refuses a store directory or file that group or others may
// use, naming the chmod that fixes it. Windows has no such mode bits.
func checkPrivate(path string, mode fs.FileMode, want string) error {
	if runtime.GOOS == "windows" || mode.Perm()&0o077 == 0 {
		return nil
	}
	kind := "file"
	if mode.IsDir() {
		kind = "directory"
	}
	return fmt.Errorf("the OAuth store %s %s can be read by other users (mode %04o), so it is not used; fix it with: chmod %s %s",
		kind, path, mode.Perm(), want, hostconfig.ShellQuote(path))
}

// storeName names a server's NAME.json and NAME.lock: its host (':' made
// '_') and 16 hex digits of the SHA-256 of its canonical URL, so that a
// person can tell the files apart and two endpoints of one host do not
// share one.
func storeName(server *url.URL) string {
	host := strings.Map(func(r rune) rune {
		if r == '.' || r == '-' || ('a' <= r && r <= 'z') || ('0' <= r && r <= '9') {
			return r
		}
		return '_'
	}, strings.ToLower(server.Host))
	sum := sha256.Sum256([]byte(server.String()))
	return host + "-" + hex.EncodeToString(sum[:8])
}

// syntaxOnly keeps a JSON decoding error from quoting the file's content.
func syntaxOnly(err error) error {
	if se, ok := errors.AsType[*json.SyntaxError](err); ok {
		return fmt.Errorf("syntax error at byte %d", se.Offset)
	}
	if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		return fmt.Errorf("wrong type for %s", te.Field)
	}
	return errors.New("cannot decode")
}
