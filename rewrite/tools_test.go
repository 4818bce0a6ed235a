package rewrite_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/tidwall/gjson"
	"golang.org/x/tools/txtar"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/schematest"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
)

// The golden files in testdata/tools are tools/list pages as a server sends
// them (server-in) and the frames the legacy client gets without the tasks
// extension (client-out/no-extension) and with it (client-out/extension).
// Regenerate the client-out sections with -update and review the diff.
const toolsGoldenDir = "testdata/tools"

// toolsDown is the tools/list rewrite the bridge makes, for the client id 1.
func toolsDown(t testing.TB, in []byte, ext bool) rewrite.Downed {
	t.Helper()
	f, err := rewrite.Parse(bytes.TrimSpace(in))
	if err != nil {
		t.Fatal(err)
	}
	d, err := rewrite.ResponseDown(&f, rewrite.Down{ID: []byte("1"), Method: "tools/list", TaskSupport: ext})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

var toolsOutSections = []struct {
	name string
	ext  bool
}{{"client-out/no-extension", false}, {"client-out/extension", true}}

func TestToolsListGolden(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(toolsGoldenDir, "*.txtar"))
	if len(files) == 0 {
		t.Fatalf("no golden files in %s", toolsGoldenDir)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			ar, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			sec := sections(ar)
			in := sec["server-in"]
			if len(bytes.TrimSpace(in)) == 0 {
				t.Fatal("no server-in section")
			}
			outs := map[string][]byte{}
			for _, out := range toolsOutSections {
				got := append(toolsDown(t, in, out.ext).Frame, '\n')
				outs[out.name] = got
				if *update {
					for i := range ar.Files {
						if ar.Files[i].Name == out.name {
							ar.Files[i].Data = got
						}
					}
					continue
				}
				if want := sec[out.name]; !bytes.Equal(got, want) {
					t.Errorf("%s:\n got: %s\nwant: %s", out.name, got, want)
				}
				checkTaskSupport(t, out.name, got, out.ext)
			}
			if *update {
				if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			t.Run("schema", func(t *testing.T) {
				v := schematest.Load(t)
				for _, out := range toolsOutSections {
					frame := outs[out.name]
					if err := v.Validate(schematest.Schema2025, "ListToolsResult", []byte(gjson.GetBytes(frame, "result").Raw)); err != nil {
						t.Errorf("%s: %v", out.name, err)
					}
					if err := schematest.CheckLegacyClean(bytes.TrimSpace(frame), "tools/list"); err != nil {
						t.Errorf("%s: %v", out.name, err)
					}
				}
			})
		})
	}
}

// checkTaskSupport checks the taskSupport policy (docs/protocol.md, Tasks)
// on a rewritten tools/list frame:
// every tool object has execution.taskSupport "optional" (each one, if the
// key is repeated) when ext is set, and none has a taskSupport otherwise;
// an execution that is left is an object.
func checkTaskSupport(t testing.TB, where string, frame []byte, ext bool) {
	t.Helper()
	tools := gjson.GetBytes(frame, "result.tools")
	if !tools.IsArray() {
		return // not a page of tools (Array would make one of it)
	}
	for _, tool := range tools.Array() {
		if !tool.IsObject() {
			continue
		}
		n := 0
		tool.ForEach(func(k, exec gjson.Result) bool {
			if k.Str != "execution" {
				return true
			}
			if !exec.IsObject() {
				t.Errorf("%s: tool %s has execution %s, not an object", where, tool.Get("name").Raw, exec.Raw)
				return true
			}
			exec.ForEach(func(k, v gjson.Result) bool {
				if k.Str != "taskSupport" {
					return true
				}
				n++
				if !ext || v.Raw != `"optional"` {
					t.Errorf("%s: tool %s has taskSupport %s (extension %v)", where, tool.Get("name").Raw, v.Raw, ext)
				}
				return true
			})
			return true
		})
		if ext && n == 0 {
			t.Errorf("%s: tool %s has no taskSupport though the extension is declared", where, tool.Get("name").Raw)
		}
	}
}

// executionOthers returns the raw members of a tool's execution objects
// other than taskSupport, in order: what the rewrite must keep as it was.
func executionOthers(tool gjson.Result) []string {
	var out []string
	tool.ForEach(func(k, exec gjson.Result) bool {
		if k.Str == "execution" && exec.IsObject() {
			exec.ForEach(func(k, v gjson.Result) bool {
				if k.Str != "taskSupport" {
					out = append(out, k.Raw+":"+v.Raw)
				}
				return true
			})
		}
		return true
	})
	return out
}

// FuzzToolsListTaskSupport holds the tools/list rewrite to the taskSupport
// policy on any page: valid JSON out, taskSupport as checkTaskSupport says, and
// the other members of execution kept byte for byte.
func FuzzToolsListTaskSupport(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(toolsGoldenDir, "*.txtar"))
	for _, file := range files {
		ar, err := txtar.ParseFile(file)
		if err != nil {
			f.Fatal(err)
		}
		in := bytes.TrimSpace(sections(ar)["server-in"])
		f.Add(in, false)
		f.Add(in, true)
	}
	for _, fr := range goldenFrames(f) {
		if gjson.GetBytes(fr, "result.tools").IsArray() {
			f.Add(fr, false)
		}
	}
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"execution":{"taskSupport":"optional","taskSupport":1},"outputSchema":1,"outputSchema":{}}]}}`), false)
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"outputSchema":{"type":"string"}, "execution" : { "a":1 , "taskSupport":"x" }}, {}]}}`), true)
	f.Fuzz(func(t *testing.T, in []byte, ext bool) {
		fr, err := rewrite.Parse(rewrite.TrimFrame(in))
		if err != nil || fr.Kind != rewrite.KindResponse {
			return
		}
		d, err := rewrite.ResponseDown(&fr, rewrite.Down{ID: []byte("1"), Method: "tools/list", TaskSupport: ext})
		if err != nil || d.Frame == nil {
			return
		}
		if !gjson.ValidBytes(d.Frame) {
			t.Fatalf("invalid JSON out of %s:\n%s", in, d.Frame)
		}
		checkTaskSupport(t, string(in), d.Frame, ext)
		inTools := fr.Result.Get("tools")
		outTools := gjson.GetBytes(d.Frame, "result.tools")
		if !inTools.IsArray() || len(d.Rejected) > 0 {
			return // tools removed: the pages do not line up
		}
		ins, outs := inTools.Array(), outTools.Array()
		if len(ins) != len(outs) {
			t.Fatalf("%d tools in, %d out:\n%s\n%s", len(ins), len(outs), in, d.Frame)
		}
		for i := range ins {
			if !ins[i].IsObject() {
				if ins[i].Raw != outs[i].Raw {
					t.Fatalf("tool %d changed: %s -> %s", i, ins[i].Raw, outs[i].Raw)
				}
				continue
			}
			a, b := executionOthers(ins[i]), executionOthers(outs[i])
			if len(a) != len(b) {
				t.Fatalf("tool %d execution members %q -> %q", i, a, b)
			}
			for j := range a {
				if a[j] != b[j] {
					t.Fatalf("tool %d execution member %s -> %s", i, a[j], b[j])
				}
			}
		}
	})
}
