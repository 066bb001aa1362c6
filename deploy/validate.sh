#!/usr/bin/env bash
# Validates hookhub's deployment files offline (CI calls it from .ci/run):
#
#   docker-compose.yml           docker-compose config (schema) + deploy/check compose
#   destinations files           deploy/compose/destinations.yaml and the
#                                ConfigMap's deploy/k8s/base/destinations-file.yaml,
#                                validated by the destinations binary itself
#   deploy/compose/nats.conf     nats-server -t (the nats-server version hookhub's go.mod pins)
#   deploy/compose/haproxy.cfg   haproxy -c (Debian's haproxy binary; skipped if it cannot run)
#   deploy/docker/Dockerfile     its go build package paths and targets exist
#   deploy/k8s                   kustomize build (base, production) + deploy/check k8s:
#                                strict schema decoding with the k8s.io/api types,
#                                CloudNativePG Cluster fields, NATS Helm values and
#                                hookhub's own rules (probes, grace periods, env names,
#                                the NetworkPolicy of the hub's admin port, distinct
#                                owner and runtime database roles, a synchronous
#                                standby in the Postgres Cluster)
#   deploy/prometheus            promtool check config/rules + promtool test rules
#   deploy/grafana               deploy/check promql (structure, metric names) and
#                                promtool check rules on every dashboard query
#
# Variable names in manifests are checked against what the binaries print
# with --help, so the binaries are built first. Needs Go and, when missing,
# installs docker-compose (apt-get) and fetches promtool from Debian's
# prometheus package (apt-get download; nothing is installed or started).
# Run from anywhere: bash deploy/validate.sh
set -euo pipefail

cd "$(dirname "$0")/.."
root=$(pwd)

KUSTOMIZE=sigs.k8s.io/kustomize/kustomize/v5@v5.8.2 # v5.8.3 needs Go 1.27
cache=${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/hookhub-deploy
mkdir -p "$cache"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

start=$SECONDS
step() { echo "--- $* ($((SECONDS - start))s)"; }
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
# expect_fail DESCRIPTION CMD...: the command must fail (the check bites).
expect_fail() {
  local what=$1
  shift
  if "$@" >"$tmp/expect_fail.out" 2>&1; then
    cat "$tmp/expect_fail.out" >&2
    fail "self-test: the check accepted $what"
  fi
}

apt_updated=
apt_update() {
  if [ -z "$apt_updated" ]; then
    apt-get update -qq >/dev/null
    apt_updated=1
  fi
}

# --- tools -------------------------------------------------------------------
step "tools"
if ! command -v docker-compose >/dev/null; then
  echo "installing docker-compose (Debian package)"
  apt_update
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker-compose >/dev/null
fi

# promtool from Debian's prometheus package, extracted: installing the package
# would also set up (and possibly start) a Prometheus server.
promtool=$cache/promtool
if ! "$promtool" --version >/dev/null 2>&1; then
  echo "fetching promtool (Debian package prometheus)"
  (
    cd "$tmp"
    apt-get download -qq prometheus >/dev/null 2>&1 || { apt_update && apt-get download -qq prometheus >/dev/null; }
    dpkg-deb -x prometheus_*.deb pkg
    install -m 0755 pkg/usr/bin/promtool "$promtool"
  )
fi
"$promtool" --version | head -1

# haproxy from Debian's package, extracted, with its shared libraries
# (libraries only; the service is not installed). Best effort: the config is
# also exercised by the compose health checks.
haproxy=$cache/haproxy
if ! "$haproxy" -v >/dev/null 2>&1; then
  (
    cd "$tmp"
    apt-get download -qq haproxy >/dev/null 2>&1 || { apt_update && apt-get download -qq haproxy >/dev/null; }
    dpkg-deb -x haproxy_*.deb hpkg
    install -m 0755 hpkg/usr/sbin/haproxy "$haproxy"
    libs=$(ldd "$haproxy" | awk '/not found/ {print $1}')
    if [ -n "$libs" ]; then
      pkgs=$(dpkg-deb -f haproxy_*.deb Depends | tr ',' '\n' | sed -E 's/^ *([^ |]+).*/\1/' | grep '^lib' || true)
      apt_update
      # shellcheck disable=SC2086
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $pkgs >/dev/null
    fi
  ) || echo "could not set up haproxy; its check will be skipped"
fi

# --- the binaries' variables -------------------------------------------------
step "build the binaries (package paths from deploy/docker/Dockerfile) and nats-server"
mapfile -t pkgs < <(grep -oE '\./(hub|subscribers)/[a-z/]*cmd/[a-z]+' deploy/docker/Dockerfile | sort -u)
[ "${#pkgs[@]}" -eq 5 ] || fail "deploy/docker/Dockerfile: expected 5 go build packages, found: ${pkgs[*]}"
for target in hub credits email downgrade destinations; do
  grep -qE "^FROM runtime AS $target\$" deploy/docker/Dockerfile || fail "Dockerfile: no target $target"
  grep -qE "target: $target\$" docker-compose.yml || fail "docker-compose.yml builds no target $target"
done
# As the Dockerfile builds them (static, no cgo).
CGO_ENABLED=0 go build -o "$tmp/bin/" "${pkgs[@]}" github.com/nats-io/nats-server/v2
mkdir -p "$tmp/env"
for b in hub:HUB credits:CREDITS email:EMAIL downgrade:DOWNGRADE destinations:DESTINATIONS; do
  bin=${b%%:*} prefix=${b##*:}
  "$tmp/bin/$bin" --help 2>&1 | grep -oE "^ +${prefix}_[A-Z0-9_]+" | tr -d ' ' | sort -u >"$tmp/env/$bin.env" || true
  [ -s "$tmp/env/$bin.env" ] || fail "$bin --help lists no ${prefix}_ variables"
done
# Metric names the code registers (for the dashboard and alert checks): every
# string literal of that shape outside tests (metric names are constants or
# literals in the code, never assembled).
grep -rhoE '"(hub|hookhub)_[a-z0-9_]+"' hub subscribers --include='*.go' --exclude='*_test.go' | tr -d '"' | sort -u >"$tmp/metrics"
for m in hookhub_destination_attempts_total hookhub_destination_attempt_duration_seconds hookhub_destination_backlog \
  hookhub_destination_circuit_open hookhub_destination_state; do
  grep -qx "$m" "$tmp/metrics" || fail "metric $m not found in the code: how are metric names written now? (adapt the grep)"
done

# The checker is its own module (deploy/check); build it once.
(cd deploy/check && go vet ./... && go build -o "$tmp/bin/check" .)
check=$tmp/bin/check

# --- docker compose ----------------------------------------------------------
step "docker-compose config"
docker-compose -f docker-compose.yml config -q
docker-compose -f docker-compose.yml --profile observability config -q
docker-compose -f docker-compose.yml config >"$tmp/compose.yaml"
"$check" compose -env-dir "$tmp/env" "$tmp/compose.yaml"
sed 's/HUB_STREAM_REPLICAS:/HUB_STREAM_REPLICA:/' "$tmp/compose.yaml" >"$tmp/compose-bad.yaml"
expect_fail "a misspelt hub variable in compose" "$check" compose -env-dir "$tmp/env" "$tmp/compose-bad.yaml"
sed 's#hookhub_runtime:[^@]*@postgres#postgres:x@postgres#' "$tmp/compose.yaml" >"$tmp/compose-bad.yaml"
expect_fail "services connecting as the owner that runs the migrations" "$check" compose -env-dir "$tmp/env" "$tmp/compose-bad.yaml"

# The destinations binary validates each example file as it does at start
# (every field, the secrets' format), then waits for Postgres, which is not
# there: exit 2 is a refused file; a timeout means the file was accepted.
dest_file_ok() {
  local file=$1 vars=() rc=0
  while read -r v; do vars+=("$v=whsec_aG9va2h1Yi1kZXN0aW5hdGlvbnMtZGV2LW9ubHkta2V5IQ=="); done < <("$check" dest-env "$file")
  env -i PATH="$PATH" "${vars[@]}" DESTINATIONS_FILE="$file" DESTINATIONS_LOG_LEVEL=error \
    DESTINATIONS_DATABASE_URL=postgres://postgres@127.0.0.1:1/hub DESTINATIONS_NATS_URL=nats://127.0.0.1:1 \
    timeout 3 "$tmp/bin/destinations" >"$tmp/dest.out" 2>&1 || rc=$?
  if [ "$rc" -ne 124 ]; then
    cat "$tmp/dest.out" >&2
    return 1
  fi
}
step "destinations files (the destinations binary)"
for f in deploy/compose/destinations.yaml deploy/k8s/base/destinations-file.yaml; do
  dest_file_ok "$f" || fail "$f: refused by the destinations binary"
  echo "$f: ok"
done
sed 's/url: http:/url: ftp:/' deploy/compose/destinations.yaml >"$tmp/bad-destinations.yaml"
if dest_file_ok "$tmp/bad-destinations.yaml" 2>/dev/null; then fail "self-test: the destinations binary accepted an ftp URL"; fi
sed 's/ECHO_RECEIVER_SECRET: .*//' "$tmp/compose.yaml" >"$tmp/compose-bad.yaml"
expect_fail "a destination whose secret variable is not set in compose" "$check" compose -env-dir "$tmp/env" "$tmp/compose-bad.yaml"

step "nats-server -t deploy/compose/nats.conf"
for n in 1 2 3; do
  NATS_SERVER_NAME=nats-$n "$tmp/bin/nats-server" -t -c deploy/compose/nats.conf
done

step "haproxy -c deploy/compose/haproxy.cfg"
if "$haproxy" -v >/dev/null 2>&1; then
  # Warnings about hub-1/hub-2 not resolving here are expected: they resolve
  # at run time through the compose network's DNS.
  "$haproxy" -c -f deploy/compose/haproxy.cfg 2>&1 | grep -v -e 'could not resolve address' -e '^\[NOTICE\]' || true
  "$haproxy" -c -q -f deploy/compose/haproxy.cfg
else
  echo "SKIP: haproxy is not runnable on this machine"
fi

# --- Kubernetes --------------------------------------------------------------
step "kustomize build (base, production)"
go run "$KUSTOMIZE" build deploy/k8s/base >"$tmp/base.yaml"
go run "$KUSTOMIZE" build deploy/k8s/overlays/production >"$tmp/production.yaml"
echo "base: $(grep -c '^kind:' "$tmp/base.yaml") objects, production: $(grep -c '^kind:' "$tmp/production.yaml") objects"

step "schema and rules check of the manifests (deploy/check k8s)"
extra=deploy/postgres/cluster.yaml,deploy/k8s/base/secret.template.yaml
"$check" k8s -env-dir "$tmp/env" -nats-values deploy/nats/values.yaml -extra "$extra" "$tmp/base.yaml"
"$check" k8s -production -env-dir "$tmp/env" -nats-values deploy/nats/values.yaml -extra "$extra" "$tmp/production.yaml"
sed 's/terminationGracePeriodSeconds: 40/terminationGracePeriodSeconds: 30/' "$tmp/production.yaml" >"$tmp/bad.yaml"
expect_fail "a grace period shorter than preStop + HUB_SHUTDOWN_TIMEOUT" \
  "$check" k8s -production -env-dir "$tmp/env" -nats-values deploy/nats/values.yaml -extra "$extra" "$tmp/bad.yaml"
sed 's/HUB_STREAM_REPLICAS: "3"/HUB_STREAM_REPLICAS: "1"/' "$tmp/production.yaml" >"$tmp/bad.yaml"
expect_fail "an R1 stream in production" \
  "$check" k8s -production -env-dir "$tmp/env" -nats-values deploy/nats/values.yaml -extra "$extra" "$tmp/bad.yaml"
sed 's/port: admin$/port: http/' "$tmp/production.yaml" >"$tmp/bad.yaml"
expect_fail "the hub probed on its webhook port" \
  "$check" k8s -production -env-dir "$tmp/env" -nats-values deploy/nats/values.yaml -extra "$extra" "$tmp/bad.yaml"
sed 's/name: hookhub-pg-runtime/name: hookhub-pg-app/' "$tmp/production.yaml" >"$tmp/bad.yaml"
expect_fail "Deployments connecting as the owner that runs the migrations" \
  "$check" k8s -production -env-dir "$tmp/env" -nats-values deploy/nats/values.yaml -extra "$extra" "$tmp/bad.yaml"
grep -v -e '- --runtime-role' -e '- hookhub_runtime$' "$tmp/production.yaml" >"$tmp/bad.yaml"
expect_fail "a migration Job without --runtime-role" \
  "$check" k8s -production -env-dir "$tmp/env" -nats-values deploy/nats/values.yaml -extra "$extra" "$tmp/bad.yaml"
grep -v 'HUB_ADMIN_ADDR' "$tmp/production.yaml" >"$tmp/bad.yaml"
expect_fail "a hub without HUB_ADMIN_ADDR" \
  "$check" k8s -production -env-dir "$tmp/env" -nats-values deploy/nats/values.yaml -extra "$extra" "$tmp/bad.yaml"
awk 'BEGIN { RS = "---\n"; ORS = "---\n" } !/\nkind: NetworkPolicy\n/' "$tmp/production.yaml" >"$tmp/bad.yaml"
expect_fail "a hub without a NetworkPolicy (its admin port open to every pod)" \
  "$check" k8s -production -env-dir "$tmp/env" -nats-values deploy/nats/values.yaml -extra "$extra" "$tmp/bad.yaml"
sed 's/^  ingress:$/  ingress:\n  - ports:\n    - port: admin/' "$tmp/production.yaml" >"$tmp/bad.yaml"
expect_fail "a NetworkPolicy that admits everyone to the admin port" \
  "$check" k8s -production -env-dir "$tmp/env" -nats-values deploy/nats/values.yaml -extra "$extra" "$tmp/bad.yaml"
sed 's/readOnlyRootFilesystem:/readOnlyRootFilesytem:/' "$tmp/production.yaml" >"$tmp/bad.yaml"
expect_fail "an unknown field" \
  "$check" k8s -production -env-dir "$tmp/env" -nats-values deploy/nats/values.yaml -extra "$extra" "$tmp/bad.yaml"
sed 's/name: hookhub-destination-secrets$/name: hookhub-provider-secrets/' "$tmp/production.yaml" >"$tmp/bad.yaml"
expect_fail "a destination whose secret_env is not a variable of the pod" \
  "$check" k8s -production -env-dir "$tmp/env" -nats-values deploy/nats/values.yaml -extra "$extra" "$tmp/bad.yaml"
sed 's|DESTINATIONS_FILE: /etc/hookhub/|DESTINATIONS_FILE: /etc/other/|' "$tmp/production.yaml" >"$tmp/bad.yaml"
expect_fail "DESTINATIONS_FILE outside the mounted ConfigMap" \
  "$check" k8s -production -env-dir "$tmp/env" -nats-values deploy/nats/values.yaml -extra "$extra" "$tmp/bad.yaml"
sed 's/port: 53$/port: 54/' "$tmp/production.yaml" >"$tmp/bad.yaml"
expect_fail "an egress NetworkPolicy without DNS" \
  "$check" k8s -production -env-dir "$tmp/env" -nats-values deploy/nats/values.yaml -extra "$extra" "$tmp/bad.yaml"
awk 'BEGIN { RS = "---\n"; ORS = "---\n" } !(/\nkind: NetworkPolicy\n/ && /\n  name: destinations\n/)' "$tmp/production.yaml" >"$tmp/bad.yaml"
expect_fail "destinations without an egress NetworkPolicy" \
  "$check" k8s -production -env-dir "$tmp/env" -nats-values deploy/nats/values.yaml -extra "$extra" "$tmp/bad.yaml"

# The Cluster must require a synchronous standby (deploy/check cnpg.go): each
# edited copy is refused, with the message that names the setting.
bad_cluster() { # DESCRIPTION MESSAGE COMMAND...: the command edits cluster.yaml
  local what=$1 msg=$2
  shift 2
  "$@" deploy/postgres/cluster.yaml >"$tmp/bad-cluster.yaml"
  if cmp -s deploy/postgres/cluster.yaml "$tmp/bad-cluster.yaml"; then fail "self-test ($what): the edit changed nothing"; fi
  expect_fail "$what" "$check" k8s -production -env-dir "$tmp/env" -nats-values deploy/nats/values.yaml \
    -extra "$tmp/bad-cluster.yaml,deploy/k8s/base/secret.template.yaml" "$tmp/production.yaml"
  grep -qF -- "$msg" "$tmp/expect_fail.out" || {
    cat "$tmp/expect_fail.out" >&2
    fail "self-test ($what): refused, but not with \"$msg\""
  }
}
bad_cluster "a Cluster without synchronous replication" "no postgresql.synchronous" \
  grep -v -e '^    synchronous:$' -e '^      method: any$' -e '^      number: 1$' -e '^      dataDurability: required$'
bad_cluster "no synchronous standby (number 0)" "synchronous.number 0" sed 's/^      number: 1$/      number: 0/'
bad_cluster "dataDurability preferred" "dataDurability preferred" \
  sed 's/^      dataDurability: required$/      dataDurability: preferred/'
bad_cluster "a single instance" "instances 1" sed 's/^  instances: [0-9]*$/  instances: 1/'
for sc in local off; do
  bad_cluster "synchronous_commit $sc" "synchronous_commit \"$sc\"" \
    sed "s/^    parameters:\$/    parameters:\\n      synchronous_commit: \"$sc\"/"
done
bad_cluster "the deprecated, self-healing minSyncReplicas/maxSyncReplicas" "minSyncReplicas/maxSyncReplicas are deprecated" \
  sed -e '/^    synchronous:$/,/^      dataDurability: required$/d' \
  -e 's/^  instances: \([0-9]*\)$/  instances: \1\n  minSyncReplicas: 1\n  maxSyncReplicas: 1/'

# --- Prometheus and Grafana ---------------------------------------------------
step "promtool (config, rules, rule unit tests) and the dashboard"
"$promtool" check config deploy/prometheus/prometheus.yml
"$promtool" test rules deploy/prometheus/alerts_test.yml
"$check" promql -known "$tmp/metrics" -rules-out "$tmp/dashboard-rules.yml" deploy/grafana/hookhub.json deploy/prometheus/alerts.yml
"$promtool" check rules "$tmp/dashboard-rules.yml"
"$check" yaml deploy/grafana/provisioning/*/*.yml

echo "--- deploy/validate.sh: ok ($((SECONDS - start))s)"
