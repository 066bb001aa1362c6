package console

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
)

func TestSessionActor(t *testing.T) {
	t.Parallel()
	op := &session{kind: sessionOIDC, name: "alice@example.com", role: RoleAdmin}
	require.Equal(t, hub.Actor{Kind: hub.ActorOperator, Name: "alice@example.com", Role: RoleAdmin, Via: "console"}, op.actor())
	require.Empty(t, op.tokenFP())
	tok := &session{kind: sessionToken, name: "token 1a2b3c4d", role: RoleReadOnly}
	require.Equal(t, hub.Actor{Kind: hub.ActorToken, Name: "token 1a2b3c4d", Role: RoleReadOnly, Via: "console"}, tok.actor())
	require.Equal(t, "1a2b3c4d", tok.tokenFP())
}
