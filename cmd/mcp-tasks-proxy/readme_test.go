package main

import (
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// repoRoot is the repository's root, seen from this package's directory.
const repoRoot = "../.."

func readRepoFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// markdownLine is one line of a markdown file, with whether it is inside a
// fenced code block.
type markdownLine struct {
	text   string
	inCode bool
}

func markdownLines(md string) []markdownLine {
	var out []markdownLine
	fence := ""
	for _, l := range strings.Split(md, "\n") {
		trimmed := strings.TrimSpace(l)
		switch {
		case fence == "" && (strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~")):
			fence = trimmed[:3]
			out = append(out, markdownLine{l, true})
			continue
		case fence != "" && strings.HasPrefix(trimmed, fence):
			fence = ""
			out = append(out, markdownLine{l, true})
			continue
		}
		out = append(out, markdownLine{l, fence != ""})
	}
	return out
}

// heading returns the text of a markdown heading line ("" when the line is
// not a heading).
func heading(l markdownLine) string {
	if l.inCode || !strings.HasPrefix(l.text, "#") {
		return ""
	}
	t := strings.TrimLeft(l.text, "#")
	if !strings.HasPrefix(t, " ") {
		return ""
	}
	return strings.TrimSpace(t)
}

// sectionTableRows returns the table rows of the section under the heading
// line want (e.g. "## Flags"), up to the next heading of any level.
func sectionTableRows(md, want string) ([]string, bool) {
	var rows []string
	in, found := false, false
	for _, l := range markdownLines(md) {
		if heading(l) != "" {
			if in {
				break
			}
			if strings.TrimSpace(l.text) == want {
				in, found = true, true
			}
			continue
		}
		if in && !l.inCode && strings.HasPrefix(strings.TrimSpace(l.text), "|") {
			rows = append(rows, l.text)
		}
	}
	return rows, found
}

// flagInRows matches a flag as it is typed: --name, or -h for a one-letter
// flag, not followed by more of a flag's name.
func flagInRows(rows []string, name string) bool {
	word := "--" + name
	if len(name) == 1 {
		word = "-" + name
	}
	re := regexp.MustCompile(`(^|[^\w-])` + regexp.QuoteMeta(word) + `($|[^\w-])`)
	for _, r := range rows {
		// Only the first cell names the flags; the others may mention any.
		cells := strings.Split(strings.Trim(strings.TrimSpace(r), "|"), "|")
		if re.MatchString(cells[0]) {
			return true
		}
	}
	return false
}

func flagSetNames(fs *flag.FlagSet) []string {
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	return names
}

// helpFlagNames are the flags a command's --help lists in its "Flags:"
// block, for the commands that parse their own flags without a FlagSet.
func helpFlagNames(t *testing.T, help string) []string {
	t.Helper()
	_, block, ok := strings.Cut(help, "\nFlags:\n")
	if !ok {
		t.Fatal("no Flags: block in the help")
	}
	block, _, _ = strings.Cut(block, "\n\n")
	var names []string
	for _, m := range regexp.MustCompile(`(?m)^\s+(-.*?)(\s{2,}|$)`).FindAllStringSubmatch(block, -1) {
		for _, w := range regexp.MustCompile(`--?([a-z][a-z0-9-]*)`).FindAllStringSubmatch(m[1], -1) {
			names = append(names, w[1])
		}
	}
	if len(names) == 0 {
		t.Fatal("no flag in the help's Flags: block")
	}
	return names
}

// TestReadmeFlagTable: every flag of the proxy, and of each subcommand, has
// a row in the README's table for it.
func TestReadmeFlagTable(t *testing.T) {
	readme := readRepoFile(t, "README.md")
	var c config
	var a authConfig
	rfs, _ := rewriteFlagSet()
	for _, tc := range []struct {
		heading string
		names   []string
	}{
		{"## Flags", flagSetNames(newFlagSet(&c, &headerList{h: http.Header{}}))},
		{"### `auth` flags", flagSetNames(authFlagSet(&a))},
		{"### `check` flags", helpFlagNames(t, checkHelpText)},
		{"### `config` flags", helpFlagNames(t, configHelpText)},
		{"### `rewrite` flags", flagSetNames(rfs)},
		{"### `trace` flags", []string{"help", "h"}},
	} {
		rows, ok := sectionTableRows(readme, tc.heading)
		if !ok {
			t.Errorf("README.md has no %q heading", tc.heading)
			continue
		}
		if len(rows) == 0 {
			t.Errorf("README.md: no table under %q", tc.heading)
			continue
		}
		var missing []string
		for _, n := range tc.names {
			if !flagInRows(rows, n) {
				word := "--" + n
				if len(n) == 1 {
					word = "-" + n
				}
				missing = append(missing, word)
			}
		}
		if len(missing) > 0 {
			t.Errorf("README.md: the table under %q has no row for %s", tc.heading, strings.Join(missing, ", "))
		}
	}
}

// TestReadmeHelpFlagsAreReal: the flags taken from check's and config's
// --help (for their README tables) are flags those commands accept.
func TestReadmeHelpFlagsAreReal(t *testing.T) {
	for _, n := range helpFlagNames(t, checkHelpText) {
		arg := "--" + n
		if n == "timeout" {
			arg += "=5"
		}
		_, rest, err := splitCheckArgs([]string{arg, testURL})
		if err != nil || slices.Contains(rest, arg) {
			t.Errorf("check %s: not check's own flag (err %v, passed on %q)", arg, err, rest)
		}
	}
	for _, n := range helpFlagNames(t, configHelpText) {
		args := []string{"cursor", testURL, "--" + n}
		switch n {
		case "name":
			args = append(args, "x")
		case "file":
			args = append(args, filepath.Join(t.TempDir(), "f.json"), "--write")
		}
		if _, err := parseConfigArgs(args, func(string) string { return "" }, os.Getwd); err != nil {
			t.Errorf("config %q: %v", args, err)
		}
	}
}

// markdownFiles are the repository's documentation files that link.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md"}
	top, _ := filepath.Glob(filepath.Join(repoRoot, "*.md"))
	docs, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) == 0 {
		t.Fatal("docs/ holds no .md file")
	}
	for _, f := range append(top, docs...) {
		rel, err := filepath.Rel(repoRoot, f)
		if err != nil {
			t.Fatal(err)
		}
		rel = filepath.ToSlash(rel)
		if !slices.Contains(files, rel) {
			files = append(files, rel)
		}
	}
	return files
}

var (
	inlineCode = regexp.MustCompile("`[^`]*`")
	// [text](target) and ![alt](target), target without spaces, with an
	// optional "title".
	inlineLink = regexp.MustCompile(`!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	// [label]: target
	refLink = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(\s|$)`)
)

// links are the link targets of a markdown file, outside code.
func links(md string) []string {
	var out []string
	for _, l := range markdownLines(md) {
		if l.inCode {
			continue
		}
		text := inlineCode.ReplaceAllString(l.text, "")
		for _, m := range inlineLink.FindAllStringSubmatch(text, -1) {
			out = append(out, m[1])
		}
		if m := refLink.FindStringSubmatch(text); m != nil {
			out = append(out, m[1])
		}
	}
	return out
}

// anchors are the GitHub anchors of a markdown file's headings.
func anchors(md string) map[string]bool {
	seen := map[string]int{}
	out := map[string]bool{}
	for _, l := range markdownLines(md) {
		h := heading(l)
		if h == "" {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(h) {
			switch {
			case r == ' ':
				b.WriteByte('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			out[a+"-"+strconv.Itoa(n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

// TestReadmeLinks: every relative link in README.md and docs/*.md names a
// file of the repository (and, with #anchor, one of its headings).
func TestReadmeLinks(t *testing.T) {
	for _, name := range markdownFiles(t) {
		md := readRepoFile(t, name)
		for _, target := range links(md) {
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(target, "#")
			file := name
			if path != "" {
				file = filepath.ToSlash(filepath.Join(filepath.Dir(name), path))
				if strings.HasPrefix(file, "../") {
					t.Errorf("%s: the link %q leaves the repository", name, target)
					continue
				}
				fi, err := os.Stat(filepath.Join(repoRoot, file))
				if err != nil {
					t.Errorf("%s: the link %q points at %s, which is not in the repository", name, target, file)
					continue
				}
				if fi.IsDir() || !strings.HasSuffix(file, ".md") {
					if anchor != "" {
						t.Errorf("%s: the link %q has an anchor on a file that is not markdown", name, target)
					}
					continue
				}
			}
			if anchor != "" && !anchors(readRepoFile(t, file))[anchor] {
				t.Errorf("%s: the link %q names #%s, which is no heading of %s", name, target, anchor, file)
			}
		}
	}
}

// TestReadmeNamesNoOutsideFiles: the documentation cites no file that lives
// outside the repository.
func TestReadmeNamesNoOutsideFiles(t *testing.T) {
	outside := regexp.MustCompile(`\b(eras\.md|tasks\.md|DESIGN\.md)\b`)
	for _, name := range markdownFiles(t) {
		for i, l := range strings.Split(readRepoFile(t, name), "\n") {
			if m := outside.FindString(l); m != "" {
				t.Errorf("%s:%d names %s, a file that is not in the repository", name, i+1, m)
			}
		}
	}
}

// TestReadmeLinksDocs: every page of docs/ is linked from the README, and
// BENCHMARKS.md is linked before the install instructions.
func TestReadmeLinksDocs(t *testing.T) {
	readme := readRepoFile(t, "README.md")
	linked := links(readme)
	docs, _ := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	for _, d := range docs {
		want := "docs/" + filepath.Base(d)
		if !slices.ContainsFunc(linked, func(l string) bool { p, _, _ := strings.Cut(l, "#"); return p == want }) {
			t.Errorf("README.md does not link %s", want)
		}
	}
	top, _, ok := strings.Cut(readme, "\n## Install")
	if !ok {
		t.Fatal("README.md has no ## Install heading")
	}
	if !slices.Contains(links(top), "BENCHMARKS.md") {
		t.Error("README.md does not link BENCHMARKS.md before ## Install")
	}
}
