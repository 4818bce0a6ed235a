package protocol

import (
	"strings"
	"testing"
)

// The rules as the packages wrote them before the table: the table must
// give the same answers for every method, known or not.
func oldNamePath(method string) string {
	switch method {
	case "tools/call", "prompts/get":
		return "params.name"
	case "resources/read":
		return "params.uri"
	case "tasks/get", "tasks/update", "tasks/cancel":
		return "params.taskId"
	}
	return ""
}

func oldRequiredParam(method string) string {
	switch method {
	case "tools/call", "prompts/get":
		return "name"
	case "resources/read":
		return "uri"
	}
	return ""
}

func oldSafeToRepeat(method string) bool {
	switch method {
	case "server/discover", "tasks/get", "tasks/result", "resources/read", "prompts/get", "completion/complete",
		"ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe":
		return true
	}
	return strings.HasSuffix(method, "/list")
}

func oldIsTaskMethod(method string) bool {
	switch method {
	case "tasks/get", "tasks/result", "tasks/list", "tasks/cancel":
		return true
	}
	return false
}

func oldCacheable(method string) bool {
	switch method {
	case "server/discover", "tools/list", "prompts/list", "resources/list",
		"resources/templates/list", "resources/read":
		return true
	}
	return false
}

func oldInputRequired(method string) bool {
	switch method {
	case "tools/call", "prompts/get", "resources/read":
		return true
	}
	return false
}

func TestTableMatchesTheOldRules(t *testing.T) {
	names := []string{"", "x/list", "custom/method", "TOOLS/CALL", "tools/call ", "notifications/cancelled"}
	for _, m := range Methods() {
		names = append(names, m.Name)
	}
	for _, n := range names {
		if got, want := NamePath(n), oldNamePath(n); got != want {
			t.Errorf("NamePath(%q) = %q, want %q", n, got, want)
		}
		if got, want := RequiredParam(n), oldRequiredParam(n); got != want {
			t.Errorf("RequiredParam(%q) = %q, want %q", n, got, want)
		}
		if got, want := Repeatable(n), oldSafeToRepeat(n); got != want {
			t.Errorf("Repeatable(%q) = %v, want %v", n, got, want)
		}
		if got, want := LocalOf(n) == LocalTask, oldIsTaskMethod(n); got != want {
			t.Errorf("LocalOf(%q) == LocalTask = %v, want %v", n, got, want)
		}
		a := AnswerOf(n)
		if got, want := a == AnswerCacheable || a == AnswerToolsList, oldCacheable(n); got != want {
			t.Errorf("AnswerOf(%q) = %v: cacheable %v, want %v", n, a, got, want)
		}
		if got, want := InputRequired(n), oldInputRequired(n); got != want {
			t.Errorf("InputRequired(%q) = %v, want %v", n, got, want)
		}
		if got, want := MayBecomeTask(n), n == "tools/call"; got != want {
			t.Errorf("MayBecomeTask(%q) = %v, want %v", n, got, want)
		}
	}
}

func TestTableIsConsistent(t *testing.T) {
	seen := map[string]bool{}
	for _, m := range Methods() {
		if seen[m.Name] {
			t.Errorf("%s is in the table twice", m.Name)
		}
		seen[m.Name] = true
		if m.Eras == 0 {
			t.Errorf("%s exists in no era", m.Name)
		}
		if (m.NameParam == "") != (m.NamePath == "") || m.NamePath != "" && m.NamePath != "params."+m.NameParam {
			t.Errorf("%s: NameParam %q and NamePath %q disagree", m.Name, m.NameParam, m.NamePath)
		}
		if m.NameRequired && m.NameParam == "" {
			t.Errorf("%s requires a name param it does not have", m.Name)
		}
		if m.Name == "tools/call" && m.Repeatable {
			t.Error("tools/call must never be repeated (invariant 6)")
		}
		if got, ok := Lookup(m.Name); !ok || got != m {
			t.Errorf("Lookup(%q) = %+v, %v", m.Name, got, ok)
		}
	}
	if _, ok := Lookup("custom/method"); ok {
		t.Error("Lookup found a method the table does not hold")
	}
	if LocalOf("ping") != LocalAnswer || LocalOf("logging/setLevel") != LocalAnswer || LocalOf("initialize") != LocalInitialize ||
		LocalOf("resources/subscribe") != LocalSubscription || LocalOf("tools/call") != NotLocal {
		t.Error("the local answers are not the session's")
	}
}
