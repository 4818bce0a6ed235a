package main

import (
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
)

// subcommands are the words the first argument may be besides a URL.
var subcommands = []string{"auth", "check", "completion", "config", "help", "rewrite", "serve", "trace", "version"}

// verbs are the second words of the subcommands that take one.
var verbs = map[string][]string{
	"auth":       {"login", "status", "logout"},
	"trace":      {"view", "stats"},
	"completion": {"bash", "zsh", "fish"},
	"help":       subcommands,
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
func completionCommand(args []string, stdout, stderr io.Writer) int {
	if len(args) == 1 {
		switch args[0] {
		case "-h", "--help", "-help":
			fmt.Fprint(stdout, completionHelp)
			return 0
		case "bash":
			fmt.Fprint(stdout, bashCompletion())
			return 0
		case "zsh":
			fmt.Fprint(stdout, zshCompletion())
			return 0
		case "fish":
			fmt.Fprint(stdout, fishCompletion())
			return 0
		}
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

func flagWords(fs *flag.FlagSet) []flagWord {
	var out []flagWord
	fs.VisitAll(func(f *flag.Flag) {
		if f.Usage == hiddenUsage {
			return
		}
		out = append(out, flagWord{dashes(f.Name), f.Name, !isBool(f)})
	})
	sort.Slice(out, func(i, j int) bool { return out[i].word < out[j].word })
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

func bashCompletion() string {
	flags := commandFlags()
	var b strings.Builder
	b.WriteString(`# bash completion for mcp-tasks-proxy
# Load it with: source <(mcp-tasks-proxy completion bash)
_mcp_tasks_proxy() {
    local cur="${COMP_WORDS[COMP_CWORD]}"
    local first="${COMP_WORDS[1]}"
    local words=""
    case "$first" in
`)
	for _, sub := range subcommands {
		fmt.Fprintf(&b, "        %s)\n", sub)
		if v := verbs[sub]; len(v) > 0 {
			fmt.Fprintf(&b, "            if [[ $COMP_CWORD -eq 2 ]]; then words=%q; fi\n", strings.Join(v, " "))
		}
		if f := flags[sub]; len(f) > 0 {
			fmt.Fprintf(&b, "            words=\"$words %s\"\n", words(f))
		}
		b.WriteString("            ;;\n")
	}
	fmt.Fprintf(&b, `        *)
            words=%q
            if [[ $COMP_CWORD -eq 1 ]]; then words="$words %s"; fi
            ;;
    esac
    COMPREPLY=($(compgen -W "$words" -- "$cur"))
}
complete -o default -F _mcp_tasks_proxy mcp-tasks-proxy
`, words(flags[""]), strings.Join(subcommands, " "))
	return b.String()
}

func zshCompletion() string {
	flags := commandFlags()
	var b strings.Builder
	b.WriteString(`#compdef mcp-tasks-proxy
# zsh completion for mcp-tasks-proxy. Install it in a directory of $fpath:
#   mcp-tasks-proxy completion zsh > "${fpath[1]}/_mcp-tasks-proxy"
# or load it with: source <(mcp-tasks-proxy completion zsh)
_mcp-tasks-proxy() {
  local -a opts
  case "${words[2]}" in
`)
	for _, sub := range subcommands {
		fmt.Fprintf(&b, "    %s)\n", sub)
		if v := verbs[sub]; len(v) > 0 {
			fmt.Fprintf(&b, "      (( CURRENT == 3 )) && opts+=(%s)\n", strings.Join(v, " "))
		}
		if f := flags[sub]; len(f) > 0 {
			fmt.Fprintf(&b, "      opts+=(%s)\n", words(f))
		}
		b.WriteString("      ;;\n")
	}
	fmt.Fprintf(&b, `    *)
      opts=(%s)
      (( CURRENT == 2 )) && opts+=(%s)
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
`, words(flags[""]), strings.Join(subcommands, " "))
	return b.String()
}

func fishCompletion() string {
	flags := commandFlags()
	var b strings.Builder
	b.WriteString("# fish completion for mcp-tasks-proxy\n# Install it with: mcp-tasks-proxy completion fish > ~/.config/fish/completions/mcp-tasks-proxy.fish\n")
	all := strings.Join(subcommands, " ")
	fmt.Fprintf(&b, "complete -c mcp-tasks-proxy -n '__fish_use_subcommand' -f -a '%s'\n", all)
	for _, sub := range subcommands {
		if v := verbs[sub]; len(v) > 0 {
			fmt.Fprintf(&b, "complete -c mcp-tasks-proxy -n '__fish_seen_subcommand_from %s' -f -a '%s'\n", sub, strings.Join(v, " "))
		}
	}
	line := func(cond string, f flagWord) {
		opt := "-l " + f.name
		if len(f.name) == 1 {
			opt = "-s " + f.name
		}
		if f.hasValue {
			opt += " -r"
		}
		fmt.Fprintf(&b, "complete -c mcp-tasks-proxy -n '%s' %s\n", cond, opt)
	}
	for _, f := range flags[""] {
		line("not __fish_seen_subcommand_from "+all, f)
	}
	for _, sub := range subcommands {
		for _, f := range flags[sub] {
			line("__fish_seen_subcommand_from "+sub, f)
		}
	}
	return b.String()
}
