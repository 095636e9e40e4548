#!/usr/bin/env bash
# Builds the local control plane into bin/k8s: kube-apiserver, kube-controller-manager,
# kube-scheduler and kubectl from k8s.io/kubernetes, and etcd from go.etcd.io/etcd/server/v3,
# at the versions pinned in hack/tools/k8s/go.mod (regenerate it with hack/update-k8s-tools.sh).
#
# test/envtest and hack/localcluster run these binaries. A second run costs nothing: the build is
# skipped while bin/k8s/.stamp matches the pinned versions and every binary is present.
#
# Usage: hack/build-k8s.sh [--force]
#   BIN_DIR   output directory (default: <repo>/bin/k8s)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
moddir="${root}/hack/tools/k8s"
bindir="${BIN_DIR:-${root}/bin/k8s}"
force=false
[[ "${1:-}" == "--force" ]] && force=true

export GOTOOLCHAIN=local GOWORK=off CGO_ENABLED=0
export GOFLAGS="-trimpath -mod=readonly -buildvcs=false"

modversion() { go list -C "${moddir}" -m -f '{{if .Replace}}{{.Replace.Version}}{{else}}{{.Version}}{{end}}' "$1"; }
kube_version="$(modversion k8s.io/kubernetes)"
etcd_version="$(modversion go.etcd.io/etcd/server/v3)"
go_version="$(go env GOVERSION)"

# binary name => package (relative to the tools module)
# (etcd, kube-apiserver and kubectl first: that is all test/envtest needs)
binaries=(etcd kube-apiserver kubectl kube-controller-manager kube-scheduler)
declare -A pkg=(
	[kube-apiserver]=k8s.io/kubernetes/cmd/kube-apiserver
	[kube-controller-manager]=k8s.io/kubernetes/cmd/kube-controller-manager
	[kube-scheduler]=k8s.io/kubernetes/cmd/kube-scheduler
	[kubectl]=k8s.io/kubernetes/cmd/kubectl
	[etcd]=./etcd
)

# Version stamps the components report (kubectl version, /version); -s -w keeps them small.
ldflags="-s -w"
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
	minor="${kube_version#v1.}"; minor="${minor%%.*}"
	ldflags+=" -X ${p}.gitVersion=${kube_version} -X ${p}.gitMajor=1 -X ${p}.gitMinor=${minor}"
	ldflags+=" -X ${p}.gitTreeState=clean -X ${p}.buildDate=1970-01-01T00:00:00Z"
done

# The stamp names everything that changes the output: versions, toolchain, flags and the pinned
# module graph.
stamp_content="kubernetes=${kube_version} etcd=${etcd_version} go=${go_version} goflags=${GOFLAGS} ldflags=${ldflags} sums=$(
	cat "${moddir}/go.mod" "${moddir}/go.sum" "${moddir}/etcd/main.go" | sha256sum | cut -c1-16)"
stamp="${bindir}/.stamp"

up_to_date() {
	[[ -f "${stamp}" && "$(cat "${stamp}")" == "${stamp_content}" ]] || return 1
	local b
	for b in "${binaries[@]}"; do [[ -x "${bindir}/${b}" ]] || return 1; done
}

if ! ${force} && up_to_date; then
	echo "bin/k8s is up to date (kubernetes ${kube_version}, etcd ${etcd_version}); nothing to build"
	exit 0
fi

mkdir -p "${bindir}"
rm -f "${stamp}"
echo "building into ${bindir}: kubernetes ${kube_version} (kube-apiserver, kube-controller-manager, kube-scheduler, kubectl), etcd ${etcd_version}, ${go_version}"
total_start=${SECONDS}
for b in "${binaries[@]}"; do
	start=${SECONDS}
	flags="${ldflags}"
	[[ "${b}" == etcd ]] && flags="-s -w"
	go build -C "${moddir}" -ldflags="${flags}" -o "${bindir}/${b}" "${pkg[${b}]}"
	echo "  built ${b} in $((SECONDS - start))s ($(du -h "${bindir}/${b}" | cut -f1))"
done
echo "${stamp_content}" > "${stamp}"
echo "built bin/k8s in $((SECONDS - total_start))s"
