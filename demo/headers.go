package demo

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	nameHeader   = "Mcp-Name"
	base64Prefix = "=?base64?"
	base64Suffix = "?="
	// maxIDPeek bounds how much of a rejected request's body is read to
	// recover its JSON-RPC id.
	maxIDPeek = 1 << 20
)

// errBadBase64 reports an Mcp-Name sentinel whose payload is not valid
// padded standard Base64 of UTF-8 text.
var errBadBase64 = errors.New("invalid Base64 in Mcp-Name header")

// decodeNameHeader replaces a Base64 sentinel Mcp-Name value with the text it
// encodes, so that the go-sdk compares the decoded value with the body. If
// the sentinel does not hold valid Base64 of UTF-8 text it answers 400 with a
// -32020 (HeaderMismatch) error and reports false.
func decodeNameHeader(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	v := r.Header.Get(nameHeader)
	if len(v) < len(base64Prefix)+len(base64Suffix) ||
		!strings.HasPrefix(v, base64Prefix) || !strings.HasSuffix(v, base64Suffix) {
		return r, true
	}
	decoded, err := base64.StdEncoding.Strict().DecodeString(v[len(base64Prefix) : len(v)-len(base64Suffix)])
	if err != nil || !utf8.Valid(decoded) {
		writeHeaderMismatch(w, r, fmt.Errorf("%w: %q", errBadBase64, v))
		return nil, false
	}
	r = r.Clone(r.Context())
	r.Header.Set(nameHeader, string(decoded))
	return r, true
}

// writeHeaderMismatch answers 400 with a JSON-RPC -32020 error carrying the
// request's id when the body has one, null otherwise.
func writeHeaderMismatch(w http.ResponseWriter, r *http.Request, cause error) {
	var msg struct {
		ID json.RawMessage `json:"id"`
	}
	if r.Body != nil {
		_ = json.NewDecoder(io.LimitReader(r.Body, maxIDPeek)).Decode(&msg)
	}
	writeHeaderMismatchID(w, msg.ID, cause)
}

// writeHeaderMismatchID answers 400 with a JSON-RPC -32020 error for the
// request with the given raw id (null when empty).
func writeHeaderMismatchID(w http.ResponseWriter, id json.RawMessage, cause error) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	body, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{
		JSONRPC: "2.0",
		ID:      id,
		Error: struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		}{Code: mcp.CodeHeaderMismatch, Message: "Header mismatch: " + cause.Error()},
	})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_, _ = w.Write(body)
}
