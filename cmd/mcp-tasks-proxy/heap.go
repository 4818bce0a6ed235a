package main

import (
	"go.uber.org/zap"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/heapgoal"
)

// startHeapGoal has the garbage collector let a small heap gather up to
// heapgoal.Room of garbage between collections (see package heapgoal): at
// the runtime's default, a bridge with calls in flight collects dozens of
// times a second. The GOGC environment variable fixes the setting instead.
// Stop the Tuner it returns (nil when GOGC is set) to put GOGC back.
func startHeapGoal(getenv func(string) string, logger *zap.Logger) *heapgoal.Tuner {
	t := heapgoal.Start(getenv)
	if t == nil {
		logger.Debug("garbage collection as GOGC sets it", zap.String("GOGC", getenv("GOGC")))
	} else {
		logger.Debug("garbage collection tuned: a small heap gathers garbage up to roomMiB between collections (GOGC in the environment fixes the setting)",
			zap.Int("roomMiB", heapgoal.Room>>20))
	}
	return t
}
