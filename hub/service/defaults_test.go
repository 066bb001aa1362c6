package service_test

import (
	"testing"

	"github.com/hookhub/hookhub/hub/hubtest"
	"github.com/hookhub/hookhub/hub/service"
	"github.com/hookhub/hookhub/schema"
)

// The variables whose default a library holds too: the tag (a literal)
// must equal the library's constant.
func TestDefaultTagsMatchLibraries(t *testing.T) {
	hubtest.RequireDefaultTags(t, service.Config{}, map[string]any{
		"Stream": schema.DefaultStream,
	})
}
