package schematest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Names of the three schema files (spec/schema/<name>.schema.json), as
// accepted by [Validator.Validate] and used in golden-vector checks.
const (
	// Schema2025 is the legacy protocol spoken by the stdio client.
	Schema2025 = "2025-11-25"
	// Schema2026 is the modern protocol spoken by the upstream server.
	Schema2026 = "2026-07-28"
	// SchemaExtTasks is the io.modelcontextprotocol/tasks extension schema
	// (it vendors the 2026 core definitions it references).
	SchemaExtTasks = "ext-tasks"
)

// schemaNames lists every schema file the Validator compiles.
var schemaNames = []string{Schema2025, Schema2026, SchemaExtTasks}

// Validator validates JSON instances against the $defs of the three MCP
// schema files. Every $defs entry is compiled by [Load]; afterwards a
// Validator is immutable and safe for concurrent use by parallel tests.
type Validator struct {
	dir  string
	defs map[string]map[string]*jsonschema.Schema // schema name -> def name -> compiled
}

// loadEntry caches one compilation per spec directory.
type loadEntry struct {
	once sync.Once
	v    *Validator
	err  error
}

var (
	loadMu    sync.Mutex
	loadCache = map[string]*loadEntry{}
)

// Load returns the Validator for the spec directory found by [SpecDir],
// compiling the three schema files on first use. Compilation happens once per
// process (per spec directory) and is shared by all callers, including
// parallel tests. A missing spec skips or fails tb as described in SpecDir; a
// schema that does not compile always fails tb.
func Load(tb testing.TB) *Validator {
	tb.Helper()
	dir := SpecDir(tb)
	loadMu.Lock()
	e, ok := loadCache[dir]
	if !ok {
		e = &loadEntry{}
		loadCache[dir] = e
	}
	loadMu.Unlock()
	e.once.Do(func() { e.v, e.err = compileAll(dir) })
	if e.err != nil {
		tb.Fatalf("schematest: %v", e.err)
	}
	return e.v
}

// compileAll reads and compiles every $defs entry of every schema file.
func compileAll(dir string) (*Validator, error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	v := &Validator{dir: dir, defs: map[string]map[string]*jsonschema.Schema{}}
	docs := map[string]map[string]any{}
	urls := map[string]string{}
	for _, name := range schemaNames {
		path := filepath.Join(dir, "schema", name+".schema.json")
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		obj, ok := doc.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: top level is not an object", path)
		}
		defs, ok := obj["$defs"].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: no $defs object", path)
		}
		if err := c.AddResource(path, doc); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		docs[name], urls[name] = defs, path
	}
	for _, name := range schemaNames {
		m := map[string]*jsonschema.Schema{}
		for def := range docs[name] {
			sch, err := c.Compile(urls[name] + "#/$defs/" + escapePointerToken(def))
			if err != nil {
				return nil, fmt.Errorf("compile %s#/$defs/%s: %w", name, def, err)
			}
			m[def] = sch
		}
		v.defs[name] = m
	}
	return v, nil
}

// Dir returns the spec directory the Validator was loaded from.
func (v *Validator) Dir() string { return v.dir }

// Defs returns the sorted $defs names of schema ("2025-11-25", "2026-07-28"
// or "ext-tasks"); nil for an unknown schema.
func (v *Validator) Defs(schema string) []string {
	m := v.defs[schema]
	if m == nil {
		return nil
	}
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// HasDef reports whether schema has a $defs entry named def.
func (v *Validator) HasDef(schema, def string) bool {
	_, ok := v.defs[schema][def]
	return ok
}

// Validate validates the JSON instance against {"$ref": "#/$defs/<def>"} of
// the schema file named schema ("2025-11-25", "2026-07-28" or "ext-tasks").
//
// The instance is decoded with json.Number (via jsonschema.UnmarshalJSON), so
// large integers keep their exact value. The error, if any, names the schema
// and def, shows a shortened copy of the instance and lists the schema
// violations.
func (v *Validator) Validate(schema, def string, instance []byte) error {
	doc, err := decode(instance)
	if err != nil {
		return fmt.Errorf("%s#/$defs/%s: instance %s: %w", schema, def, shorten(instance), err)
	}
	return v.check(schema, def, doc, "", instance)
}

// check validates the decoded value (found at pointer where inside raw)
// against schema#/$defs/def.
func (v *Validator) check(schema, def string, value any, where string, raw []byte) error {
	m, ok := v.defs[schema]
	if !ok {
		return fmt.Errorf("schematest: unknown schema %q (want %q, %q or %q)", schema, Schema2025, Schema2026, SchemaExtTasks)
	}
	sch, ok := m[def]
	if !ok {
		return fmt.Errorf("schematest: schema %s has no $defs entry %q", schema, def)
	}
	if err := sch.Validate(value); err != nil {
		at := ""
		if where != "" {
			at = " at " + where
		}
		return fmt.Errorf("%s#/$defs/%s: instance%s does not validate (instance %s):\n%v", schema, def, at, shorten(raw), err)
	}
	return nil
}

// decode unmarshals one JSON value, keeping numbers as json.Number.
func decode(b []byte) (any, error) {
	return jsonschema.UnmarshalJSON(bytes.NewReader(b))
}

// maxShown bounds the length of an instance quoted in an error.
const maxShown = 400

// shorten returns a compact, length-limited rendering of a JSON instance for
// error messages.
func shorten(b []byte) string {
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err == nil {
		b = buf.Bytes()
	}
	if len(b) <= maxShown {
		return string(b)
	}
	cut := maxShown
	for cut > 0 && !utf8.RuneStart(b[cut]) {
		cut--
	}
	return fmt.Sprintf("%s…(%d bytes total)", b[:cut], len(b))
}
