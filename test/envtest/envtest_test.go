package envtest_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/schedlab/schedlab/test/envtest"
)

// TestStart runs the real kube-apiserver and etcd from bin/k8s. It fails (does not skip) when
// they are missing: CI builds them first with `make k8s-bins`. It installs no CRDs: the
// project's CRDs are the API's tests' business, and this test checks the helper alone.
func TestStart(t *testing.T) {
	cfg, c, stop := envtest.Start(t, envtest.Options{CRDDirectoryPaths: []string{}})
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "envtest-start"}}
	if err := c.Create(ctx, ns); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	renew := metav1.NewMicroTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "lock"},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To("envtest"),
			LeaseDurationSeconds: ptr.To[int32](40),
			RenewTime:            &renew,
		},
	}
	if err := c.Create(ctx, lease); err != nil {
		t.Fatalf("create lease: %v", err)
	}

	var gotNS corev1.Namespace
	if err := c.Get(ctx, client.ObjectKeyFromObject(ns), &gotNS); err != nil {
		t.Fatalf("get namespace: %v", err)
	}
	if gotNS.UID == "" || gotNS.Status.Phase != corev1.NamespaceActive {
		t.Errorf("namespace = uid %q phase %q, want a uid and phase Active", gotNS.UID, gotNS.Status.Phase)
	}
	var gotLease coordinationv1.Lease
	if err := c.Get(ctx, client.ObjectKeyFromObject(lease), &gotLease); err != nil {
		t.Fatalf("get lease: %v", err)
	}
	if diff := cmp.Diff(lease.Spec, gotLease.Spec); diff != "" {
		t.Errorf("lease spec read back (-created +read):\n%s", diff)
	}

	// The rest.Config works for client-go too, and the server is the real kube-apiserver.
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	v, err := cs.Discovery().ServerVersion()
	if err != nil {
		t.Fatalf("server version: %v", err)
	}
	if !strings.HasPrefix(v.GitVersion, "v1.") {
		t.Errorf("server version = %q, want v1.x", v.GitVersion)
	}
	t.Logf("kube-apiserver %s", v.GitVersion)
}

// TestMissingBinaries checks that a missing control plane fails with the command that fixes it.
func TestMissingBinaries(t *testing.T) {
	_, err := envtest.StartEnv(envtest.Options{BinaryAssetsDirectory: t.TempDir()})
	if err == nil {
		t.Fatal("StartEnv with an empty binary directory succeeded, want an error")
	}
	if !strings.Contains(err.Error(), "make k8s-bins") {
		t.Errorf("error = %q, want it to name `make k8s-bins`", err)
	}
}
