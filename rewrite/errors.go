package rewrite

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// NullID is the id of an answer to a message whose id could not be read.
var NullID = []byte("null")

// ErrorFrame builds a JSON-RPC error response. id is the raw id (NullID when
// unknown); data is raw JSON or nil.
func ErrorFrame(id []byte, code int, message string, data []byte) []byte {
	if len(id) == 0 || id[0] != '"' && id[0] != '-' && id[0] != 'n' && !isDigit(id[0]) {
		// No id, or one JSON-RPC does not allow (an array or object, which
		// may hold a raw CR): the answer's id is null, as JSON-RPC asks
		// when the request's id cannot be read.
		id = NullID
	}
	b := envelope(id, "error", 32+len(message)+len(data))
	b = strconv.AppendInt(append(b, `{"code":`...), int64(code), 10)
	b = AppendString(append(b, `,"message":`...), message)
	if len(data) > 0 {
		b = append(append(b, `,"data":`...), data...)
	}
	return append(b, "}}"...)
}

// envelope starts a JSON-RPC message to or with the raw id, up to its member
// key: `{"jsonrpc":"2.0","id":ID,"KEY":`, with room for n more bytes.
func envelope(id []byte, key string, n int) []byte {
	b := make([]byte, 0, 32+len(id)+len(key)+n)
	b = append(append(b, `{"jsonrpc":"2.0","id":`...), id...)
	b = append(b, ',', '"')
	b = append(b, key...)
	return append(b, '"', ':')
}

// ResultFrame builds a JSON-RPC result response from a raw result object.
func ResultFrame(id []byte, result []byte) []byte {
	return append(append(envelope(id, "result", len(result)+1), result...), '}')
}

// ErrorFrameRaw builds an error response that carries a raw JSON-RPC error
// object verbatim.
func ErrorFrameRaw(id []byte, errObj []byte) []byte {
	return append(append(envelope(id, "error", len(errObj)+1), errObj...), '}')
}

const hexDigits = "0123456789abcdef"

// plain marks the bytes a JSON string holds as they are: ASCII but for
// the quote, the backslash and the control bytes.
var plain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// AppendString appends s as a JSON string, as encoding/json writes it with
// HTML escaping off: <, > and & stay as they are, invalid UTF-8 bytes
// become U+FFFD, and U+2028 and U+2029 are escaped (FuzzAppendString holds
// it to encoding/json byte for byte).
func AppendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if plain[c] {
			i++ // copied with its run
			continue
		}
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			if k := strings.IndexByte("\"\\\b\f\n\r\t", c); k >= 0 {
				b = append(b, '\\', "\"\\bfnrt"[k])
			} else {
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
