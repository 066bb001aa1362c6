package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

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
		Instances             int    `json:"instances"`
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
			Synchronous *struct {
				Method         string `json:"method"`
				Number         int    `json:"number"`
				DataDurability string `json:"dataDurability,omitempty"`
			} `json:"synchronous,omitempty"`
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

func checkCNPGCluster(p *problems, cl *cnpgCluster, production bool) {
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
	if pg := s.PostgreSQL; pg != nil && pg.Synchronous != nil {
		sy := pg.Synchronous
		oneOf("postgresql.synchronous.method", sy.Method, "any", "first")
		oneOf("postgresql.synchronous.dataDurability", sy.DataDurability, "required", "preferred")
		if sy.Number < 1 || sy.Number >= s.Instances {
			p.add(where, "postgresql.synchronous.number %d must be between 1 and instances-1 (%d)", sy.Number, s.Instances-1)
		}
	} else if production {
		p.add(where, "no synchronous replication: a failover could lose commits the hub already answered 2xx for")
	}
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
