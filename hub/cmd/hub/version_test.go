package main

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// hub version prints one line, "hub <version> (<commit, >go...)", and with
// --json the same as one object.
func TestVersion(t *testing.T) {
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run(context.Background(), []string{"version"}, &stdout, &stderr), stderr.String())
	require.Regexp(t, regexp.MustCompile(`^hub (dev|v\S+) \((commit [0-9a-f]{1,7}(-dirty)?, )?go\S+\)\n$`), stdout.String())

	stdout.Reset()
	require.Equal(t, 0, run(context.Background(), []string{"version", "--json"}, &stdout, &stderr), stderr.String())
	var v map[string]any
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &v))
	require.NotEmpty(t, v["version"])
	require.NotEmpty(t, v["go"])

	stdout.Reset()
	require.Equal(t, 2, run(context.Background(), []string{"version", "extra"}, &stdout, &stderr))
	require.Empty(t, stdout.String())
}
