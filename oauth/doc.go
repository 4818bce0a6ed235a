// Package oauth is the OAuth 2.1 client of mcp-tasks-proxy toward a
// protected MCP server, as the MCP authorization specification
// (2025-11-25 and 2026-07-28) lays it out. A *Client plugs into
// routing.Config.Auth: it puts the bearer on every upstream request and,
// when the server refuses one, refreshes, signs in again or steps up.
//
//	upstream 401 ──▶ Retry ──▶ refresh (token endpoint, with resource)
//	                      └──▶ sign-in: protected resource metadata (RFC 9728)
//	                             ─▶ authorization server metadata (RFC 8414, OIDC)
//	                             ─▶ client: static, metadata document, or DCR (RFC 7591)
//	                             ─▶ browser + loopback callback, PKCE S256, resource (RFC 8707)
//	                             ─▶ iss check (RFC 9207) ─▶ code exchange ─▶ store
//	upstream 403 insufficient_scope ──▶ Retry ──▶ sign-in for the union of the scopes
//
// What it owns: discovery, client registration, PKCE, the loopback
// callback, the browser, refresh and step-up, revocation, and the token
// store: one file per server (mode 0600, atomic writes) in a directory of
// mode 0700, with one lock file per server (internal/statefile, the
// proxy's one cross-process lock), taken for a sign-in, a refresh and a
// logout, never for an ordinary request. A process that waited for the
// lock reads the store again before doing anything, so two proxies on one
// server sign in once and never spend one refresh token twice.
//
// Inside, a Client decides when to refresh, sign in or step up, and runs
// the sign-in; the rest is done by parts, each with its own state and lock:
// the token store (the record, its file and its lock), the discoverer
// (metadata), the registrar (which client the proxy is, and DCR), the
// token endpoint (code exchange, refresh, revocation), the loopback
// (redirect URIs, the callback listener), the console (the person, the
// browser, a pasted address), and the flights (the renewals under way).
//
// Concurrency: a Client is safe for concurrent use. Requests that need the
// same renewal share it (one sign-in, one refresh); each waits for it only
// as long as its own context lets it, and the renewal itself is bounded by
// Config.AuthTimeout. When a sign-in ends without a token, every request
// waiting on it gets its error (*SignInError).
//
// What it must never do: put a secret (access or refresh token,
// authorization code, PKCE verifier, client secret) in a log line, an
// error or a user-facing line; write anything to stdout (the JSON-RPC
// stream) or let the browser it starts write there; listen anywhere but
// loopback, or longer than a sign-in runs; follow a redirect to another
// origin. It knows nothing of JSON-RPC beyond the one ping that Login
// sends without a token, to read the server's challenge.
package oauth
