package console_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub/console"
)

func TestConfigValidateNamesTheField(t *testing.T) {
	_, err := console.New(console.Config{})
	require.EqualError(t, err, "console: AdminToken is required\nconsole: Operator is required\nconsole: Sessions is required\nconsole: ReadOnlyToken must differ from the admin token")
	c := console.Config{AdminToken: "a", ReadOnlyToken: "b"}.WithDefaults()
	require.NotNil(t, c.Logger)
	require.NotNil(t, c.Now)
	require.EqualError(t, c.Validate(), "console: Operator is required\nconsole: Sessions is required")
}
