package schematest

import (
	"errors"
	"fmt"
	"sort"
)

// Modern-only keys that CheckLegacyClean rejects.
const (
	metaServerInfo     = "io.modelcontextprotocol/serverInfo"
	metaSubscriptionID = "io.modelcontextprotocol/subscriptionId"
)

// cacheableLegacyMethods are the legacy methods whose modern counterparts
// return cache fields (ttlMs, cacheScope) that the proxy must strip
// (2026-07-28 caching; initialize stands for server/discover).
var cacheableLegacyMethods = map[string]bool{
	"initialize": true, "tools/list": true, "prompts/list": true,
	"resources/list": true, "resources/templates/list": true, "resources/read": true,
}

// modernTaskFields are ext-tasks Task fields (or draft/stray ones) that never
// appear in a 2025 Task view (the proxy's task normalization; golden vector
// 17).
var modernTaskFields = []string{"ttlMs", "pollIntervalMs", "resultType", "inputRequests", "requestState", "result", "error"}

// CheckLegacyClean reports modern (2026 / ext-tasks) fields leaking into a
// frame written to the legacy client. The 2025 schema accepts extra
// properties almost everywhere, so ValidateClientBound cannot catch these;
// call both. requestMethod is as for ValidateClientBound.
//
// Checked:
//   - any result: no "resultType" (2026 only);
//   - results of initialize, tools/list, prompts/list, resources/list,
//     resources/templates/list, resources/read: no "ttlMs" or "cacheScope"
//     (2026 cache fields);
//   - any result: no _meta["io.modelcontextprotocol/serverInfo"] (a 2026
//     result _meta key the proxy drops);
//   - any notification: no params._meta["io.modelcontextprotocol/subscriptionId"]
//     (2026 notification _meta);
//   - Task views (tasks/get and tasks/cancel results, result.task of a
//     tools/call CreateTaskResult, notifications/tasks/status params): none of
//     ttlMs, pollIntervalMs, resultType, inputRequests, requestState, result,
//     error (the proxy's task normalization).
func CheckLegacyClean(frameBytes []byte, requestMethod string) error {
	f, err := parseFrame(frameBytes)
	if err != nil {
		return err
	}
	k, err := f.kind()
	if err != nil {
		return err
	}
	var errs []error
	leak := func(where, key string) {
		errs = append(errs, fmt.Errorf("legacy frame %s: modern field %q at %s must not reach a 2025 client", shorten(f.raw), key, where))
	}
	switch k {
	case "notification":
		params, _ := f.obj["params"].(map[string]any)
		if meta, ok := params["_meta"].(map[string]any); ok {
			if _, bad := meta[metaSubscriptionID]; bad {
				leak("/params/_meta", metaSubscriptionID)
			}
		}
		if f.method() == "notifications/tasks/status" {
			taskLeaks(params, "/params", leak)
		}
	case "result":
		result, _ := f.obj["result"].(map[string]any)
		if _, bad := result["resultType"]; bad {
			leak("/result", "resultType")
		}
		if cacheableLegacyMethods[requestMethod] {
			for _, key := range []string{"ttlMs", "cacheScope"} {
				if _, bad := result[key]; bad {
					leak("/result", key)
				}
			}
		}
		if meta, ok := result["_meta"].(map[string]any); ok {
			if _, bad := meta[metaServerInfo]; bad {
				leak("/result/_meta", metaServerInfo)
			}
		}
		switch requestMethod {
		case "tasks/get", "tasks/cancel":
			taskLeaks(result, "/result", leak)
		case "tools/call":
			if task, ok := result["task"].(map[string]any); ok {
				taskLeaks(task, "/result/task", leak)
			}
		}
	}
	return errors.Join(errs...)
}

func taskLeaks(task map[string]any, where string, leak func(where, key string)) {
	var found []string
	for _, key := range modernTaskFields {
		if _, bad := task[key]; bad {
			found = append(found, key)
		}
	}
	sort.Strings(found)
	for _, key := range found {
		leak(where, key)
	}
}
