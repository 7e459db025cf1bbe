#!/usr/bin/env bash
# make demo: the real provisioner against the bundled fake API server on loopback, with
# PV_DIR under ./demo. Creates the example claim (examples/test-claim.yaml) with kubectl, shows it Bound and its
# directory, deletes it and shows the directory gone. Leaves logs in ./demo/.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$PWD/demo
rm -rf "$work" && mkdir -p "$work/pv"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
show() { printf '$ %s\n' "$*"; "$@"; }

step "starting the fake API server (HTTPS on loopback, RBAC from manifests/rbac.yaml)"
build/fake-apiserver --dir "$work/api" --rbac manifests/rbac.yaml >"$work/fake-apiserver.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do [ -f "$work/api/port" ] && break; sleep 0.1; done
[ -f "$work/api/port" ] || { cat "$work/fake-apiserver.log"; exit 1; }
export KUBECONFIG=$work/api/admin.kubeconfig
kubectl="kubectl --request-timeout=10s"
echo "API server at https://127.0.0.1:$(cat "$work/api/port"); kubectl uses $KUBECONFIG"
show $kubectl create --validate=false -f manifests/storageclass.yaml

step "starting the provisioner (PV_DIR=$work/pv, the service account's kubeconfig)"
metrics_port=$(( 20000 + RANDOM % 20000 ))
PV_DIR=$work/pv ./hostpath-provisioner --kubeconfig "$work/api/provisioner.kubeconfig" \
  --metrics-address "127.0.0.1:$metrics_port" >"$work/provisioner.log" 2>&1 &
pids+=($!)
sleep 0.3
cat "$work/provisioner.log"

step "creating the example claim"
start=$(date +%s%N)
show $kubectl create --validate=false -f examples/test-claim.yaml
for _ in $(seq 300); do
  phase=$($kubectl get pvc hostpath-test-claim -o jsonpath='{.status.phase}')
  [ "$phase" = Bound ] && break; sleep 0.05
done
echo "claim is $phase after $(( ($(date +%s%N) - start) / 1000000 )) ms (including kubectl's own start-up)"
show $kubectl get pvc hostpath-test-claim
pv=$($kubectl get pvc hostpath-test-claim -o jsonpath='{.spec.volumeName}')
show $kubectl get pv "$pv" -o jsonpath='{.spec.hostPath.path}{"  "}{.spec.persistentVolumeReclaimPolicy}{"  "}{.status.phase}{"\n"}'
show $kubectl get events --field-selector involvedObject.name=hostpath-test-claim -o custom-columns=TYPE:.type,REASON:.reason,MESSAGE:.message 2>/dev/null \
  || show $kubectl get events -o custom-columns=TYPE:.type,REASON:.reason,MESSAGE:.message
dir=$(ls -d "$work"/pv/default-hostpath-test-claim-*)
echo "a pod would write here:" && echo "hello from the demo" > "$dir/hello.txt"
show ls -la "$dir"

step "deleting the claim (reclaim policy Delete: the PV and the directory go)"
show $kubectl delete pvc hostpath-test-claim
for _ in $(seq 300); do
  $kubectl get pv "$pv" >/dev/null 2>&1 || break; sleep 0.05
done
show ls -la "$work/pv"
if [ -e "$dir" ]; then echo "directory still there: demo FAILED"; exit 1; fi
show $kubectl get pv

step "the provisioner's log and a few metrics"
cat "$work/provisioner.log"
curl -s "http://127.0.0.1:$metrics_port/metrics" | grep -E '^hostpath_provisioner_(provisions|deletions)_total' || true
echo; echo "demo OK (logs in $work/)"
