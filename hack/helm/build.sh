#!/usr/bin/env bash
# Builds the helm pinned in hack/helm/go.mod into $1 (default bin/helm at the repository root),
# with the version stamps helm's own Makefile sets: its version, and the Kubernetes version of
# its client libraries, which `helm lint` and `helm template` assume when no cluster is asked.
# Go's build cache makes a second run cost a second or two.
set -euo pipefail
cd "$(dirname "$0")"
out=${1:-../../bin/helm}
helm_version=$(go list -m -f '{{.Version}}' helm.sh/helm/v3)
k8s_version=$(go list -m -f '{{.Version}}' k8s.io/client-go) # v0.MINOR.PATCH
k8s_minor=$(cut -d. -f2 <<<"$k8s_version")
go build -trimpath -o "$out" -ldflags "-s -w \
  -X helm.sh/helm/v3/internal/version.version=${helm_version} \
  -X helm.sh/helm/v3/internal/version.gitTreeState=clean \
  -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1 \
  -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=${k8s_minor} \
  -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 \
  -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=${k8s_minor}" \
  helm.sh/helm/v3/cmd/helm
