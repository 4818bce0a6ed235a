package main

import (
	"errors"
	"flag"
	"fmt"
	"strings"
)

// flagProblem turns an error of fs.Parse into one line for people: an
// unknown flag gets the nearest known one ("did you mean --insecure?"), a
// bad value names the flag and the form it takes. helpCmd is the command
// that lists the flags ("mcp-tasks-proxy rewrite --help").
func flagProblem(err error, fs *flag.FlagSet, helpCmd string) string {
	msg := err.Error()
	if errors.Is(err, flag.ErrHelp) {
		return "unknown flag -h; use --help"
	}
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		s := fmt.Sprintf("unknown flag --%s", name)
		if near := nearestFlag(fs, name); near != "" {
			s += fmt.Sprintf("; did you mean %s?", dashes(near))
		}
		return s + "; run " + helpCmd + " for the list"
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		return fmt.Sprintf("%s needs a value; run %s", dashes(name), helpCmd)
	}
	// invalid value "V" for flag -NAME: PROBLEM
	if rest, ok := strings.CutPrefix(msg, "invalid value "); ok {
		if i := strings.Index(rest, " for flag -"); i >= 0 {
			value := rest[:i]
			name, problem, _ := strings.Cut(rest[i+len(" for flag -"):], ": ")
			switch problem {
			case "parse error", "value out of range":
				problem = "use a whole number"
				if f := fs.Lookup(name); f != nil && isBool(f.Value) {
					problem = "use true or false"
				}
			}
			return fmt.Sprintf("%s %s: %s", dashes(name), value, problem)
		}
	}
	if rest, ok := strings.CutPrefix(msg, "invalid boolean value "); ok {
		if i := strings.Index(rest, " for -"); i >= 0 {
			name, _, _ := strings.Cut(rest[i+len(" for -"):], ":")
			return fmt.Sprintf("%s %s: use %s or %s=false (a switch takes no value after a space)", dashes(name), rest[:i], dashes(name), dashes(name))
		}
	}
	return msg
}

// dashes writes a flag name as it is typed: -h, --help.
func dashes(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

func isBool(v flag.Value) bool {
	b, ok := v.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// nearestFlag is the flag of fs closest to the mistyped name, or "" when
// none is close: within a third of the name's length in edits (at least
// two), or a flag the name is the start of.
func nearestFlag(fs *flag.FlagSet, typed string) string {
	typed = strings.ToLower(strings.TrimLeft(typed, "-"))
	if typed == "" {
		return ""
	}
	best, bestD := "", -1
	fs.VisitAll(func(f *flag.Flag) {
		if len(f.Name) == 1 {
			return
		}
		d := levenshtein(typed, f.Name)
		if strings.HasPrefix(f.Name, typed) && len(typed) >= 3 {
			d = min(d, 1)
		}
		if bestD < 0 || d < bestD {
			best, bestD = f.Name, d
		}
	})
	if bestD < 0 || bestD > max(2, len(typed)/3) {
		return ""
	}
	return best
}

// levenshtein is the edit distance between a and b (insertions, deletions
// and substitutions of bytes).
func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
