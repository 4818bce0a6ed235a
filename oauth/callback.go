package oauth

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"hash/fnv"
	"html"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
)

// The loopback callback: it listens only while a sign-in runs, on the
// loopback address of Config.CallbackHost, and answers exactly one path.

// Derived ports are taken from the dynamic range, 49152–65535.
const (
	portBase  = 49152
	portRange = 65535 - portBase + 1 - portTries
)

// derivedPort is the callback port for a server URL: stable across runs,
// so a registered redirect URI stays valid.
func derivedPort(server string) int {
	h := fnv.New32a()
	h.Write([]byte(server))
	return portBase + int(h.Sum32()%uint32(portRange))
}

// callbackResult is what the authorization server sent back.
type callbackResult struct {
	code, iss string
	err       error
	// verdict, for a code that came to the callback, takes the sign-in's
	// outcome (nil: signed in) once every check and the code exchange are
	// done, so that the browser's page says how it ended.
	verdict chan error
}

// pageWait bounds how long the callback page waits for the sign-in's
// outcome (the issuer check and the code exchange) before it says the
// sign-in is still finishing.
const pageWait = 30 * time.Second

type callback struct {
	srv         *http.Server
	redirectURI string
	host        string // the Host header the browser sends
	state       string
	serverHost  string
	log         *zap.Logger
	results     chan callbackResult
	done        chan struct{}
	wait        time.Duration // pageWait; shorter in tests
}

// loopback is where the browser comes back to: the redirect URIs of the
// candidate ports, and the listener of one sign-in.
type loopback struct {
	target
	port       int    // Config.CallbackPort; 0: derived
	listenHost string // the loopback address the callback binds
	urlHost    string // the host in the redirect URI
	log        *zap.Logger
}

// candidatePorts lists the ports to try: the pinned one, or the derived
// one and the next few.
func (l *loopback) candidatePorts() []int {
	if l.port != 0 {
		return []int{l.port}
	}
	p := derivedPort(l.server.String())
	var ports []int
	for i := range portTries {
		ports = append(ports, p+i)
	}
	return ports
}

func (l *loopback) redirectURI(port int) string {
	return "http://" + net.JoinHostPort(l.urlHost, strconv.Itoa(port)) + callbackPath
}

// redirectURIs are the URIs a dynamic registration lists: every candidate,
// so a derived port that moves on needs no new registration.
func (l *loopback) redirectURIs() []string {
	var uris []string
	for _, p := range l.candidatePorts() {
		uris = append(uris, l.redirectURI(p))
	}
	return uris
}

// listen starts the callback on the first free candidate port.
func (l *loopback) listen(state string) (*callback, error) {
	var lastErr error
	for _, p := range l.candidatePorts() {
		ln, err := net.Listen("tcp", net.JoinHostPort(l.listenHost, strconv.Itoa(p)))
		if err != nil {
			lastErr = err
			if l.port != 0 {
				if errors.Is(err, syscall.EADDRINUSE) {
					return nil, fmt.Errorf("the OAuth callback port %d on %s is taken (by another program, or another sign-in); free it, or pick another with %v, or leave it unset to let the proxy choose", p, l.listenHost, rewrite.HintOAuthCallbackPort)
				}
				return nil, fmt.Errorf("cannot listen for the OAuth callback on %s port %d: %v", l.listenHost, p, err)
			}
			l.log.Debug("oauth callback port taken, moving on", zap.Int("port", p))
			continue
		}
		cb := &callback{
			redirectURI: l.redirectURI(p),
			host:        net.JoinHostPort(l.urlHost, strconv.Itoa(p)),
			state:       state,
			serverHost:  l.host,
			log:         l.log,
			results:     make(chan callbackResult, 1),
			done:        make(chan struct{}),
			wait:        pageWait,
		}
		cb.srv = &http.Server{Handler: cb, ReadHeaderTimeout: 10 * time.Second}
		go func() {
			defer close(cb.done)
			_ = cb.srv.Serve(ln)
		}()
		return cb, nil
	}
	ports := l.candidatePorts()
	return nil, fmt.Errorf("cannot listen for the OAuth callback on %s: ports %d to %d are all taken (%v); pick a free one with %v",
		l.listenHost, ports[0], ports[len(ports)-1], lastErr, rewrite.HintOAuthCallbackPort)
}

func (cb *callback) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if cb.srv.Shutdown(ctx) != nil {
		_ = cb.srv.Close()
	}
	<-cb.done
}

func (cb *callback) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != callbackPath || r.Host != cb.host {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", "GET")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	q := r.URL.Query()
	if !stateMatches(q.Get("state"), cb.state) {
		cb.log.Warn("oauth callback with a wrong state refused; still waiting for the sign-in", zap.String("server", cb.serverHost))
		page(w, http.StatusBadRequest, "Not this sign-in",
			"This page does not belong to the sign-in mcp-tasks-proxy is waiting for (an old tab, or a link from elsewhere). Nothing was done. Close it and use the newest sign-in page.")
		return
	}
	res := resultFromQuery(q)
	if res.err == nil {
		res.verdict = make(chan error, 1)
	}
	select {
	case cb.results <- res:
	default: // a second answer to one sign-in: the first one counts
		page(w, http.StatusConflict, "Already answered",
			"mcp-tasks-proxy already received an answer for this sign-in; the first tab shows how it went. Nothing was done with this one. You can close this tab.")
		return
	}
	if res.err != nil {
		page(w, http.StatusOK, "Sign-in failed", fmt.Sprintf("Signing in to %s failed: %v. You can close this tab.", cb.serverHost, res.err))
		return
	}
	// "Signed in" only once the sign-in has checked the answer's issuer
	// and redeemed the code.
	timer := time.NewTimer(cb.wait)
	defer timer.Stop()
	select {
	case err := <-res.verdict:
		if err != nil {
			reason := err.Error()
			if se, ok := errors.AsType[*SignInError](err); ok {
				reason = se.Reason
			}
			page(w, http.StatusBadRequest, "Sign-in failed", fmt.Sprintf("Signing in to %s failed: %s. mcp-tasks-proxy is not signed in. You can close this tab.", cb.serverHost, reason))
			return
		}
		page(w, http.StatusOK, "Signed in", fmt.Sprintf("mcp-tasks-proxy is signed in to %s. You can close this tab.", cb.serverHost))
	case <-timer.C:
		page(w, http.StatusAccepted, "Finishing the sign-in", fmt.Sprintf("mcp-tasks-proxy received the answer and is still finishing the sign-in to %s; the terminal says how it ends. You can close this tab.", cb.serverHost))
	case <-r.Context().Done():
	}
}

func stateMatches(got, want string) bool {
	return want != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// resultFromQuery reads an authorization response (RFC 6749 §4.1.2).
func resultFromQuery(q url.Values) callbackResult {
	if e := q.Get("error"); e != "" {
		return callbackResult{err: &tokenError{Code: clip(e, 100), Description: q.Get("error_description")}}
	}
	if q.Get("code") == "" {
		return callbackResult{err: errors.New("the authorization server sent back no code")}
	}
	return callbackResult{code: q.Get("code"), iss: q.Get("iss")}
}

// parsePasted reads the redirect address a person pasted (headless
// sign-in). It must be the redirect URI with the query the authorization
// server added; the text is never quoted back (it holds the code).
func parsePasted(pasted, redirectURI, state string) callbackResult {
	u, err := url.Parse(strings.Trim(pasted, " \t\r\n\"'"))
	want, _ := url.Parse(redirectURI)
	if err != nil || u.Scheme != want.Scheme || u.Host != want.Host || u.Path != want.Path {
		return callbackResult{err: fmt.Errorf("the pasted text is not the address the browser was sent to (it starts with %s?)", redirectURI)}
	}
	q := u.Query()
	if !stateMatches(q.Get("state"), state) {
		return callbackResult{err: errors.New("the pasted address belongs to another sign-in (its state does not match); paste the one from the newest sign-in page")}
	}
	return resultFromQuery(q)
}

func page(w http.ResponseWriter, status int, title, text string) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	w.WriteHeader(status)
	fmt.Fprintf(w, `<!doctype html><html><head><meta charset="utf-8"><title>%s · mcp-tasks-proxy</title>
<style>body{font-family:system-ui,sans-serif;max-width:36em;margin:4em auto;padding:0 1em;color:#222}</style></head>
<body><h1>%s</h1><p>%s</p></body></html>
`, html.EscapeString(title), html.EscapeString(title), html.EscapeString(text))
}
