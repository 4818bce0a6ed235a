package schematest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// Vector is one golden-vector file from spec/examples (format "mcp-tasks-proxy
// golden vector v1", described in spec/README.md §Examples). Messages are kept
// as json.RawMessage so their bytes are exactly those of the file.
type Vector struct {
	// File is the file name inside spec/examples, e.g.
	// "01-initialize-from-discover.json".
	File        string
	Name        string
	Description string
	Format      string
	// Volatile lists JSON Pointers (into Raw) whose values tests must not
	// compare literally (minted ids and the like).
	Volatile []string
	Notes    []string
	// Steps is the scenario, in order. Empty for table-driven vectors.
	Steps []Step
	// Cases holds the rows of a table-driven vector (e.g.
	// 17-task-normalization-cases.json: {description, modern, legacy}).
	Cases []json.RawMessage
	// Validate holds file-level checks whose At pointers resolve in Raw and
	// may use the "*" wildcard token (see ResolvePointerAll).
	Validate []Check
	// Raw is the whole file, byte for byte.
	Raw []byte
}

// Step is one message (or action) of a scenario.
type Step struct {
	// Dir is "client->proxy", "proxy->client", "proxy->server" or
	// "server->proxy".
	Dir string `json:"dir"`
	// HTTP is the request method and headers the proxy must send
	// (proxy->server), the HTTP response (server->proxy, {status, headers}),
	// or {"stream": id} for more events on an open SSE stream.
	HTTP json.RawMessage `json:"http,omitempty"`
	// Frame is one JSON-RPC message, when the step carries one.
	Frame json.RawMessage `json:"frame,omitempty"`
	// SSE holds JSON-RPC messages carried as SSE events, in order.
	SSE []json.RawMessage `json:"sse,omitempty"`
	// Stream names a listen stream an Action applies to.
	Stream string `json:"stream,omitempty"`
	// Action is a non-message action such as "close-stream".
	Action string `json:"action,omitempty"`
	Note   string `json:"note,omitempty"`
	// Validate lists schema checks; their At pointers resolve inside the step
	// (e.g. "/frame", "/sse/1/result").
	Validate []Check `json:"validate,omitempty"`
	// Raw is the step object, byte for byte.
	Raw json.RawMessage `json:"-"`
}

// Check names one schema check: the value at JSON Pointer At (relative to
// the step, or to the file for Vector.Validate) must validate against
// {"$ref": "#/$defs/<Def>"} of schema file Schema.
type Check struct {
	Schema string `json:"schema"`
	Def    string `json:"def"`
	At     string `json:"at"`
}

// Instance is one concrete value named by a Check, as produced by
// Vector.Instances.
type Instance struct {
	Check Check
	// Where locates the instance for messages, e.g.
	// "03-tools-list.json steps[2] /frame/result".
	Where string
	JSON  json.RawMessage
}

// LoadVector loads SpecDir()/examples/<name>, e.g.
// LoadVector(t, "01-initialize-from-discover.json"). A missing spec or file
// skips tb, or fails it when env CI is non-empty (as SpecDir); a file that
// does not parse always fails tb.
func LoadVector(tb testing.TB, name string) *Vector {
	tb.Helper()
	path := filepath.Join(SpecDir(tb), "examples", name)
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		missing(tb, path)
	}
	if err != nil {
		tb.Fatalf("schematest: %v", err)
	}
	vec, err := parseVector(name, b)
	if err != nil {
		tb.Fatalf("schematest: %s: %v", path, err)
	}
	return vec
}

// VectorNames returns the sorted file names of all golden vectors
// (spec/examples/*.json), with the same skip/fatal rules as SpecDir.
func VectorNames(tb testing.TB) []string {
	tb.Helper()
	dir := filepath.Join(SpecDir(tb), "examples")
	ents, err := os.ReadDir(dir)
	if err != nil {
		missing(tb, dir)
	}
	var names []string
	for _, e := range ents {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".json") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names
}

func parseVector(file string, b []byte) (*Vector, error) {
	var top struct {
		Name        string            `json:"name"`
		Description string            `json:"description"`
		Format      string            `json:"format"`
		Volatile    []string          `json:"volatile"`
		Notes       []string          `json:"notes"`
		Steps       []json.RawMessage `json:"steps"`
		Cases       []json.RawMessage `json:"cases"`
		Validate    []Check           `json:"validate"`
	}
	if err := json.Unmarshal(b, &top); err != nil {
		return nil, err
	}
	vec := &Vector{
		File: file, Name: top.Name, Description: top.Description, Format: top.Format,
		Volatile: top.Volatile, Notes: top.Notes, Cases: top.Cases, Validate: top.Validate, Raw: b,
	}
	for i, raw := range top.Steps {
		var s Step
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("steps[%d]: %w", i, err)
		}
		s.Raw = raw
		vec.Steps = append(vec.Steps, s)
	}
	return vec, nil
}

// Instances resolves every check of the vector (step-level ones within their
// step, file-level ones within Raw, expanding "*" tokens) to the values to
// validate.
func (vec *Vector) Instances() ([]Instance, error) {
	var out []Instance
	for i, s := range vec.Steps {
		for _, c := range s.Validate {
			vals, ptrs, err := ResolvePointerAll(s.Raw, c.At)
			if err != nil {
				return nil, fmt.Errorf("%s steps[%d]: %w", vec.File, i, err)
			}
			for j := range vals {
				out = append(out, Instance{c, fmt.Sprintf("%s steps[%d] %s", vec.File, i, ptrs[j]), vals[j]})
			}
		}
	}
	for _, c := range vec.Validate {
		vals, ptrs, err := ResolvePointerAll(vec.Raw, c.At)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", vec.File, err)
		}
		for j := range vals {
			out = append(out, Instance{c, fmt.Sprintf("%s %s", vec.File, ptrs[j]), vals[j]})
		}
	}
	return out, nil
}

// ValidateVector runs every check of vec (see Vector.Instances), reporting
// each failure with tb.Errorf, and returns the number of instances checked.
func (v *Validator) ValidateVector(tb testing.TB, vec *Vector) int {
	tb.Helper()
	insts, err := vec.Instances()
	if err != nil {
		tb.Errorf("schematest: %v", err)
		return 0
	}
	for _, in := range insts {
		if err := v.Validate(in.Check.Schema, in.Check.Def, in.JSON); err != nil {
			tb.Errorf("%s: %v", in.Where, err)
		}
	}
	return len(insts)
}
