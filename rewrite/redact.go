package rewrite

import (
	"regexp"

	"github.com/tidwall/gjson"
)

// sensitiveKey matches the JSON keys whose values never reach a log.
var sensitiveKey = regexp.MustCompile(`(?i)token|secret|password|api[_-]?key|authorization`)

// Redacted stands in for a sensitive value.
const Redacted = `"[REDACTED]"`

// SensitiveKey reports whether a JSON key names a secret: token, secret,
// password, api key or authorization, in any case, anywhere in the name.
func SensitiveKey(key string) bool { return sensitiveKey.MatchString(key) }

// Redact returns a copy of frame for logs, with the value of every
// sensitive key replaced by "[REDACTED]" at any depth. A frame that is not
// valid JSON is replaced whole, since its secrets cannot be found.
func Redact(frame []byte, sensitive func(key string) bool) []byte {
	frame = TrimFrame(frame)
	if !gjson.ValidBytes(frame) {
		return []byte(`"[unparsable frame withheld]"`)
	}
	var e edits
	redactValue(&e, valueAt(view(frame), 0), sensitive)
	out := e.apply(frame)
	if len(e) == 0 {
		out = append([]byte(nil), frame...)
	}
	return out
}

func redactValue(e *edits, v gjson.Result, sensitive func(string) bool) {
	var buf [16]member
	switch {
	case v.IsObject():
		for _, m := range members(v, buf[:0]) {
			if sensitive(m.key.Str) {
				e.replace(m.value.Index, m.value.Index+len(m.value.Raw), []byte(Redacted))
				continue
			}
			redactValue(e, m.value, sensitive)
		}
	case v.IsArray():
		for _, m := range elements(v, buf[:0]) {
			redactValue(e, m.value, sensitive)
		}
	}
}
