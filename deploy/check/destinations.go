package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// destinationsFile is the part of a destinations file (docs/destinations.md)
// that the deployment checks read: which variables hold the secrets. The
// destinations binary validates the whole file (validate.sh runs it on the
// example files); this only ties the file to the manifests around it.
type destinationsFile struct {
	Destinations []struct {
		Name      string          `json:"name"`
		SecretEnv json.RawMessage `json:"secret_env"`
	} `json:"destinations"`
}

// secretEnvs returns, for each destination of a destinations file, the
// variables its secret_env names (a string or a list of strings).
func secretEnvs(data []byte) (map[string][]string, error) {
	var f destinationsFile
	if err := yaml.Unmarshal(data, &f); err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for i, d := range f.Destinations {
		name := cmp.Or(d.Name, fmt.Sprintf("#%d", i+1))
		var one string
		var list []string
		switch {
		case len(d.SecretEnv) == 0:
			return nil, fmt.Errorf("destination %s: no secret_env", name)
		case json.Unmarshal(d.SecretEnv, &one) == nil:
			list = []string{one}
		case json.Unmarshal(d.SecretEnv, &list) == nil:
		default:
			return nil, fmt.Errorf("destination %s: secret_env is neither a string nor a list of strings", name)
		}
		if len(list) == 0 || strings.Join(list, "") == "" {
			return nil, fmt.Errorf("destination %s: empty secret_env", name)
		}
		out[name] = list
	}
	return out, nil
}

// runDestEnv prints the variables the secret_env fields of a destinations
// file name, one per line (validate.sh sets them to a development secret
// before running the destinations binary on the file).
func runDestEnv(args []string) ([]string, error) {
	if len(args) != 1 {
		return nil, errors.New("need one destinations file")
	}
	b, err := os.ReadFile(args[0])
	if err != nil {
		return nil, err
	}
	envs, err := secretEnvs(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", args[0], err)
	}
	seen := map[string]bool{}
	for _, d := range slices.Sorted(maps.Keys(envs)) {
		for _, n := range envs[d] {
			if !seen[n] {
				seen[n] = true
				fmt.Println(n)
			}
		}
	}
	return nil, nil
}
