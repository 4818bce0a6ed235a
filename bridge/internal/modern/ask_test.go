package modern

import (
	"testing"

	"github.com/tidwall/gjson"
)

// The capability an input request needs, as 2025 declares it: a bare
// elicitation object means form.
func TestClientCan(t *testing.T) {
	form := gjson.Parse(`{"mode":"form","message":"m","requestedSchema":{}}`)
	noMode := gjson.Parse(`{"message":"m","requestedSchema":{}}`)
	url := gjson.Parse(`{"mode":"url","message":"m","url":"https://x"}`)
	sampling := gjson.Parse(`{"messages":[],"maxTokens":5}`)
	samplingTools := gjson.Parse(`{"messages":[],"maxTokens":5,"tools":[{"name":"t","inputSchema":{"type":"object"}}]}`)
	for _, tc := range []struct {
		caps, method string
		params       gjson.Result
		missing      string // "" when the client can
	}{
		{`{}`, "elicitation/create", form, "elicitation"},
		{`{"elicitation":null}`, "elicitation/create", form, "elicitation"},
		{`{"elicitation":{}}`, "elicitation/create", form, ""},
		{`{"elicitation":{}}`, "elicitation/create", noMode, ""},
		{`{"elicitation":{"form":{}}}`, "elicitation/create", form, ""},
		{`{"elicitation":{"url":{}}}`, "elicitation/create", form, "elicitation.form"},
		{`{"elicitation":{"url":{}}}`, "elicitation/create", noMode, "elicitation.form"},
		{`{"elicitation":{"form":{},"url":{}}}`, "elicitation/create", form, ""},
		{`{"elicitation":{}}`, "elicitation/create", url, "elicitation.url"},
		{`{"elicitation":{"form":{}}}`, "elicitation/create", url, "elicitation.url"},
		{`{"elicitation":{"url":{}}}`, "elicitation/create", url, ""},
		{`{"roots":{}}`, "sampling/createMessage", sampling, "sampling"},
		{`{"sampling":{}}`, "sampling/createMessage", sampling, ""},
		{`{"sampling":{}}`, "sampling/createMessage", samplingTools, "sampling.tools"},
		{`{"sampling":{"tools":{}}}`, "sampling/createMessage", samplingTools, ""},
		{`{"sampling":{}}`, "roots/list", gjson.Result{}, "roots"},
		{`{"roots":{}}`, "roots/list", gjson.Result{}, ""},
		{`{"roots":{},"sampling":{},"elicitation":{}}`, "ping", gjson.Result{}, "ping"},
	} {
		s := &server{}
		s.state.Store(&modernState{legacyCaps: []byte(tc.caps)})
		ok, missing := s.clientCan(tc.method, tc.params)
		if ok != (tc.missing == "") || !ok && missing != tc.missing {
			t.Errorf("caps %s, %s %s: can=%v missing=%q, want missing %q", tc.caps, tc.method, tc.params.Raw, ok, missing, tc.missing)
		}
	}
}
