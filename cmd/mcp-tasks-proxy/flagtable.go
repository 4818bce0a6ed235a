package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"time"
)

// A command's flags are one table (flags.go): a slice of flagSpec, one a
// flag, from which its flag.FlagSet (the parser), the flag section of its
// --help and its table in README.md are all built. Shell completion and the
// "did you mean" of a mistyped flag read the flag set, so the same table.
//
// To add a flag: add a flagSpec to the command's table where it should be
// listed (its Group picks the --help section), bind it to a field of the
// command's config (stringFlag, boolFlag, intFlag, durationFlag, valueFlag,
// or a func of its own), then run
//
//	go test ./cmd/mcp-tasks-proxy -run TestReadmeFlagTables -update
//
// to write its README row. A subcommand whose config embeds the proxy's
// shares the proxy's flags with sharedAll(proxyFlags, field) (auth picks
// some with proxyFlag, which may give them words of their own).

// flagDoc is how one flag is documented and listed.
type flagDoc struct {
	// Name is the flag as typed, without dashes; empty for a row that is
	// not a flag (Arg is then the whole usage: "URL PORT").
	Name    string
	Aliases []string // more names of the flag ("h"), listed with it
	Arg     string   // the value's placeholder ("D"); empty for a switch
	// Default is the default as documented, when it is not the parser's
	// own ("user cache dir"); empty: the parser's, as the README writes it.
	Default string
	Env     string // the environment variable read when the flag is not given
	Help    string // the --help text: one paragraph, wrapped when printed
	Doc     string // the README text (markdown); empty means Help
	Group   string // the --help section: a key of the command's flagGroups
	Note    string // a line printed before the flag in --help (what D means)
	Action  bool   // prints something and exits (--help): no default shown
	// Path values name a file, which `config` makes absolute for a host's
	// entry; NotInEntry flags make no sense there, and config refuses them.
	Path, NotInEntry bool
}

// flagSpec is one row of a command's table: the documentation and the
// parser's binding into T, the command's parsed command line.
type flagSpec[T any] struct {
	flagDoc
	// bind defines the flag (under name, its Name or one of its Aliases)
	// on fs, writing into c. Nil for a documentation row.
	bind func(fs *flag.FlagSet, name string, c *T)
}

// flagGroup is a section of a command's --help flag list.
type flagGroup struct {
	Key   string
	Title string // "Flags:"; empty: the rows follow a blank line only
	After string // a line after the section's rows
}

// newTableFlagSet builds the parser of a table, writing into c. Errors are
// the caller's to print (flagProblem).
func newTableFlagSet[T any](name string, table []flagSpec[T], c *T) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	for _, s := range table {
		if s.bind == nil {
			continue
		}
		for _, n := range s.names() {
			s.bind(fs, n, c)
			fs.Lookup(n).Usage = s.Help
		}
	}
	return fs
}

// docs are the documentation of a table's rows.
func docs[T any](table []flagSpec[T]) []flagDoc {
	out := make([]flagDoc, len(table))
	for i, s := range table {
		out[i] = s.flagDoc
	}
	return out
}

// names are the flag's names: Name, then Aliases.
func (d flagDoc) names() []string {
	if d.Name == "" {
		return nil
	}
	return append([]string{d.Name}, d.Aliases...)
}

// usage is the flag as the help shows it: "--log-file PATH",
// "--help, -h", "URL PORT".
func (d flagDoc) usage() string {
	if d.Name == "" {
		return d.Arg
	}
	s := dashes(d.Name)
	if d.Arg != "" {
		s += " " + d.Arg
	}
	for _, a := range d.Aliases {
		s += ", " + dashes(a)
	}
	return s
}

// Flag constructors: each binds the field p chooses, with its default.

func stringFlag[T any](p func(*T) *string, def string) func(*flag.FlagSet, string, *T) {
	return func(fs *flag.FlagSet, name string, c *T) { fs.StringVar(p(c), name, def, "") }
}

func boolFlag[T any](p func(*T) *bool) func(*flag.FlagSet, string, *T) {
	return func(fs *flag.FlagSet, name string, c *T) { fs.BoolVar(p(c), name, false, "") }
}

func intFlag[T any](p func(*T) *int, def int) func(*flag.FlagSet, string, *T) {
	return func(fs *flag.FlagSet, name string, c *T) { fs.IntVar(p(c), name, def, "") }
}

// durationFlag takes seconds or a duration (durations.go); zeroOK lets 0
// through, meaning none.
func durationFlag[T any](p func(*T) *time.Duration, def time.Duration, zeroOK bool) func(*flag.FlagSet, string, *T) {
	form := errDurationForm
	if zeroOK {
		form = errDurationZeroForm
	}
	return func(fs *flag.FlagSet, name string, c *T) {
		*p(c) = def
		fs.Var(duration{p(c), zeroOK, form}, name, "")
	}
}

// valueFlag binds a flag.Value of the config's (a list, a header list).
func valueFlag[T any](v func(*T) flag.Value) func(*flag.FlagSet, string, *T) {
	return func(fs *flag.FlagSet, name string, c *T) { fs.Var(v(c), name, "") }
}

// sharedAll is every row of the proxy's table for a subcommand whose config
// holds the proxy's (at field), in its --help sections: a subcommand that
// takes all of the proxy's flags appends its own to these.
func sharedAll[T any](table []flagSpec[config], field func(*T) *config) []flagSpec[T] {
	out := make([]flagSpec[T], len(table))
	for i, s := range table {
		out[i].flagDoc = s.flagDoc
		if s.bind != nil {
			out[i].bind = func(fs *flag.FlagSet, name string, c *T) { s.bind(fs, name, field(c)) }
		}
	}
	return out
}

// --help's flag texts start at helpColumn; its lines stop at helpWidth.
const (
	helpColumn = 28
	helpWidth  = 92
)

// helpFlags renders a table's rows for --help, section by section in the
// order of groups; each section's rows in table order.
func helpFlags(groups []flagGroup, rows []flagDoc) string {
	var b strings.Builder
	for i, g := range groups {
		if i > 0 {
			b.WriteString("\n")
		}
		if g.Title != "" {
			b.WriteString(g.Title + "\n")
		}
		for _, d := range rows {
			if d.Group != g.Key {
				continue
			}
			if d.Note != "" {
				b.WriteString(wrap("  ", d.Note, "  "))
			}
			b.WriteString(helpRow(d.usage(), d.Help))
		}
		if g.After != "" {
			b.WriteString(wrap("  ", g.After, "  "))
		}
	}
	return b.String()
}

// helpRow is one flag of --help: its usage, then its text, wrapped.
func helpRow(usage, text string) string {
	first := "  " + usage + "  "
	if len(usage) <= helpColumn-4 {
		first = fmt.Sprintf("  %-*s", helpColumn-2, usage)
	}
	return wrap(first, text, strings.Repeat(" ", helpColumn))
}

// wrap writes text after first, continuing after indent, in lines of at
// most helpWidth (a word longer than that gets a line of its own).
func wrap(first, text, indent string) string {
	var b strings.Builder
	line := first
	empty := true
	for _, w := range strings.Fields(text) {
		if !empty && len(line)+1+len(w) > helpWidth {
			b.WriteString(strings.TrimRight(line, " ") + "\n")
			line, empty = indent, true
		}
		if !empty {
			line += " "
		}
		line += w
		empty = false
	}
	b.WriteString(line + "\n")
	return b.String()
}
