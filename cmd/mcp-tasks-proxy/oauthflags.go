package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/oauth"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/routing"
)

// oauthFlags are the OAuth flags, shared by the proxy and `auth` (their
// table is in flags.go): most set a field of the client's oauth.Config.
type oauthFlags struct {
	oauth.Config
	clientInfo, clientMetadata string // as given: JSON or @FILE
	// given are the OAuth flags set on the command line, named in the
	// warning that an Authorization header turned them off.
	given []string
}

// check validates the OAuth flags and reads the @FILE values.
func (o *oauthFlags) check() error {
	switch strings.Trim(o.CallbackHost, "[]") {
	case "127.0.0.1", "localhost", "::1":
	default:
		return usagef("--oauth-callback-host %q: the browser must come back to this machine; use 127.0.0.1 (default), localhost or ::1", o.CallbackHost)
	}
	if o.CallbackPort < 0 || o.CallbackPort > 65535 {
		return usagef("--oauth-callback-port %d: use a port number (1-65535), or 0 to derive one from the URL", o.CallbackPort)
	}
	if o.AuthTimeout <= 0 {
		return usagef("--auth-timeout must be positive: seconds (120) or a duration (2m)")
	}
	var err error
	if o.ClientInfo, err = jsonFlag("--static-oauth-client-info", o.clientInfo); err != nil {
		return err
	}
	if len(o.ClientInfo) > 0 {
		var ci struct {
			ClientID any `json:"client_id"`
		}
		if err := json.Unmarshal(o.ClientInfo, &ci); err != nil {
			return usagef("--static-oauth-client-info: not a JSON object (%v); give {\"client_id\": \"...\"} (client_secret, token_endpoint_auth_method and issuer are optional), or @FILE", jsonProblem(err))
		}
		if id, ok := ci.ClientID.(string); !ok || id == "" {
			return usagef("--static-oauth-client-info: no client_id string; give {\"client_id\": \"...\"}, or @FILE")
		}
	}
	if o.ClientMetadata, err = jsonFlag("--static-oauth-client-metadata", o.clientMetadata); err != nil {
		return err
	}
	if len(o.ClientMetadata) > 0 {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(o.ClientMetadata, &m); err != nil {
			return usagef("--static-oauth-client-metadata: not a JSON object (%v); give client metadata such as {\"client_name\": \"...\"}, or @FILE", jsonProblem(err))
		}
	}
	if o.ClientMetadataURL != "" {
		u, err := url.Parse(o.ClientMetadataURL)
		if err != nil || u.Scheme != "https" || u.Host == "" || strings.Trim(u.Path, "/") == "" {
			return usagef("--oauth-client-metadata-url %q: use an https:// URL with a path, where the client's metadata document is served", o.ClientMetadataURL)
		}
	}
	if o.Resource != "" {
		u, err := url.Parse(o.Resource)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return usagef("--resource %q: use an absolute https:// URL (the server's canonical URL)", o.Resource)
		}
	}
	return nil
}

// jsonFlag is a flag value that is JSON, or @FILE whose content is.
func jsonFlag(flagName, v string) ([]byte, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil, nil
	}
	if path, ok := strings.CutPrefix(v, "@"); ok {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, usagef("%s: %v", flagName, err)
		}
		if len(bytes.TrimSpace(b)) == 0 {
			return nil, usagef("%s: %s is empty; it should hold a JSON object", flagName, path)
		}
		return b, nil
	}
	return []byte(v), nil
}

// jsonProblem says what is wrong with JSON without quoting it (it may hold
// a client secret).
func jsonProblem(err error) string {
	if se, ok := errors.AsType[*json.SyntaxError](err); ok {
		return fmt.Sprintf("invalid JSON at byte %d", se.Offset)
	}
	if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		return "a JSON " + te.Value + ", not an object"
	}
	return "invalid JSON"
}

// oauthHTTPClient carries the authorization server's traffic with the
// upstream's TLS settings (--ca-file, --insecure) and proxies.
func oauthHTTPClient(caPEM []byte, insecure bool, connectTimeout time.Duration) (*http.Client, error) {
	t, err := routing.NewTransport(caPEM, insecure, connectTimeout)
	if err != nil {
		return nil, err
	}
	t.ResponseHeaderTimeout = time.Minute
	return &http.Client{Transport: t}, nil
}

// userLines is where the OAuth client's lines for the person go (the
// sign-in address and what to do): stderr always, since that is what hosts
// show, even with --log-file; with --log-file they are logged too, so the
// log tells the whole story. Never stdout, which carries only JSON-RPC.
// The OAuth client writes its lines one at a time.
type userLines struct {
	stderr io.Writer
	logger *zap.Logger // nil: stderr is the log already
}

func (u *userLines) Write(p []byte) (int, error) {
	n, err := u.stderr.Write(p)
	if u.logger != nil {
		if msg := strings.Join(strings.Fields(string(p)), " "); msg != "" {
			u.logger.Warn(msg)
		}
	}
	return n, err
}
