package rewrite

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/schematest"
)

// schemaSecrets are property names of the MCP schemas that the word rule
// matches and that do name secrets, so they stay redacted. None do today;
// a key added here has been looked at and found to be a secret.
var schemaSecrets = []string{}

// TestProtocolKeysFromSchemas derives the exempt keys from the schemas:
// every property name the word rule matches must be either a protocol key
// that SensitiveKey lets through or a reviewed secret, and every protocol
// key must still be a property name of some schema.
func TestProtocolKeysFromSchemas(t *testing.T) {
	t.Log("checks protocolKeys, the keys redaction lets through, against the property names of ../shared/spec/schema/*.json")
	dir := schematest.SpecDir(t)
	files, err := filepath.Glob(filepath.Join(dir, "schema", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no schemas in %s: %v", dir, err)
	}
	names := map[string][]string{} // property name -> schema files
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var doc any
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		for name := range propertyNames(doc, map[string]bool{}) {
			names[name] = append(names[name], filepath.Base(file))
		}
	}
	var matched []string
	for name := range names {
		if sensitiveKey.MatchString(name) {
			matched = append(matched, name)
		}
	}
	sort.Strings(matched)
	t.Logf("schema property names the word rule matches: %v", matched)
	for _, name := range matched {
		switch {
		case slices.Contains(schemaSecrets, name):
			if !SensitiveKey(name) {
				t.Errorf("%s names a secret but SensitiveKey lets it through", name)
			}
		case SensitiveKey(name):
			t.Errorf("the schemas (%v) have the property %q, which the word rule matches: decide whether it holds a secret and add it to protocolKeys (redact.go) or to schemaSecrets (this file)", names[name], name)
		}
	}
	for _, k := range protocolKeys {
		if !slices.Contains(matched, k) {
			t.Errorf("protocolKeys has %q, which no schema property the word rule matches is called: remove it", k)
		}
	}
}

// propertyNames adds to seen the keys of every "properties" object in a
// JSON Schema document, at any depth, and the names in "required" lists.
func propertyNames(node any, seen map[string]bool) map[string]bool {
	switch n := node.(type) {
	case map[string]any:
		if props, ok := n["properties"].(map[string]any); ok {
			for k := range props {
				seen[k] = true
			}
		}
		if req, ok := n["required"].([]any); ok {
			for _, r := range req {
				if s, ok := r.(string); ok {
					seen[s] = true
				}
			}
		}
		for _, v := range n {
			propertyNames(v, seen)
		}
	case []any:
		for _, v := range n {
			propertyNames(v, seen)
		}
	}
	return seen
}

// The secrets the proxy or a server may carry in a frame stay redacted,
// in any case; the protocol's keys are exempt only as spelled.
func TestSensitiveKeySecretsAndProtocolKeys(t *testing.T) {
	for _, k := range []string{
		"access_token", "refresh_token", "id_token", "accessToken", "token", "client_secret", "clientSecret",
		"apiKey", "api_key", "API-KEY", "Authorization", "authorization", "password", "Password",
		"code_verifier", "codeVerifier", "CODE_VERIFIER", "ProgressToken", "progress_token", "progresstoken",
		"MaxTokens", "max_tokens", "progressTokenSecret",
	} {
		if !SensitiveKey(k) {
			t.Errorf("SensitiveKey(%q) = false, want true", k)
		}
	}
	for _, k := range []string{"progressToken", "maxTokens", "code", "code_challenge", "name", "_meta", "id"} {
		if SensitiveKey(k) {
			t.Errorf("SensitiveKey(%q) = true, want false", k)
		}
	}
}

func TestSensitiveKeysAndSecretHeaders(t *testing.T) {
	if f := SensitiveKeys(nil); !f("access_token") || f("progressToken") || f("session") {
		t.Error("SensitiveKeys(nil) is not SensitiveKey")
	}
	f := SensitiveKeys([]string{"Session", "x-Private"})
	for key, want := range map[string]bool{"session": true, "SESSION": true, "sessions": false, "X-PRIVATE": true,
		"password": true, "progressToken": false, "maxTokens": false} {
		if f(key) != want {
			t.Errorf("SensitiveKeys(...)(%q) = %v, want %v", key, !want, want)
		}
	}
	for name, want := range map[string]bool{"Authorization": true, "authorization": true, "PROXY-AUTHORIZATION": true,
		"Cookie": true, "set-cookie": true, "X-Api-Key": true, "X-Auth-Token": true, "Content-Type": false, "Mcp-Name": false} {
		if SecretHeader(name) != want {
			t.Errorf("SecretHeader(%q) = %v, want %v", name, !want, want)
		}
	}
	if CredentialHeader("X-Api-Key") || !CredentialHeader("cookie") {
		t.Error("CredentialHeader is not the four credential headers")
	}
}

// SecretHeader is the header rule of the trace: a credential header, or a
// name that SensitiveKey matches (X-Api-Key, X-Auth-Token).
func SecretHeader(name string) bool { return CredentialHeader(name) || SensitiveKey(name) }
