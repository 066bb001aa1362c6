package service_test

import (
	"testing"

	"github.com/hookhub/hookhub/internal/hubtest"
	"github.com/hookhub/hookhub/subscribers/service"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// The variables that configure the subscriber library: each default tag (a
// literal) must equal the library's constant.
func TestDefaultTagsMatchLibrary(t *testing.T) {
	hubtest.RequireDefaultTags(t, service.Common{}, map[string]any{
		"Stream":          subscriber.DefaultStream,
		"Concurrency":     subscriber.DefaultConcurrency,
		"MaxDeliver":      subscriber.DefaultMaxDeliver,
		"AckWait":         subscriber.DefaultAckWait,
		"MaxAckPending":   subscriber.DefaultMaxAckPending,
		"ShutdownTimeout": subscriber.DefaultShutdownTimeout,
	})
}
