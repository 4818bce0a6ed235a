//lint:file-ignore SA1019 the sample, list_roots and ask_two_rounds tools exercise the deprecated sampling and roots features on purpose.

package demo

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// Multi round-trip requests (2026-07-28 MRTR).
//
// An MRTR tool answers its first call with an InputRequiredResult:
//
//	{"resultType":"input_required","inputRequests":{KEY:{method,params}},"requestState":STATE}
//
// The client fulfils every input request and retries the same tools/call (a
// new JSON-RPC id, the same name and arguments) with params.inputResponses
// {KEY: result} and params.requestState STATE, echoed byte for byte. The
// go-sdk carries the protocol: a tool handler returns a CallToolResult whose
// InputRequests and RequestState are set, and the go-sdk gives it resultType
// "input_required" (clients at 2026-07-28 only); on the retry it decodes
// inputResponses into req.Params.InputResponses. The demo adds what the
// go-sdk leaves to the server author:
//
//   - the state is stateless and tamper-evident: "v1." + base64url(JSON
//     payload) + "." + base64url(HMAC-SHA256), keyed per server, bound to
//     the tool and valid for [RequestStateTTL];
//   - on the wire the state literal ends with [RequestStateRawSuffix], raw
//     JSON text that no encoder produces when it re-encodes the decoded
//     value (raw "<", "&", ">", an escaped "\/" and a "\u00e9" escape), and
//     the handler rejects a retry whose requestState literal is not
//     byte-identical to an issued one with -32602 "requestState was
//     altered" (HTTP 400). A client that decodes and re-encodes the state
//     instead of echoing its bytes is caught.
const (
	// RequestStateRawSuffix is the raw JSON text (between the quotes) that
	// ends every requestState string literal the handler issues.
	RequestStateRawSuffix = `~<&>\/\u00e9`
	// RequestStateSuffix is RequestStateRawSuffix decoded.
	RequestStateSuffix = "~<&>/\u00e9"
	// RequestStateTTL is how long an issued requestState stays valid.
	RequestStateTTL = time.Hour
	// ConsentURL is the URL the open_url tool asks the user to open.
	ConsentURL = "https://example.com/consent"

	// msgStateAltered is the -32602 message for a requestState that is not
	// exactly one the server issued.
	msgStateAltered = "requestState was altered"

	// maxWaitRounds bounds open_url's wait_rounds argument.
	maxWaitRounds = 5
)

// mrtrTools are the tools whose tools/call responses carry a decorated
// requestState and whose retries are checked byte for byte.
var mrtrTools = map[string]bool{
	"ask_name": true, "ask_two_rounds": true, "open_url": true, "sample": true, "list_roots": true,
}

// The input requests of the MRTR tools.
var (
	askNameRequest = &mcp.ElicitParams{
		Mode:    "form",
		Message: "What is your name?",
		RequestedSchema: json.RawMessage(`{"type":"object",` +
			`"properties":{"name":{"type":"string"}},"required":["name"]}`),
	}
	colourRequest = &mcp.ElicitParams{
		Mode:    "form",
		Message: "What is your favourite colour?",
		RequestedSchema: json.RawMessage(`{"type":"object",` +
			`"properties":{"colour":{"type":"string"}},"required":["colour"]}`),
	}
	consentRequest = &mcp.ElicitParams{
		Mode:    "url",
		Message: "Open the consent page to let the demo continue.",
		URL:     ConsentURL,
	}
	sampleRequest = &mcp.CreateMessageParams{
		Messages:  []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "Say hi"}}},
		MaxTokens: 50,
	}
	rootsRequest = &mcp.ListRootsParams{}
)

// mrtrState is the payload of a requestState.
type mrtrState struct {
	// Tool is the tool that issued the state.
	Tool string `json:"tool"`
	// Round is the round whose inputRequests the state accompanies (1, 2,
	// ...), or for open_url's requestState-only rounds the round counter.
	Round int `json:"round"`
	// Name is the name ask_two_rounds learnt in round 1.
	Name string `json:"name,omitempty"`
	// Consent is open_url's ElicitResult action, once known.
	Consent string `json:"consent,omitempty"`
	// Wait is how many requestState-only rounds open_url still owes.
	Wait int `json:"wait,omitempty"`
	// Expires is when the state stops being valid (Unix seconds).
	Expires int64 `json:"exp"`
}

// mrtr holds the per-server key that signs request states.
type mrtr struct {
	key [32]byte
	now func() time.Time
}

func newMRTR() *mrtr {
	m := &mrtr{now: time.Now}
	_, _ = rand.Read(m.key[:]) // never fails (crypto/rand, Go 1.24+)
	return m
}

// sign returns the tamper-evident encoding of st followed by
// RequestStateSuffix (which the HTTP handler writes as
// RequestStateRawSuffix).
func (m *mrtr) sign(st mrtrState) string {
	st.Expires = m.now().Add(RequestStateTTL).Unix()
	payload, _ := json.Marshal(st) // cannot fail: plain struct
	body := "v1." + base64.RawURLEncoding.EncodeToString(payload)
	return body + "." + base64.RawURLEncoding.EncodeToString(m.mac(body)) + RequestStateSuffix
}

func (m *mrtr) mac(body string) []byte {
	h := hmac.New(sha256.New, m.key[:])
	h.Write([]byte(body))
	return h.Sum(nil)
}

// verify decodes a requestState (with or without the wire suffix) that the
// server issued for tool.
func (m *mrtr) verify(state, tool string) (mrtrState, error) {
	var st mrtrState
	core := strings.TrimSuffix(state, RequestStateSuffix)
	i := strings.LastIndexByte(core, '.')
	if i < 0 || !strings.HasPrefix(core, "v1.") {
		return st, errStateAltered()
	}
	sig, err := base64.RawURLEncoding.DecodeString(core[i+1:])
	if err != nil || !hmac.Equal(sig, m.mac(core[:i])) {
		return st, errStateAltered()
	}
	payload, err := base64.RawURLEncoding.DecodeString(core[len("v1."):i])
	if err != nil || json.Unmarshal(payload, &st) != nil || st.Tool != tool {
		return st, errStateAltered()
	}
	if m.now().Unix() > st.Expires {
		return st, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "requestState expired"}
	}
	return st, nil
}

func errStateAltered() *jsonrpc.Error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: msgStateAltered}
}

// inputRequired is the CallToolResult the go-sdk turns into an
// InputRequiredResult.
func (m *mrtr) inputRequired(st mrtrState, reqs mcp.InputRequestMap) *mcp.CallToolResult {
	return &mcp.CallToolResult{InputRequests: reqs, RequestState: m.sign(st)}
}

// state returns the verified state of a retry, or nil for a first call (no
// requestState).
func (m *mrtr) state(req *mcp.CallToolRequest) (*mrtrState, error) {
	if req.Params.RequestState == "" {
		return nil, nil
	}
	st, err := m.verify(req.Params.RequestState, req.Params.Name)
	if err != nil {
		return nil, err
	}
	return &st, nil
}

// elicitAnswer returns the ElicitResult answering key, or nil when the
// retry has none. A response of another kind or with an unknown action is
// a -32602 error.
func elicitAnswer(req *mcp.CallToolRequest, key string) (*mcp.ElicitResult, error) {
	resp, ok := req.Params.InputResponses[key]
	if !ok || resp == nil {
		return nil, nil
	}
	r, ok := resp.(*mcp.ElicitResult)
	if !ok {
		return nil, badResponse(key, "is not an ElicitResult")
	}
	switch r.Action {
	case "accept", "decline", "cancel":
		return r, nil
	}
	return nil, badResponse(key, fmt.Sprintf("has action %q, not accept, decline or cancel", r.Action))
}

// rootsAnswer returns the ListRootsResult answering key, or nil.
func rootsAnswer(req *mcp.CallToolRequest, key string) (*mcp.ListRootsResult, error) {
	resp, ok := req.Params.InputResponses[key]
	if !ok || resp == nil {
		return nil, nil
	}
	r, ok := resp.(*mcp.ListRootsResult)
	if !ok {
		return nil, badResponse(key, "is not a ListRootsResult")
	}
	return r, nil
}

// sampleAnswer returns the CreateMessageResult answering key, or nil. The
// go-sdk decodes every CreateMessageResult as a CreateMessageWithToolsResult.
func sampleAnswer(req *mcp.CallToolRequest, key string) (*mcp.CreateMessageWithToolsResult, error) {
	resp, ok := req.Params.InputResponses[key]
	if !ok || resp == nil {
		return nil, nil
	}
	switch r := resp.(type) {
	case *mcp.CreateMessageWithToolsResult:
		return r, nil
	case *mcp.CreateMessageResult:
		return &mcp.CreateMessageWithToolsResult{Content: []mcp.Content{r.Content}, Model: r.Model, Role: r.Role}, nil
	}
	return nil, badResponse(key, "is not a CreateMessageResult")
}

func badResponse(key, what string) *jsonrpc.Error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("inputResponses[%q] %s", key, what)}
}

// acceptedString returns content[field] of an accepted elicitation, or "".
func acceptedString(r *mcp.ElicitResult, field string) string {
	if r == nil || r.Action != "accept" {
		return ""
	}
	s, _ := r.Content[field].(string)
	return s
}

func textResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// Client capabilities an MRTR tool may need (a 2026 server makes no input
// request for an undeclared capability).
const (
	capElicitForm = "elicitation.form"
	capElicitURL  = "elicitation.url"
	capSampling   = "sampling"
	capRoots      = "roots"
)

// requireCaps answers -32021 (HTTP 400) unless the request's _meta
// clientCapabilities declare every capability in need. An "elicitation"
// object with neither "form" nor "url" counts as form support (the 2025
// convention).
func requireCaps(req *mcp.CallToolRequest, need ...string) error {
	caps, _ := req.Params.GetMeta()[mcp.MetaKeyClientCapabilities].(map[string]any)
	elicit, hasElicit := caps["elicitation"].(map[string]any)
	_, hasForm := elicit["form"]
	_, hasURL := elicit["url"]
	form := hasElicit && (hasForm || !hasURL)
	url := hasElicit && hasURL
	required := map[string]any{}
	for _, c := range need {
		switch c {
		case capElicitForm:
			if !form {
				required["elicitation"] = map[string]any{"form": map[string]any{}}
			}
		case capElicitURL:
			if !url {
				required["elicitation"] = map[string]any{"url": map[string]any{}}
			}
		default:
			if _, ok := caps[c].(map[string]any); !ok {
				required[c] = map[string]any{}
			}
		}
	}
	if len(required) == 0 {
		return nil
	}
	data, _ := json.Marshal(map[string]any{"requiredCapabilities": required})
	return &jsonrpc.Error{
		Code:    mcp.CodeMissingRequiredClientCapabilities,
		Message: fmt.Sprintf("Missing required client capability: tool %q needs %s", req.Params.Name, strings.Join(need, ", ")),
		Data:    data,
	}
}

// askName: round 1 asks "name-1"; a retry carrying its answer completes.
func (m *mrtr) askName(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
	if err := requireCaps(req, capElicitForm); err != nil {
		return nil, nil, err
	}
	st, err := m.state(req)
	if err != nil {
		return nil, nil, err
	}
	ask := m.inputRequired(mrtrState{Tool: "ask_name", Round: 1}, mcp.InputRequestMap{"name-1": askNameRequest})
	if st == nil {
		return ask, nil, nil
	}
	r, err := elicitAnswer(req, "name-1")
	if err != nil || r == nil {
		return ask, nil, err
	}
	if name := acceptedString(r, "name"); name != "" {
		return textResult("hello, " + name), nil, nil
	}
	return textResult("no name given"), nil, nil
}

// askTwoRounds: round 1 asks "name-1"; round 2 asks "roots-2" (roots/list)
// and "colour-2" (elicitation) together; a retry answering both completes.
func (m *mrtr) askTwoRounds(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
	if err := requireCaps(req, capElicitForm, capRoots); err != nil {
		return nil, nil, err
	}
	st, err := m.state(req)
	if err != nil {
		return nil, nil, err
	}
	round1 := m.inputRequired(mrtrState{Tool: "ask_two_rounds", Round: 1}, mcp.InputRequestMap{"name-1": askNameRequest})
	if st == nil {
		return round1, nil, nil
	}
	if st.Round == 1 {
		r, err := elicitAnswer(req, "name-1")
		if err != nil || r == nil {
			return round1, nil, err
		}
		name := acceptedString(r, "name")
		if name == "" {
			name = "stranger"
		}
		return m.inputRequired(mrtrState{Tool: "ask_two_rounds", Round: 2, Name: name},
			mcp.InputRequestMap{"roots-2": rootsRequest, "colour-2": colourRequest}), nil, nil
	}
	round2 := m.inputRequired(mrtrState{Tool: "ask_two_rounds", Round: 2, Name: st.Name},
		mcp.InputRequestMap{"roots-2": rootsRequest, "colour-2": colourRequest})
	roots, err := rootsAnswer(req, "roots-2")
	if err != nil {
		return nil, nil, err
	}
	colour, err := elicitAnswer(req, "colour-2")
	if err != nil {
		return nil, nil, err
	}
	if roots == nil || colour == nil {
		return round2, nil, nil
	}
	c := acceptedString(colour, "colour")
	if c == "" {
		c = "unknown"
	}
	return textResult(fmt.Sprintf("hello, %s; colour: %s; roots: %d", st.Name, c, len(roots.Roots))), nil, nil
}

// openURLArgs are the arguments of open_url.
type openURLArgs struct {
	WaitRounds int `json:"wait_rounds"`
}

// openURL: round 1 asks "consent-1" (URL-mode elicitation); after the
// answer, wait_rounds requestState-only rounds follow (the out-of-band step
// "still running"), then the call completes.
func (m *mrtr) openURL(_ context.Context, req *mcp.CallToolRequest, in openURLArgs) (*mcp.CallToolResult, any, error) {
	if err := requireCaps(req, capElicitURL); err != nil {
		return nil, nil, err
	}
	st, err := m.state(req)
	if err != nil {
		return nil, nil, err
	}
	ask := m.inputRequired(mrtrState{Tool: "open_url", Round: 1}, mcp.InputRequestMap{"consent-1": consentRequest})
	if st == nil {
		return ask, nil, nil
	}
	consent := st.Consent
	wait := st.Wait
	if consent == "" {
		r, err := elicitAnswer(req, "consent-1")
		if err != nil || r == nil {
			return ask, nil, err
		}
		consent, wait = r.Action, in.WaitRounds
	} else {
		wait--
	}
	if wait > 0 {
		// An empty (non-nil) map makes the go-sdk answer input_required;
		// the HTTP handler drops the empty "inputRequests" from the wire.
		return m.inputRequired(mrtrState{Tool: "open_url", Round: st.Round + 1, Consent: consent, Wait: wait}, mcp.InputRequestMap{}), nil, nil
	}
	return textResult("consent: " + consent), nil, nil
}

// sample: round 1 asks "sample-1" (sampling/createMessage "Say hi"); the
// retry completes with the model's text.
func (m *mrtr) sample(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
	if err := requireCaps(req, capSampling); err != nil {
		return nil, nil, err
	}
	st, err := m.state(req)
	if err != nil {
		return nil, nil, err
	}
	ask := m.inputRequired(mrtrState{Tool: "sample", Round: 1}, mcp.InputRequestMap{"sample-1": sampleRequest})
	if st == nil {
		return ask, nil, nil
	}
	r, err := sampleAnswer(req, "sample-1")
	if err != nil || r == nil {
		return ask, nil, err
	}
	var text strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	if text.Len() == 0 {
		return textResult("(the model returned no text)"), nil, nil
	}
	return textResult(text.String()), nil, nil
}

// listRoots: round 1 asks "roots-1" (roots/list); the retry completes with
// the root URIs joined by ", " ("(no roots)" for none).
func (m *mrtr) listRoots(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
	if err := requireCaps(req, capRoots); err != nil {
		return nil, nil, err
	}
	st, err := m.state(req)
	if err != nil {
		return nil, nil, err
	}
	ask := m.inputRequired(mrtrState{Tool: "list_roots", Round: 1}, mcp.InputRequestMap{"roots-1": rootsRequest})
	if st == nil {
		return ask, nil, nil
	}
	r, err := rootsAnswer(req, "roots-1")
	if err != nil || r == nil {
		return ask, nil, err
	}
	if len(r.Roots) == 0 {
		return textResult("(no roots)"), nil, nil
	}
	uris := make([]string, 0, len(r.Roots))
	for _, root := range r.Roots {
		if root != nil {
			uris = append(uris, root.URI)
		}
	}
	return textResult(strings.Join(uris, ", ")), nil, nil
}

// addMRTR registers the MRTR tools on s.
func addMRTR(s *mcp.Server, m *mrtr) {
	noArgs := json.RawMessage(`{"type":"object","additionalProperties":false}`)
	mcp.AddTool(s, &mcp.Tool{
		Name: "ask_name",
		Description: "Multi round-trip: asks for your name (form elicitation, key \"name-1\") " +
			"and answers \"hello, NAME\" (or \"no name given\").",
		InputSchema: noArgs,
	}, m.askName)
	mcp.AddTool(s, &mcp.Tool{
		Name: "ask_two_rounds",
		Description: "Multi round-trip in two rounds: asks for your name (\"name-1\"), then for " +
			"your roots (\"roots-2\") and favourite colour (\"colour-2\") together; answers " +
			"\"hello, NAME; colour: COLOUR; roots: N\".",
		InputSchema: noArgs,
	}, m.askTwoRounds)
	mcp.AddTool(s, &mcp.Tool{
		Name: "open_url",
		Description: "Multi round-trip: asks you to open " + ConsentURL + " (URL-mode elicitation, " +
			"key \"consent-1\"), then after wait_rounds requestState-only rounds answers \"consent: ACTION\".",
		InputSchema: json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{`+
			`"wait_rounds":{"type":"integer","minimum":0,"maximum":%d,"default":0,`+
			`"description":"How many requestState-only rounds follow the consent."}},`+
			`"additionalProperties":false}`, maxWaitRounds)),
	}, m.openURL)
	mcp.AddTool(s, &mcp.Tool{
		Name: "sample",
		Description: "Multi round-trip: asks your model to \"Say hi\" (sampling/createMessage, " +
			"key \"sample-1\") and answers with its text.",
		InputSchema: noArgs,
	}, m.sample)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "list_roots",
		Description: "Multi round-trip: asks for your roots (roots/list, key \"roots-1\") and answers with their URIs joined by \", \".",
		InputSchema: noArgs,
	}, m.listRoots)
}

// validStateCore reports whether s can be the part of a requestState literal before the suffix:
// the characters sign produces, which JSON never escapes.
func validStateCore(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// checkRawRequestState reports whether the raw requestState of a tools/call
// body (if any) is byte for byte a literal the handler issues: '"' + core
// + RequestStateRawSuffix + '"'. (The HMAC over core is checked by the
// tool.) It compares the raw JSON text, not the decoded string.
func checkRawRequestState(body []byte) bool {
	r := gjson.GetBytes(body, "params.requestState")
	if !r.Exists() {
		return true
	}
	raw := r.Raw
	if r.Type != gjson.String || len(raw) < 2 {
		return false
	}
	core, ok := strings.CutSuffix(raw[1:len(raw)-1], RequestStateRawSuffix)
	return ok && validStateCore(core)
}

// decorateRequestState rewrites the requestState of a JSON-RPC tools/call
// response: the go-sdk encodes core + RequestStateSuffix canonically; the
// wire gets core + RequestStateRawSuffix verbatim. In an
// InputRequiredResult it also drops the "content": null the go-sdk writes,
// and an empty "inputRequests" (a requestState-only round). Bodies without
// such a state are returned unchanged.
func decorateRequestState(body []byte) []byte {
	if gjson.GetBytes(body, "result.resultType").Str == "input_required" {
		if c := gjson.GetBytes(body, "result.content"); c.Exists() && c.Type == gjson.Null {
			if b, err := sjson.DeleteBytes(body, "result.content"); err == nil {
				body = b
			}
		}
		if ir := gjson.GetBytes(body, "result.inputRequests"); ir.IsObject() && len(ir.Map()) == 0 {
			if b, err := sjson.DeleteBytes(body, "result.inputRequests"); err == nil {
				body = b
			}
		}
	}
	r := gjson.GetBytes(body, "result.requestState")
	if r.Type != gjson.String || r.Index <= 0 || r.Index+len(r.Raw) > len(body) {
		return body
	}
	core, ok := strings.CutSuffix(r.Str, RequestStateSuffix)
	if !ok || !validStateCore(core) {
		return body
	}
	var out bytes.Buffer
	out.Grow(len(body) + len(RequestStateRawSuffix))
	out.Write(body[:r.Index])
	out.WriteString(`"` + core + RequestStateRawSuffix + `"`)
	out.Write(body[r.Index+len(r.Raw):])
	return out.Bytes()
}

// serveMRTR serves a tools/call of an MRTR tool: it rejects a retry whose
// raw requestState was altered (400, -32602), and adds the wire suffix to
// the requestState of the response. next must answer with
// application/json.
func serveMRTR(next http.Handler, w http.ResponseWriter, r *http.Request) {
	r, body, ok := peekBody(r)
	if ok && gjson.GetBytes(body, "method").Str == "tools/call" && !checkRawRequestState(body) {
		writeJSONRPCError(w, http.StatusBadRequest, rawID(body), &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: msgStateAltered})
		return
	}
	rec := &bufferedResponse{header: http.Header{}}
	next.ServeHTTP(rec, r)
	out := rec.body.Bytes()
	if strings.HasPrefix(rec.header.Get("Content-Type"), "application/json") {
		out = decorateRequestState(out)
		if rec.header.Get("Content-Length") != "" {
			rec.header.Set("Content-Length", strconv.Itoa(len(out)))
		}
	}
	for k, v := range rec.header {
		w.Header()[k] = v
	}
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	w.WriteHeader(rec.status)
	_, _ = w.Write(out)
}

// bufferedResponse is an http.ResponseWriter that keeps the response.
type bufferedResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (b *bufferedResponse) Header() http.Header { return b.header }

func (b *bufferedResponse) WriteHeader(status int) {
	if b.status == 0 {
		b.status = status
	}
}

func (b *bufferedResponse) Write(p []byte) (int, error) {
	if b.status == 0 {
		b.status = http.StatusOK
	}
	return b.body.Write(p)
}

// peekBody reads the request body (up to the handler's body limit) and
// returns a request whose body yields the same bytes again. ok is false
// when the body could not be read whole; the returned request still
// carries everything that was sent.
func peekBody(r *http.Request) (_ *http.Request, body []byte, ok bool) {
	if r.Body == nil {
		return r, nil, false
	}
	buf, err := io.ReadAll(io.LimitReader(r.Body, maxTaskBody+1))
	rest := r.Body
	r = r.Clone(r.Context())
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(buf), rest), rest}
	if err != nil || len(buf) > maxTaskBody {
		return r, nil, false
	}
	return r, buf, true
}

// rawID returns the raw JSON id of a request body, or null.
func rawID(body []byte) json.RawMessage {
	id := gjson.GetBytes(body, "id")
	if !id.Exists() || (id.Type != gjson.String && id.Type != gjson.Number) {
		return json.RawMessage("null")
	}
	return json.RawMessage(id.Raw)
}

// writeJSONRPCError answers with one JSON-RPC error response.
func writeJSONRPCError(w http.ResponseWriter, status int, id json.RawMessage, e *jsonrpc.Error) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	body, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *jsonrpc.Error  `json:"error"`
	}{"2.0", id, e})
	if err != nil {
		body = []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"demo server: encoding an error failed"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
