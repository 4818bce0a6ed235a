package rewrite

import (
	"fmt"
	"sync/atomic"
)

// Hint names a setting of the proxy that the fix of an error involves,
// without spelling how a user sets it: the command layer turns it into
// text (a flag, "--request-timeout"), another front could name a config
// key. The value is the setting's name.
type Hint string

// The settings the proxy's error messages point at.
const (
	HintRequestTimeout        Hint = "request-timeout"
	HintIdleTimeout           Hint = "idle-timeout"
	HintPollTimeout           Hint = "poll-timeout"
	HintResponseHeaderTimeout Hint = "response-header-timeout"
	HintDrainTimeout          Hint = "drain-timeout"
	HintAuthTimeout           Hint = "auth-timeout"
	HintMaxMessageSize        Hint = "max-message-size"
	HintMaxInFlight           Hint = "max-in-flight"
	HintMaxMRTRRounds         Hint = "max-mrtr-rounds"
	HintProtocol              Hint = "protocol"
	HintClientEra             Hint = "client-era"
	HintTransport             Hint = "transport"
	HintIgnoreTool            Hint = "ignore-tool"
	HintStateFile             Hint = "state-file"
	HintNoState               Hint = "no-state"
	HintAllowHTTP             Hint = "allow-http"
	HintHeader                Hint = "header"
	HintHeaderFile            Hint = "header-file"
	HintResource              Hint = "resource"
	HintOAuthStore            Hint = "oauth-store"
	HintOAuthCallbackPort     Hint = "oauth-callback-port"
	HintStaticClientInfo      Hint = "static-oauth-client-info"
	HintClientMetadataURL     Hint = "oauth-client-metadata-url"
	HintAllowOrigin           Hint = "allow-origin"
	HintMaxSessions           Hint = "max-sessions"
	HintAuthTokenFile         Hint = "auth-token-file"
	HintMaxSubscriptions      Hint = "max-subscriptions"
	HintReadTimeout           Hint = "read-timeout"
	HintMaxBodyMemory         Hint = "max-body-memory"
	HintEventLogBytes         Hint = "event-log-bytes"
)

// Hints lists every Hint the proxy's messages may use.
func Hints() []Hint {
	return []Hint{HintRequestTimeout, HintIdleTimeout, HintPollTimeout, HintResponseHeaderTimeout, HintDrainTimeout, HintAuthTimeout,
		HintMaxMessageSize, HintMaxInFlight, HintMaxMRTRRounds, HintProtocol, HintClientEra, HintTransport, HintIgnoreTool,
		HintStateFile, HintNoState, HintAllowHTTP, HintHeader, HintHeaderFile, HintResource, HintOAuthStore, HintOAuthCallbackPort,
		HintStaticClientInfo, HintClientMetadataURL, HintAllowOrigin, HintMaxSessions, HintAuthTokenFile,
		HintMaxSubscriptions, HintReadTimeout, HintMaxBodyMemory, HintEventLogBytes}
}

// HintText turns a hint into the words that name the setting for the user.
type HintText func(Hint) string

// Text is h as text renders it; with text nil, a neutral "the NAME
// setting".
func (h Hint) Text(text HintText) string {
	if text == nil {
		return "the " + string(h) + " setting"
	}
	return text(h)
}

// processText is the HintText SetHintText installed, or nil.
var processText atomic.Pointer[HintText]

// SetHintText makes every Hint formatted as a string (%v, %s, String) name
// its setting as text does, for the whole process: the command layer
// installs its flag names once at start-up, so that the Go errors and log
// lines of lower layers (OAuth, the probe, the state file) point at
// flags without naming them. nil restores the neutral text.
func SetHintText(text HintText) {
	if text == nil {
		processText.Store(nil)
		return
	}
	processText.Store(&text)
}

// String is h as the process's HintText names it (see SetHintText), or
// its neutral text.
func (h Hint) String() string {
	if t := processText.Load(); t != nil {
		return h.Text(*t)
	}
	return h.Text(nil)
}

// Error is a JSON-RPC error the proxy answers with, before it is rendered:
// the code, the message, error.data, and the settings the fix involves.
// Render it with Frame.
type Error struct {
	Code int
	// Message is the text. With Args not nil it is a fmt format, formatted
	// when the error is rendered; an operand that is a Hint is then
	// written as the HintText given names it. With Args nil it is the text
	// as it is.
	Message string
	Args    []any
	// Data is error.data, raw JSON, or nil.
	Data []byte
}

// Errorf builds an Error whose message is format with args; args that are
// Hints name settings, rendered when the error is (Error.Frame). data is
// raw JSON or nil.
func Errorf(code int, data []byte, format string, args ...any) Error {
	e := Error{Code: code, Message: format, Args: args, Data: data}
	if args == nil {
		e.Args = []any{} // a format still: "%%" is "%"
	}
	return e
}

// Text renders the message, the hints named by text (neutral when nil).
func (e Error) Text(text HintText) string {
	if e.Args == nil {
		return e.Message
	}
	args := make([]any, len(e.Args))
	for i, a := range e.Args {
		if h, ok := a.(Hint); ok {
			a = h.Text(text)
		}
		args[i] = a
	}
	return fmt.Sprintf(e.Message, args...)
}

// Frame renders e as the error response to the raw id (see ErrorFrame),
// its hints named by text.
func (e Error) Frame(id []byte, text HintText) []byte {
	return ErrorFrame(id, e.Code, e.Text(text), e.Data)
}

// Error is the message with neutral hints, so that an Error can travel as
// a Go error until it is rendered.
func (e Error) Error() string { return e.Text(nil) }
