// Package crd tests the CRD schema against a real kube-apiserver: every sample
// is accepted and every invalid manifest is refused with the message a user
// can act on, exactly as `kubectl apply --dry-run=server` shows them.
package crd
