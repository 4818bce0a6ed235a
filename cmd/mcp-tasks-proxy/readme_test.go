package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/bridge"
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

var updateReadme = flag.Bool("update", false, "rewrite README.md's flag tables from the flag tables (flags.go)")

// readmeFlagTables are the README's generated flag tables, by the name in
// their markers (<!-- flags:begin NAME --> ... <!-- flags:end NAME -->),
// each between blank lines.
func readmeFlagTables() []struct{ name, table string } {
	tables := []struct{ name, table string }{
		{"proxy", markdownFlags(docs(proxyFlags), newFlagSet(&config{}))},
		{"auth", markdownFlags(docs(authFlags), authFlagSet(&authConfig{}))},
		{"check", markdownFlags(docs(checkFlagTable), checkFlagSet(&checkConfig{}))},
		{"serve", markdownFlags(docs(serveFlags), serveFlagSet(&serveConfig{}))},
		{"config", markdownFlags(docs(configFlagTable), newTableFlagSet("config", configFlagTable, &configCmd{}))},
		{"trace", markdownFlags(docs(helpOnlyFlags), newTableFlagSet("trace", helpOnlyFlags, &helpOnly{}))},
	}
	for i := range tables {
		tables[i].table = "\n" + tables[i].table + "\n"
	}
	return tables
}

// betweenMarkers finds the text between NAME's begin and end markers of md:
// it returns the text before it, it, and the text after.
func betweenMarkers(md, name string) (before, inside, after string, ok bool) {
	begin := "<!-- flags:begin " + name + " -->\n"
	end := "<!-- flags:end " + name + " -->"
	i := strings.Index(md, begin)
	if i < 0 || strings.Count(md, begin) != 1 {
		return "", "", "", false
	}
	i += len(begin)
	j := strings.Index(md[i:], end)
	if j < 0 {
		return "", "", "", false
	}
	return md[:i], md[i : i+j], md[i+j:], true
}

// TestReadmeFlagTables: the README's flag tables of the proxy and of the
// subcommands are what their flag tables (flags.go) generate. With
// -update, the test writes them.
func TestReadmeFlagTables(t *testing.T) {
	readme := readRepoFile(t, "README.md")
	md := readme
	for _, tc := range readmeFlagTables() {
		before, inside, after, ok := betweenMarkers(md, tc.name)
		if !ok {
			t.Errorf("README.md has no one pair of <!-- flags:begin %s --> and <!-- flags:end %s --> lines", tc.name, tc.name)
			continue
		}
		if inside == tc.table {
			continue
		}
		if *updateReadme {
			md = before + tc.table + after
			continue
		}
		have, want := strings.Split(inside, "\n"), strings.Split(tc.table, "\n")
		for i := range max(len(have), len(want)) {
			h, w := "", ""
			if i < len(have) {
				h = have[i]
			}
			if i < len(want) {
				w = want[i]
			}
			if h != w {
				t.Errorf("README.md's %s flag table differs from flags.go at row %d:\nREADME:   %s\nflags.go: %s\n(go test ./cmd/mcp-tasks-proxy -run TestReadmeFlagTables -update rewrites it)", tc.name, i+1, h, w)
				break
			}
		}
	}
	if *updateReadme && md != readme {
		if err := os.WriteFile(filepath.Join(repoRoot, "README.md"), []byte(md), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Log("README.md: flag tables rewritten")
	}
}

// TestMarkdownFlagsRow: a row's flag names, default and text, as the
// README shows them.
func TestMarkdownFlagsRow(t *testing.T) {
	type opts struct {
		size    int
		timeout time.Duration
		on      bool
		pattern string
		help    bool
	}
	table := []flagSpec[opts]{
		{flagDoc{Name: "size", Arg: "SIZE", Help: "plain words", Doc: "`markdown` words"},
			func(fs *flag.FlagSet, name string, c *opts) { c.size = 64 << 20; fs.Var(byteSize{&c.size}, name, "") }},
		{flagDoc{Name: "timeout", Arg: "D", Help: "how long"},
			durationFlag(func(c *opts) *time.Duration { return &c.timeout }, 90*time.Minute, false)},
		{flagDoc{Name: "on", Help: "a switch"}, boolFlag(func(c *opts) *bool { return &c.on })},
		{flagDoc{Name: "pattern", Arg: "JSON|@FILE", Default: "the server's", Help: "prose default"},
			stringFlag(func(c *opts) *string { return &c.pattern }, "")},
		{flagDoc{Arg: "URL PORT", Help: "a row that is not a flag"}, nil},
		helpFlag[opts](func(c *opts) *bool { return &c.help }),
	}
	got := markdownFlags(docs(table), newTableFlagSet("t", table, &opts{}))
	want := `| flag | default | what it does |
|---|---|---|
| ` + "`--size SIZE` | `64MiB` | `markdown` words |" + `
| ` + "`--timeout D` | `1h30m` | how long |" + `
| ` + "`--on` | off | a switch |" + `
| ` + "`--pattern JSON\\|@FILE` | the server's | prose default |" + `
| ` + "`URL PORT` | | a row that is not a flag |" + `
| ` + "`--help`, `-h` | | print the help and exit |" + `
`
	if got != want {
		t.Errorf("markdownFlags:\n%s\nwant:\n%s", got, want)
	}
	help := helpFlags([]flagGroup{{Key: "", Title: "Flags:"}}, docs(table))
	if !strings.Contains(help, "\n  --help, -h                print this help and exit\n") {
		t.Errorf("helpFlags does not list --help, -h:\n%s", help)
	}
}

// TestHelpWrap: --help rows keep their words, start their text at
// helpColumn and stop at helpWidth.
func TestHelpWrap(t *testing.T) {
	text := strings.Repeat("lorem ipsum dolor sit amet ", 12)
	for _, usage := range []string{"--x", "--a-very-long-flag-name VALUE"} {
		row := helpRow(usage, text)
		if strings.Join(strings.Fields(row), " ") != usage+" "+strings.TrimSpace(text) {
			t.Errorf("helpRow(%q) changed the words:\n%s", usage, row)
		}
		lines := strings.Split(strings.TrimSuffix(row, "\n"), "\n")
		if len(lines) < 2 {
			t.Fatalf("helpRow(%q) did not wrap:\n%s", usage, row)
		}
		for i, l := range lines {
			if len(l) > helpWidth {
				t.Errorf("helpRow(%q) line %d is %d long: %q", usage, i+1, len(l), l)
			}
			if i > 0 && (!strings.HasPrefix(l, strings.Repeat(" ", helpColumn)) || l[helpColumn] == ' ') {
				t.Errorf("helpRow(%q) line %d does not start at column %d: %q", usage, i+1, helpColumn, l)
			}
		}
		start := helpColumn // where the text starts on the first line
		if len(usage)+2 > helpColumn-2 {
			start = len(usage) + 4
		}
		if lines[0][:start] != fmt.Sprintf("  %-*s", start-2, usage) || lines[0][start] == ' ' {
			t.Errorf("helpRow(%q): the text does not start at column %d: %q", usage, start, lines[0])
		}
	}
}

// TestHelpShowsDefaults: a flag whose default is the parser's own value
// names it in its --help text, so that the two cannot drift apart; and a
// flag read from the environment names its variable.
func TestHelpShowsDefaults(t *testing.T) {
	check := func(cmd string, rows []flagDoc, fs *flag.FlagSet) {
		for _, d := range rows {
			if d.Name == "" || d.Default != "" || d.Action || isBool(fs.Lookup(d.Name).Value) {
				continue
			}
			v := parserDefault(fs.Lookup(d.Name))
			if v == "" {
				continue
			}
			q := regexp.QuoteMeta(v)
			// "(default 10m)", "(default warn: ...)", or "auto (default: ...)".
			named := regexp.MustCompile(`\(default ` + q + `[):;,]|(^|[\s(])` + q + ` \(default[):;,]`)
			if !named.MatchString(d.Help) {
				t.Errorf("%s --%s: the parser's default is %s, which its help does not name: %q", cmd, d.Name, v, d.Help)
			}
		}
		for _, d := range rows {
			doc := d.Doc
			if doc == "" {
				doc = d.Help
			}
			if d.Env != "" && (!strings.Contains(d.Help, "$"+d.Env) || !strings.Contains(doc, d.Env)) {
				t.Errorf("%s --%s is read from $%s, which its help or README row does not say", cmd, d.Name, d.Env)
			}
		}
	}
	check("mcp-tasks-proxy", docs(proxyFlags), newFlagSet(&config{}))
	check("auth", docs(authFlags), authFlagSet(&authConfig{}))
	check("check", docs(checkFlagTable), checkFlagSet(&checkConfig{}))
	check("serve", docs(serveFlags), serveFlagSet(&serveConfig{}))
	check("config", docs(configFlagTable), newTableFlagSet("config", configFlagTable, &configCmd{}))
}

// TestReadmeRewriteFlagTable: every flag of rewrite (whose flag set is
// its own, not a table) has a row in the README's table for it.
func TestReadmeRewriteFlagTable(t *testing.T) {
	const heading = "### `rewrite` flags"
	rows, ok := sectionTableRows(readRepoFile(t, "README.md"), heading)
	if !ok || len(rows) == 0 {
		t.Fatalf("README.md has no table under %q", heading)
	}
	rfs, _ := rewriteFlagSet()
	for _, n := range flagSetNames(rfs) {
		if !flagInRows(rows, n) {
			t.Errorf("README.md: the table under %q has no row for %s", heading, dashes(n))
		}
	}
}

// TestReadmeHelpFlagsAreReal: check's and config's own flags, which they
// parse by hand, are flags those commands accept.
func TestReadmeHelpFlagsAreReal(t *testing.T) {
	for _, d := range docs(checkFlagTable) {
		for _, n := range d.names() {
			arg := dashes(n)
			if n == "timeout" {
				arg += "=5"
			}
			var c checkConfig
			if err := c.parse(checkFlagSet(&c), []string{arg, testURL}, env(), ""); err != nil || !c.json && c.timeout != 5*time.Second && !c.help {
				t.Errorf("check %s: not check's own flag (err %v)", arg, err)
			}
		}
	}
	for _, d := range docs(configFlagTable) {
		for _, n := range d.names() {
			args := []string{"cursor", testURL, dashes(n)}
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

// TestFlagRowsInAGroup: every row of a table is in one of the --help
// sections of its command, so --help lists it.
func TestFlagRowsInAGroup(t *testing.T) {
	for _, tc := range []struct {
		cmd    string
		groups []flagGroup
		rows   []flagDoc
	}{
		{"mcp-tasks-proxy", proxyFlagGroups, docs(proxyFlags)},
		{"auth", authFlagGroups, docs(authFlags)},
		{"check", plainFlagGroups, docs(checkFlagTable)},
		{"serve", serveFlagGroups, docs(serveFlags)},
		{"config", plainFlagGroups, docs(configFlagTable)},
		{"trace", plainFlagGroups, docs(helpOnlyFlags)},
	} {
		help := helpFlags(tc.groups, tc.rows)
		for _, d := range tc.rows {
			if !slices.ContainsFunc(tc.groups, func(g flagGroup) bool { return g.Key == d.Group }) {
				t.Errorf("%s %s: group %q is not one of its --help sections", tc.cmd, d.usage(), d.Group)
			}
			if !strings.Contains(help, "  "+d.usage()+"  ") {
				t.Errorf("%s --help does not list %s", tc.cmd, d.usage())
			}
		}
	}
}

// TestSharedAll: a subcommand that takes all of the proxy's flags and one
// of its own (as a serve command would) parses both into its config, and
// lists both in its --help.
func TestSharedAll(t *testing.T) {
	type serveConfig struct {
		config
		listen string
	}
	table := append(sharedAll(proxyFlags, func(s *serveConfig) *config { return &s.config }),
		flagSpec[serveConfig]{flagDoc{Name: "listen", Arg: "ADDR", Help: "where to listen"},
			stringFlag(func(s *serveConfig) *string { return &s.listen }, "127.0.0.1:0")})
	var s serveConfig
	fs := newTableFlagSet("serve", table, &s)
	if s.sess.MaxInFlight != bridge.DefaultMaxInFlight || s.listen != "127.0.0.1:0" {
		t.Errorf("defaults: max-in-flight %d, listen %q", s.sess.MaxInFlight, s.listen)
	}
	if _, err := parseInterspersed(fs, []string{"--listen", ":8080", "--log-level", "info", "--header", "X-A: b", "-h"}); err != nil {
		t.Fatal(err)
	}
	if s.listen != ":8080" || s.logLevel != "info" || s.headers.h.Get("X-A") != "b" || !s.help {
		t.Errorf("parsed listen %q, log-level %q, header %q, help %v", s.listen, s.logLevel, s.headers.h.Get("X-A"), s.help)
	}
	if n, want := len(flagSetNames(fs)), len(flagSetNames(newFlagSet(&config{})))+1; n != want {
		t.Errorf("%d flags, want the proxy's and --listen: %d", n, want)
	}
	help := helpFlags(proxyFlagGroups, docs(table))
	for _, w := range []string{"--listen ADDR", "--oauth-store DIR", "--help, -h"} {
		if !strings.Contains(help, w) {
			t.Errorf("serve --help does not list %s", w)
		}
	}
}

// defaultText is a flag's default as the README shows it: its Default, or
// the parser's own, in backticks, written as people write it (10m, not
// 10m0s; 128MiB). Switches are off; action flags and empty values show
// nothing.
func defaultText(d flagDoc, fs *flag.FlagSet) string {
	if d.Default != "" {
		return d.Default
	}
	if d.Action || d.Name == "" {
		return ""
	}
	f := fs.Lookup(d.Name)
	if isBool(f.Value) {
		if f.DefValue == "false" {
			return "off"
		}
		return "on"
	}
	v := parserDefault(f)
	if v == "" {
		return ""
	}
	return "`" + v + "`"
}

// parserDefault is the default of f as people write it.
func parserDefault(f *flag.Flag) string {
	switch v := f.Value.(type) {
	case duration:
		return shortDuration(*v.d)
	case byteSize:
		return sizeText(*v.n)
	}
	return f.DefValue
}

// shortDuration writes 2h for 2h0m0s, 10m for 10m0s, 1h30m for 1h30m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// sizeText writes a byte count with the largest unit that divides it.
func sizeText(n int) string {
	for _, u := range []struct {
		suffix string
		size   int
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n > 0 && n%u.size == 0 {
			return fmt.Sprintf("%d%s", n/u.size, u.suffix)
		}
	}
	return fmt.Sprint(n)
}

// markdownFlags renders a table's rows for the README: flag, default, what
// it does. fs is the table's parser, for the defaults.
func markdownFlags(rows []flagDoc, fs *flag.FlagSet) string {
	var b strings.Builder
	b.WriteString("| flag | default | what it does |\n|---|---|---|\n")
	for _, d := range rows {
		var names []string
		if d.Name == "" {
			names = []string{d.Arg}
		} else {
			for i, n := range d.names() {
				w := dashes(n)
				if i == 0 && d.Arg != "" {
					w += " " + d.Arg
				}
				names = append(names, w)
			}
		}
		for i, n := range names {
			names[i] = "`" + strings.ReplaceAll(n, "|", `\|`) + "`"
		}
		doc := d.Doc
		if doc == "" {
			doc = d.Help
		}
		def := defaultText(d, fs)
		if def != "" {
			def += " "
		}
		fmt.Fprintf(&b, "| %s | %s| %s |\n", strings.Join(names, ", "), def, doc)
	}
	return b.String()
}
