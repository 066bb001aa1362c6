// Package hubhttp holds what the hub's two HTTP listeners share: the
// webhook listener (hub/server) and the admin listener (hub/admin).
//
//   - errors.go: the one table from an error's code (hub.ErrorCode) to an
//     HTTP status and message (ErrorStatus), the JSON error body, and the
//     middleware that turns a panic into a 500 (RecoverPanics);
//   - limits.go: the connection cap (LimitListener, with an optional
//     per-address share), the memory budget for request bodies (Budget,
//     ReadBody), the lingering close of a connection whose bytes are left
//     unread (CloseUnread, AnswerUnreadable), and RoutedPath, the path the
//     router matches before a body is read.
//
// Each listener's own bounds (which limits apply, how large) stay with the
// listener; see hub/server's and hub/admin's limits.go.
package hubhttp
