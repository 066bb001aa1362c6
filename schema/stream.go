package schema

import "strings"

// DefaultStream is the JetStream stream the hub publishes to and the
// subscribers read, unless configured otherwise (HUB_STREAM, <PREFIX>_STREAM,
// subscriber.Config.Stream). envconfig default tags cannot name a constant:
// the tags of those variables repeat it as a literal, and a test checks each
// one equals DefaultStream.
const DefaultStream = "WEBHOOKS"

// ValidStreamName reports whether name can name a JetStream stream: not
// empty, without spaces, '.', '*', '>', '/' or '\'.
func ValidStreamName(name string) bool {
	return name != "" && !strings.ContainsAny(name, " \t\r\n.*>/\\")
}
