package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// cnpgCluster mirrors the part of CloudNativePG's Cluster (postgresql.cnpg.io/v1)
// that deploy/postgres/cluster.yaml uses, after the operator's API reference
// (the operator's Go module is not available offline). Decoding is strict, so
// a misspelt or misplaced field is reported; a field this mirror lacks must
// be added here after checking the reference.
type cnpgCluster struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
	Spec       struct {
		Instances int `json:"instances"`
		// The deprecated quorum settings (before .postgresql.synchronous),
		// mirrored so that using them gets a clear message.
		MinSyncReplicas       *int   `json:"minSyncReplicas,omitempty"`
		MaxSyncReplicas       *int   `json:"maxSyncReplicas,omitempty"`
		ImageName             string `json:"imageName,omitempty"`
		PrimaryUpdateStrategy string `json:"primaryUpdateStrategy,omitempty"`
		PrimaryUpdateMethod   string `json:"primaryUpdateMethod,omitempty"`
		EnableSuperuserAccess *bool  `json:"enableSuperuserAccess,omitempty"`
		Bootstrap             *struct {
			InitDB *struct {
				Database      string `json:"database"`
				Owner         string `json:"owner"`
				DataChecksums *bool  `json:"dataChecksums,omitempty"`
				Encoding      string `json:"encoding,omitempty"`
				Secret        *struct {
					Name string `json:"name"`
				} `json:"secret,omitempty"`
			} `json:"initdb,omitempty"`
		} `json:"bootstrap,omitempty"`
		PostgreSQL *struct {
			Parameters  map[string]string `json:"parameters,omitempty"`
			Synchronous *cnpgSynchronous  `json:"synchronous,omitempty"`
		} `json:"postgresql,omitempty"`
		// Managed roles: the runtime role the hub and the subscribers
		// connect as (roles.go).
		Managed *struct {
			Roles []cnpgRole `json:"roles,omitempty"`
		} `json:"managed,omitempty"`
		Storage    cnpgStorage                  `json:"storage"`
		WalStorage *cnpgStorage                 `json:"walStorage,omitempty"`
		Resources  *corev1.ResourceRequirements `json:"resources,omitempty"`
		Affinity   *struct {
			EnablePodAntiAffinity *bool  `json:"enablePodAntiAffinity,omitempty"`
			TopologyKey           string `json:"topologyKey,omitempty"`
			PodAntiAffinityType   string `json:"podAntiAffinityType,omitempty"`
		} `json:"affinity,omitempty"`
	} `json:"spec"`
}

// cnpgSynchronous is .spec.postgresql.synchronous (CloudNativePG >= 1.24;
// dataDurability >= 1.25, "required" when unset).
type cnpgSynchronous struct {
	Method         string `json:"method"`
	Number         int    `json:"number"`
	DataDurability string `json:"dataDurability,omitempty"`
}

type cnpgStorage struct {
	Size         string  `json:"size"`
	StorageClass *string `json:"storageClass,omitempty"`
}

func decodeCNPGCluster(js []byte) (*cnpgCluster, error) {
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	var cl cnpgCluster
	if err := dec.Decode(&cl); err != nil {
		return nil, err
	}
	return &cl, nil
}

func checkCNPGCluster(p *problems, cl *cnpgCluster) {
	where := "Cluster " + cl.Metadata.Name
	s := &cl.Spec
	p.check(where, rule{s.Instances < 2, fmt.Sprintf("instances %d: want a primary and at least one standby", s.Instances)})
	oneOf := func(field, v string, allowed ...string) {
		if v != "" && !slices.Contains(allowed, v) {
			p.add(where, "%s %q: one of %v", field, v, allowed)
		}
	}
	oneOf("primaryUpdateStrategy", s.PrimaryUpdateStrategy, "unsupervised", "supervised")
	oneOf("primaryUpdateMethod", s.PrimaryUpdateMethod, "switchover", "restart")
	if s.Bootstrap == nil || s.Bootstrap.InitDB == nil || s.Bootstrap.InitDB.Database == "" || s.Bootstrap.InitDB.Owner == "" {
		p.add(where, "bootstrap.initdb needs database and owner (the app secret's user owns the database)")
	}
	checkCNPGDurability(p, where, cl)
	for name, st := range map[string]*cnpgStorage{"storage": &s.Storage, "walStorage": s.WalStorage} {
		if st == nil {
			continue
		}
		if _, err := resource.ParseQuantity(st.Size); err != nil {
			p.add(where, "%s.size %q: %v", name, st.Size, err)
		}
	}
	if a := s.Affinity; a != nil {
		oneOf("affinity.podAntiAffinityType", a.PodAntiAffinityType, "preferred", "required")
	}
	if cl.APIVersion != "postgresql.cnpg.io/v1" || cl.Kind != "Cluster" {
		p.add(where, "unexpected %s %s", cl.APIVersion, cl.Kind)
	}
}

// checkCNPGDurability holds the Cluster to the hub's promise: no 2xx without
// a durable commit, and a failover must not lose one. A commit is durable
// only once a standby has it, so the Cluster must require a synchronous
// standby (.spec.postgresql.synchronous, CloudNativePG >= 1.24, with
// dataDurability "required", the default) and no parameter may let a commit
// return before that (synchronous_commit off or local).
func checkCNPGDurability(p *problems, where string, cl *cnpgCluster) {
	s := &cl.Spec
	if s.MinSyncReplicas != nil || s.MaxSyncReplicas != nil {
		p.add(where, "minSyncReplicas/maxSyncReplicas are deprecated and self-healing (the operator drops to asynchronous "+
			"replication when no standby is ready): use postgresql.synchronous with dataDurability required")
	}
	var sy *cnpgSynchronous
	var params map[string]string
	if pg := s.PostgreSQL; pg != nil {
		sy, params = pg.Synchronous, pg.Parameters
	}
	if sy == nil {
		p.add(where, "no postgresql.synchronous: replication is asynchronous and a failover can lose commits the hub already answered 2xx for")
		return
	}
	if !slices.Contains([]string{"any", "first"}, sy.Method) {
		p.add(where, "postgresql.synchronous.method %q: one of [any first]", sy.Method)
	}
	if sy.Number < 1 || sy.Number >= s.Instances {
		p.add(where, "postgresql.synchronous.number %d must be between 1 and instances-1 (%d): a commit must wait for a standby", sy.Number, s.Instances-1)
	}
	switch sy.DataDurability {
	case "", "required":
	case "preferred":
		p.add(where, "postgresql.synchronous.dataDurability preferred: commits stop waiting for a standby when none is ready, "+
			"and a failover then loses commits the hub answered 2xx for; want required")
	default:
		p.add(where, "postgresql.synchronous.dataDurability %q: want required", sy.DataDurability)
	}
	for k, v := range params {
		if strings.EqualFold(k, "synchronous_commit") && !slices.Contains([]string{"on", "remote_write", "remote_apply"}, strings.ToLower(v)) {
			p.add(where, "postgresql.parameters.synchronous_commit %q: a commit would return before a standby has it; want on (or remove it)", v)
		}
	}
}
