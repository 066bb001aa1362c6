package service_test

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub/admin"
	"github.com/hookhub/hookhub/hub/backfill"
	"github.com/hookhub/hookhub/hub/relay"
	"github.com/hookhub/hookhub/hub/server"
	"github.com/hookhub/hookhub/hub/service"
	"github.com/hookhub/hookhub/internal/hubtest"
	"github.com/hookhub/hookhub/schema"
)

// The variables whose default a library holds too: the tag (a literal)
// must equal the library's constant.
func TestDefaultTagsMatchLibraries(t *testing.T) {
	hubtest.RequireDefaultTags(t, service.Config{}, map[string]any{
		"Stream":         schema.DefaultStream,
		"RelayBatchSize": relay.DefaultBatchSize,
		"MaxBodyBytes":   server.DefaultMaxBodyBytes,
		"MaxInflight":    server.DefaultMaxInflight,
		"CommitTimeout":  server.DefaultCommitTimeout,
		"AdminMaxConns":  admin.DefaultMaxConns,
		// The backfill's bounds.
		"BackfillMaxPages":   backfill.DefaultMaxPages,
		"BackfillMaxEvents":  backfill.DefaultMaxEvents,
		"BackfillMaxRunTime": backfill.DefaultMaxRunTime,
	})
	// The hub leaves the stream check's interval to the keeper's default,
	// which HUB_STREAM's description gives.
	f, _ := reflect.TypeFor[service.Config]().FieldByName("Stream")
	require.Contains(t, f.Tag.Get("desc"), fmt.Sprintf("checked every %g s", relay.DefaultKeeperInterval.Seconds()))
}
