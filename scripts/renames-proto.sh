#!/bin/sh
# renames-proto.sh: the mechanical renames that moved the protocol
# vocabulary into internal/protocol. It rewrites qualified uses only
# (rewrite.CodeInternalError -> protocol.CodeInternalError ...), adds the
# internal/protocol import where a file now needs it and drops an import
# the file no longer uses, then gofmts the file. It changes no logic and is
# idempotent: run it again on a diverged copy of the tree.
#
# Usage: scripts/renames-proto.sh [dir...]   (default: the whole module)
set -eu
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || set -- .

mod=github.com/mcp-tasks-proxy/mcp-tasks-proxy

# old qualified name (ERE) -> protocol.<same name>
codes='Code(ParseError|InvalidRequest|MethodNotFound|InvalidParams|InternalError|HeaderMismatch|MissingRequiredCapability|UnsupportedProtocolVersion)'
metas='Meta(ProtocolVersion|ClientCapabilities|ClientInfo|LogLevel|ServerInfo|SubscriptionID|RelatedTask)'
results='Result(Complete|InputRequired|Task)'
pattern="\\b(rewrite\\.($codes|$metas|$results|ParamHeader)|capabilities\\.(ModernVersion|LegacyVersions?|TasksExtension)|routing\\.ParamHeader)\\b"

files=$(grep -rlE --include='*.go' "$pattern" "$@" | grep -v '/internal/protocol/' || true)
for f in $files; do
	sed -E -i \
		-e "s/\\brewrite\\.($codes|$metas|$results|ParamHeader)\\b/protocol.\\1/g" \
		-e "s/\\bcapabilities\\.(ModernVersion|LegacyVersions?|TasksExtension)\\b/protocol.\\1/g" \
		-e "s/\\brouting\\.ParamHeader\\b/protocol.ParamHeader/g" \
		"$f"
	# The import: next to the module's first import, where gofmt sorts it.
	if ! grep -q "\"$mod/internal/protocol\"" "$f"; then
		sed -E -i "0,\\#^\\s*(\\w+ )?\"$mod/#s##\\t\"$mod/internal/protocol\"\\n&#" "$f"
	fi
	# An import the renames left unused goes.
	for p in rewrite capabilities routing; do
		if grep -qE "^\\s*\"$mod/$p\"\$" "$f" && ! grep -vE "^\\s*\"$mod/$p\"\$" "$f" | grep -qE "\\b$p\\."; then
			sed -E -i "\\#^\\s*\"$mod/$p\"\$#d" "$f"
		fi
	done
	gofmt -w "$f"
done
