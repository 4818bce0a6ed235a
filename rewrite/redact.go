package rewrite

import (
	"bytes"
	"regexp"
	"slices"
	"strings"
)

// sensitiveKey matches the words that mark a JSON key as naming a secret;
// SensitiveKey is this rule less the protocol's own keys (protocolKeys).
var sensitiveKey = regexp.MustCompile(`(?i)token|secret|password|api[_-]?key|authorization|verifier`)

// Redacted stands in for a sensitive value.
const Redacted = `"[REDACTED]"`

// SensitiveKey reports whether a JSON key names a secret: its name contains
// token, secret, password, api key, authorization or verifier (a PKCE
// code_verifier), in any case, and it is not one of the MCP schemas' own
// keys that only look secret. So access_token, refresh_token, client_secret,
// apiKey, Authorization, password and code_verifier are redacted, while
// progressToken (an id the client chose for progress notifications) and
// maxTokens (a sampling limit) stay readable.
//
// The exceptions are exact names, case included: a key the schemas do not
// spell that way (ProgressToken, progress_token) is still redacted.
func SensitiveKey(key string) bool {
	return secretWord(key) && !protocolKey(key)
}

// SensitiveKeys is SensitiveKey plus the keys extra (the user's
// --redact-key names), matched exactly but in any case. It is the one rule
// that logs and the trace redact JSON keys by.
func SensitiveKeys(extra []string) func(key string) bool {
	if len(extra) == 0 {
		return SensitiveKey
	}
	more := make(map[string]bool, len(extra))
	for _, k := range extra {
		more[strings.ToLower(k)] = true
	}
	return func(key string) bool { return SensitiveKey(key) || more[strings.ToLower(key)] }
}

// CredentialHeader reports whether an HTTP header, by name in any case, is
// one whose value is a credential whatever it holds: Authorization,
// Proxy-Authorization, Cookie and Set-Cookie.
func CredentialHeader(name string) bool {
	return slices.ContainsFunc(credentialHeaders[:], func(h string) bool { return strings.EqualFold(name, h) })
}

var credentialHeaders = [...]string{"Authorization", "Proxy-Authorization", "Cookie", "Set-Cookie"}

// protocolKeys are the property names of the MCP schemas (2025-11-25,
// 2026-07-28 and the tasks extension) that the word rule matches but that
// hold no secret. TestProtocolKeysFromSchemas derives the list from the
// schemas and fails when they gain another such key, so that someone
// decides whether it is a secret.
var protocolKeys = [...]string{
	"progressToken", // the id a request's _meta gives its progress notifications
	"maxTokens",     // sampling/createMessage's token budget
}

// protocolKey reports whether key is one of protocolKeys, exactly.
func protocolKey(key string) bool { return slices.Contains(protocolKeys[:], key) }

// secretWord is the word rule. An ASCII key (nearly all of them) is
// lower-cased on the stack and searched for the words; a longer key, or
// one with other bytes, goes to the regular expression, whose Unicode case
// folding (the Kelvin sign K, the long s) this does not attempt.
func secretWord(key string) bool {
	var low [64]byte
	if len(key) > len(low) || nonASCII(key) {
		return sensitiveKey.MatchString(key)
	}
	k := low[:len(key)]
	for i := range k {
		c := key[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		k[i] = c
	}
	for _, w := range secretWords {
		if bytes.Contains(k, w) {
			return true
		}
	}
	return false
}

// secretWords are the words of sensitiveKey, lower case.
var secretWords = [...][]byte{[]byte("token"), []byte("secret"), []byte("password"), []byte("apikey"),
	[]byte("api_key"), []byte("api-key"), []byte("authorization"), []byte("verifier")}

// Redact returns a copy of frame for logs, with the value of every
// sensitive key replaced by "[REDACTED]" at any depth. A frame that is not
// valid JSON is replaced whole, since its secrets cannot be found.
//
// It is one pass over the frame: in valid JSON a string followed by a colon
// is an object key, so every key at any depth is found by jumping from
// quote to quote, and a redacted value is skipped whole.
func Redact(frame []byte, sensitive func(key string) bool) []byte {
	return redact(frame, sensitive, false)
}

// RedactValid is Redact for a frame its caller owns and knows to be one
// valid JSON value, because it parsed or built it: it skips Redact's own
// check, a scan of every byte, and returns frame itself (trimmed) when
// there is nothing to redact. A frame that is not valid after all is still
// never read out of bounds, but it may be withheld.
func RedactValid(frame []byte, sensitive func(key string) bool) []byte {
	return redact(frame, sensitive, true)
}

func redact(frame []byte, sensitive func(key string) bool, valid bool) []byte {
	frame = TrimFrame(frame)
	e, ok := redactions(frame, sensitive, valid)
	switch {
	case !ok:
		return []byte(unparsable)
	case len(e) > 0:
		return e.apply(frame)
	case valid:
		return frame
	}
	return append([]byte(nil), frame...)
}

// RedactHead is Redact for a frame that will be cut: it returns the first
// max bytes of Redact(frame, sensitive) (all of it when shorter) and the
// length of the whole, without building the rest. A trace that keeps the
// head of a 16 MiB result so holds max bytes, not a second 16 MiB. valid
// skips the check, as RedactValid does.
func RedactHead(frame []byte, sensitive func(key string) bool, max int, valid bool) (head []byte, n int) {
	frame = TrimFrame(frame)
	e, ok := redactions(frame, sensitive, valid)
	if !ok {
		return []byte(unparsable)[:min(max, len(unparsable))], len(unparsable)
	}
	n = len(frame)
	for _, ed := range e { // disjoint and in order: a redacted value is skipped whole
		n += len(ed.repl) + len(ed.repl2) - (ed.end - ed.start)
	}
	head = make([]byte, 0, min(max, n))
	pos := 0
	for _, ed := range e {
		if len(head) == max {
			break
		}
		head = appendUpTo(head, frame[pos:ed.start], max)
		head = appendUpTo(head, ed.repl, max)
		head = appendUpTo(head, ed.repl2, max)
		pos = ed.end
	}
	return appendUpTo(head, frame[pos:], max), n
}

// appendUpTo appends as much of b to dst as keeps it within max bytes.
func appendUpTo(dst, b []byte, max int) []byte {
	return append(dst, b[:min(len(b), max-len(dst))]...)
}

// unparsable stands in for a frame that is not valid JSON.
const unparsable = `"[unparsable frame withheld]"`

// redactions lists the replacements Redact makes, in order and disjoint;
// ok is false when frame is not valid JSON (checked unless valid says so).
func redactions(frame []byte, sensitive func(key string) bool, valid bool) (e edits, ok bool) {
	if !valid && !validJSON(frame) {
		return nil, false
	}
	s := view(frame)
	for i := 0; i < len(s); {
		q := strings.IndexByte(s[i:], '"')
		if q < 0 {
			break
		}
		k := i + q
		end, escaped, closed := stringEnd(s, k)
		if !closed {
			return nil, false // not JSON after all
		}
		i = end
		// A string a colon follows is an object key.
		if j := skipSpace(s, end); j < len(s) && s[j] == ':' && sensitive(keyText(s, k, end, escaped)) {
			v := skipSpace(s, j+1)
			i = skipValue(s, v)
			e.replace(v, i, []byte(Redacted))
		}
	}
	return e, true
}
