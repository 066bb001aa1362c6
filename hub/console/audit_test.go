package console_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub/console"
)

// The console and the admin API reach the operator's tools through
// console.Operator: its audit methods read (ListAudit, and
// AuditExportPage: ListAudit admitted as an expensive read). The trail is
// written by the actions themselves (hub/ops), never by a caller of this
// interface, but for Refuse: the console's own refusals of a signed-in
// operator, recorded as refused (it cannot record an action as done).
func TestOperatorCannotWriteTheAuditTrail(t *testing.T) {
	typ := reflect.TypeFor[console.Operator]()
	var audit []string
	for i := range typ.NumMethod() {
		if name := typ.Method(i).Name; strings.Contains(strings.ToLower(name), "audit") || strings.Contains(strings.ToLower(name), "refuse") {
			audit = append(audit, name)
		}
	}
	require.Equal(t, []string{"AuditExportPage", "ListAudit", "Refuse"}, audit)
}
