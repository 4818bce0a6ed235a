package main

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/template"
)

// verbs are the second words of the subcommands that take one (and help's,
// the subcommands).
var verbs = map[string][]string{
	"auth":       {"login", "status", "logout"},
	"trace":      {"view", "stats"},
	"completion": {"bash", "zsh", "fish"},
}

// completionHelp is completion's --help; its flags come from their table.
var completionHelp = completionHelpIntro + helpFlags(plainFlagGroups, docs(helpOnlyFlags)) + completionHelpOutro

const completionHelpIntro = `mcp-tasks-proxy completion prints a shell completion script for the
subcommands and flags.

Usage:
  mcp-tasks-proxy completion bash|zsh|fish

`

const completionHelpOutro = `
Examples:
  # bash: for this shell, then for every new one
  source <(mcp-tasks-proxy completion bash)
  mcp-tasks-proxy completion bash > ~/.local/share/bash-completion/completions/mcp-tasks-proxy

  # zsh: a directory in $fpath, then restart zsh
  mcp-tasks-proxy completion zsh > "${fpath[1]}/_mcp-tasks-proxy"

  # fish
  mcp-tasks-proxy completion fish > ~/.config/fish/completions/mcp-tasks-proxy.fish
`

// completionCommand runs `mcp-tasks-proxy completion bash|zsh|fish`.
func completionCommand(args []string, _ io.Reader, stdout, stderr io.Writer, _ func(string) string) int {
	switch {
	case len(args) == 1 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help"):
		fmt.Fprint(stdout, completionHelp)
		return 0
	case len(args) == 1 && slices.Contains(verbs["completion"], args[0]):
		fmt.Fprint(stdout, completionScript(args[0]))
		return 0
	}
	fmt.Fprintln(stderr, "mcp-tasks-proxy: usage: mcp-tasks-proxy completion bash|zsh|fish (--help)")
	return 2
}

// flagWord is a flag as typed (--name, -h), and whether it takes a value.
type flagWord struct {
	word     string
	name     string
	hasValue bool
}

// Fish is the flag as fish's complete takes it: -l NAME or -s N, -r when
// it takes a value.
func (f flagWord) Fish() string {
	opt := "-l " + f.name
	if len(f.name) == 1 {
		opt = "-s " + f.name
	}
	if f.hasValue {
		opt += " -r"
	}
	return opt
}

func flagWords(fs *flag.FlagSet) []flagWord {
	var out []flagWord
	fs.VisitAll(func(f *flag.Flag) {
		out = append(out, flagWord{dashes(f.Name), f.Name, !isBool(f.Value)})
	})
	slices.SortFunc(out, func(a, b flagWord) int { return strings.Compare(a.word, b.word) })
	return out
}

// commandFlags are the commands' flags: "" for the proxy's.
func commandFlags() map[string][]flagWord {
	rfs, _ := rewriteFlagSet()
	help := flagWords(newTableFlagSet("help", helpOnlyFlags, &helpOnly{}))
	return map[string][]flagWord{
		"":           flagWords(newFlagSet(&config{})),
		"auth":       flagWords(authFlagSet(&authConfig{})),
		"rewrite":    flagWords(rfs),
		"serve":      flagWords(serveFlagSet(&serveConfig{})),
		"trace":      help,
		"completion": help,
		"version":    help,
	}
}

func words(fw []flagWord) string {
	var w []string
	for _, f := range fw {
		w = append(w, f.word)
	}
	return strings.Join(w, " ")
}

// completionScript is shell's script, from its template below.
func completionScript(shell string) string {
	type sub struct {
		Name, Verbs, Words string
		Flags              []flagWord
	}
	flags := commandFlags()
	d := struct {
		Subs       []sub
		Words, All string
		Flags      []flagWord
	}{Words: words(flags[""]), All: strings.Join(subcommands, " "), Flags: flags[""]}
	for _, s := range subcommands {
		d.Subs = append(d.Subs, sub{s, strings.Join(verbs[s], " "), words(flags[s]), flags[s]})
	}
	var b strings.Builder
	_ = completionScripts.ExecuteTemplate(&b, shell, d)
	return b.String()
}

var completionScripts = template.Must(template.New("").Parse(`{{define "bash"}}# bash completion for mcp-tasks-proxy
# Load it with: source <(mcp-tasks-proxy completion bash)
_mcp_tasks_proxy() {
    local cur="${COMP_WORDS[COMP_CWORD]}"
    local first="${COMP_WORDS[1]}"
    local words=""
    case "$first" in
{{range .Subs}}        {{.Name}})
{{with .Verbs}}            if [[ $COMP_CWORD -eq 2 ]]; then words="{{.}}"; fi
{{end}}{{with .Words}}            words="$words {{.}}"
{{end}}            ;;
{{end}}        *)
            words="{{.Words}}"
            if [[ $COMP_CWORD -eq 1 ]]; then words="$words {{.All}}"; fi
            ;;
    esac
    COMPREPLY=($(compgen -W "$words" -- "$cur"))
}
complete -o default -F _mcp_tasks_proxy mcp-tasks-proxy
{{end}}{{define "zsh"}}#compdef mcp-tasks-proxy
# zsh completion for mcp-tasks-proxy. Install it in a directory of $fpath:
#   mcp-tasks-proxy completion zsh > "${fpath[1]}/_mcp-tasks-proxy"
# or load it with: source <(mcp-tasks-proxy completion zsh)
_mcp-tasks-proxy() {
  local -a opts
  case "${words[2]}" in
{{range .Subs}}    {{.Name}})
{{with .Verbs}}      (( CURRENT == 3 )) && opts+=({{.}})
{{end}}{{with .Words}}      opts+=({{.}})
{{end}}      ;;
{{end}}    *)
      opts=({{.Words}})
      (( CURRENT == 2 )) && opts+=({{.All}})
      ;;
  esac
  compadd -a opts
  _files
}
if [ "$funcstack[1]" = "_mcp-tasks-proxy" ]; then
  _mcp-tasks-proxy "$@"
else
  compdef _mcp-tasks-proxy mcp-tasks-proxy
fi
{{end}}{{define "fish"}}# fish completion for mcp-tasks-proxy
# Install it with: mcp-tasks-proxy completion fish > ~/.config/fish/completions/mcp-tasks-proxy.fish
complete -c mcp-tasks-proxy -n '__fish_use_subcommand' -f -a '{{.All}}'
{{range .Subs}}{{if .Verbs}}complete -c mcp-tasks-proxy -n '__fish_seen_subcommand_from {{.Name}}' -f -a '{{.Verbs}}'
{{end}}{{end}}{{range .Flags}}complete -c mcp-tasks-proxy -n 'not __fish_seen_subcommand_from {{$.All}}' {{.Fish}}
{{end}}{{range $s := .Subs}}{{range .Flags}}complete -c mcp-tasks-proxy -n '__fish_seen_subcommand_from {{$s.Name}}' {{.Fish}}
{{end}}{{end}}{{end}}`))
