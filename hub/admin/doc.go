// Package admin is the hub's operator HTTP: the admin API under /admin/
// (bearer token, HUB_ADMIN_TOKEN), the web console (hub/console) it
// mounts under /console/, /metrics, and the admin listener
// (HUB_ADMIN_ADDR) that serves them with /healthz, /readyz and
// /debug/pprof/.
//
//   - admin.go: the API's routes; each turns an HTTP request into a
//     hub/ops request through console.Operator (the one Operator
//     interface) and answers its error with the hub's one table by error
//     code (hubhttp.ErrorStatus): not found 404, invalid 400, busy 429,
//     unavailable 503, anything without a code 500 "internal error";
//   - server.go: Config, New, Mount (the routes on a given app: the admin
//     listener's, or the webhook listener's when HUB_ADMIN_ADDR is empty,
//     which then serves /admin/, /console/ and /metrics and no pprof),
//     Serve and Shutdown of the admin listener;
//   - limits.go: the admin listener's bounds (connections per listener
//     and per address, body limits chosen before a body is read, read
//     timeouts);
//   - audit.go, sessions.go: the audit trail (read only) and the
//     console's sessions (list, revoke: recorded by hub/ops);
//   - pprof.go: net/http/pprof, on the admin listener only.
//
// The API answers JSON: the operation's result, or {"error": "..."}; a
// request without the token is answered 401 with a Bearer challenge, its
// body unread.
package admin
