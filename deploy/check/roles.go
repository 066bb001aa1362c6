package main

import (
	"maps"
	"net/url"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Database roles (docs/production.md, "Database roles"): the hub's
// migrations run as the role that owns its tables (`hub migrate up
// --runtime-role ROLE`), and the hub and the subscribers connect as that
// runtime role, which owns nothing of the hub's schema, so it cannot alter,
// rewrite or drop the audit trail. The checks below find the migration (the
// one container running `migrate up`) and require every other hookhub
// container to connect as the runtime role it names, never as the owner.

// cnpgRole mirrors a CloudNativePG managed role (spec.managed.roles[]).
type cnpgRole struct {
	Name            string   `json:"name"`
	Ensure          string   `json:"ensure,omitempty"`
	Comment         string   `json:"comment,omitempty"`
	Login           bool     `json:"login,omitempty"`
	Superuser       bool     `json:"superuser,omitempty"`
	CreateDB        bool     `json:"createdb,omitempty"`
	CreateRole      bool     `json:"createrole,omitempty"`
	Inherit         *bool    `json:"inherit,omitempty"`
	Replication     bool     `json:"replication,omitempty"`
	BypassRLS       bool     `json:"bypassrls,omitempty"`
	ConnectionLimit *int     `json:"connectionLimit,omitempty"`
	InRoles         []string `json:"inRoles,omitempty"`
	PasswordSecret  *struct {
		Name string `json:"name"`
	} `json:"passwordSecret,omitempty"`
}

// migrateUp reports whether args run `hub migrate up`, and the runtime
// role its --runtime-role names ("" if none).
func migrateUp(args []string) (ok bool, runtimeRole string) {
	if len(args) < 2 || args[0] != "migrate" || !slices.Contains(args[1:], "up") {
		return false, ""
	}
	for i, a := range args {
		switch {
		case a == "--runtime-role" && i+1 < len(args):
			runtimeRole = args[i+1]
		case strings.HasPrefix(a, "--runtime-role="):
			runtimeRole = strings.TrimPrefix(a, "--runtime-role=")
		}
	}
	return true, runtimeRole
}

// databaseURLVars are the variables a hookhub binary reads its database from.
func isDatabaseURLVar(name string) bool { return strings.HasSuffix(name, "_DATABASE_URL") }

// urlUser is the user of a Postgres URL ("" when there is none).
func urlUser(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return ""
	}
	return u.User.Username()
}

// checkComposeRoles: the migrate service runs `hub migrate up
// --runtime-role ROLE` as one user; every other hookhub service connects
// as ROLE.
func checkComposeRoles(p *problems, f *composeFile) {
	owner, runtime, migrators := "", "", 0
	for name, s := range f.Services {
		if binaryOf(s.Image) != "hub" {
			continue
		}
		if ok, role := migrateUp(s.Command); ok {
			migrators++
			owner, runtime = urlUser(deref(s.Environment["HUB_DATABASE_URL"])), role
			if role == "" {
				p.add("service "+name, "runs `hub migrate up` without --runtime-role: the hub and the subscribers would connect as the tables' owner")
			}
		}
	}
	if migrators != 1 {
		p.add("compose", "want one service running `hub migrate up --runtime-role ROLE` (the owner), found %d", migrators)
		return
	}
	if runtime == "" {
		return
	}
	if owner == "" || owner == runtime {
		p.add("compose", "the migration's user %q must be the owner, distinct from the runtime role %q", owner, runtime)
	}
	for _, name := range slices.Sorted(maps.Keys(f.Services)) {
		s := f.Services[name]
		if binaryOf(s.Image) == "" {
			continue
		}
		if ok, _ := migrateUp(s.Command); ok {
			continue
		}
		for k, v := range s.Environment {
			if isDatabaseURLVar(k) {
				if u := urlUser(deref(v)); u != runtime {
					p.add("service "+name, "%s connects as %q, not the runtime role %q (owner %q applies the migrations only)", k, u, runtime, owner)
				}
			}
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// databaseRoles: the Job running `hub migrate up --runtime-role ROLE` reads
// its URL from the owner's Secret; every Deployment of a hookhub binary
// reads its database URL from one other Secret (the runtime role's); a
// CloudNativePG Cluster declares ROLE as a managed role (login, no
// privileges beyond it, not the database owner) whose password Secret is
// that one.
func (c *k8sChecker) databaseRoles() {
	ownerSecret, runtimeRole := "", ""
	for _, j := range c.m.jobs {
		for _, ctr := range j.Spec.Template.Spec.Containers {
			if binaryOf(ctr.Image) != "hub" {
				continue
			}
			ok, role := migrateUp(append(slices.Clone(ctr.Command), ctr.Args...))
			if !ok {
				continue
			}
			where := "Job " + j.Name
			if role == "" {
				c.p.add(where, "runs `hub migrate up` without --runtime-role: the hub and the subscribers would connect as the tables' owner")
			}
			ownerSecret, runtimeRole = secretOf(ctr, "HUB_DATABASE_URL"), role
		}
	}
	if ownerSecret == "" {
		c.p.add("manifests", "no Job runs `hub migrate up --runtime-role ROLE` with HUB_DATABASE_URL from the owner's Secret")
		return
	}
	runtimeSecrets := map[string]bool{}
	for _, d := range c.m.deployments {
		for _, ctr := range d.Spec.Template.Spec.Containers {
			if binaryOf(ctr.Image) == "" {
				continue
			}
			for _, e := range ctr.Env {
				if !isDatabaseURLVar(e.Name) {
					continue
				}
				s := secretOf(ctr, e.Name)
				switch {
				case s == "":
					c.p.add("Deployment "+d.Name, "%s is not read from a Secret (the runtime role's)", e.Name)
				case s == ownerSecret:
					c.p.add("Deployment "+d.Name, "%s comes from Secret %s, the owner's that runs the migrations: connect as the runtime role %q", e.Name, s, runtimeRole)
				default:
					runtimeSecrets[s] = true
				}
			}
		}
	}
	if len(runtimeSecrets) != 1 {
		c.p.add("manifests", "the hub and the subscribers should share one runtime role's Secret, found %d", len(runtimeSecrets))
	}
	if runtimeRole == "" {
		return
	}
	for _, cl := range c.m.clusters {
		c.clusterRoles(cl, runtimeRole, runtimeSecrets)
	}
}

// clusterRoles checks that cl declares the runtime role.
func (c *k8sChecker) clusterRoles(cl *cnpgCluster, runtimeRole string, secrets map[string]bool) {
	where := "Cluster " + cl.Metadata.Name
	if b := cl.Spec.Bootstrap; b != nil && b.InitDB != nil && b.InitDB.Owner == runtimeRole {
		c.p.add(where, "the runtime role %q owns the database: it must be a role of its own", runtimeRole)
	}
	var roles []cnpgRole
	if cl.Spec.Managed != nil {
		roles = cl.Spec.Managed.Roles
	}
	i := slices.IndexFunc(roles, func(r cnpgRole) bool { return r.Name == runtimeRole })
	if i < 0 {
		c.p.add(where, "spec.managed.roles does not declare the runtime role %q", runtimeRole)
		return
	}
	r := roles[i]
	if !r.Login || r.Superuser || r.CreateDB || r.CreateRole || r.Replication || r.BypassRLS || (r.Ensure != "" && r.Ensure != "present") {
		c.p.add(where, "managed role %q: want login and no other privilege (superuser, createdb, createrole, replication, bypassrls)", r.Name)
	}
	if r.PasswordSecret == nil || !secrets[r.PasswordSecret.Name] {
		c.p.add(where, "managed role %q: its passwordSecret must be the Secret the Deployments read their database URL from", r.Name)
	}
}

// secretOf is the Secret a container's variable name is read from ("" if
// not from a Secret).
func secretOf(ctr corev1.Container, name string) string {
	for _, e := range ctr.Env {
		if e.Name == name && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			return e.ValueFrom.SecretKeyRef.Name
		}
	}
	return ""
}
