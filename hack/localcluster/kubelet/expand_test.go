package kubelet

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestExpand(t *testing.T) {
	vars := map[string]string{"A": "1", "NS": "demo"}
	for _, tc := range []struct{ in, want string }{
		{"plain", "plain"},
		{"$(A)", "1"},
		{"x$(A)y$(NS)", "x1ydemo"},
		{"$$(A)", "$(A)"},
		{"$(MISSING)", "$(MISSING)"},
		{"$(A", "$(A"},
		{"cost $5", "cost $5"},
		{"end$", "end$"},
	} {
		if got := expand(tc.in, vars); got != tc.want {
			t.Errorf("expand(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestFieldValue(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1",
			Labels: map[string]string{"app": "x"}, Annotations: map[string]string{"a/b": "c"}},
		Spec: corev1.PodSpec{NodeName: "n1", ServiceAccountName: "sa"},
	}
	for path, want := range map[string]string{
		"metadata.name": "p", "metadata.namespace": "ns", "metadata.uid": "u1",
		"spec.nodeName": "n1", "spec.serviceAccountName": "sa", "status.hostIP": "127.0.0.1",
		"metadata.labels['app']": "x", "metadata.annotations['a/b']": "c",
	} {
		got, err := fieldValue(pod, "other", path)
		if err != nil || got != want {
			t.Errorf("fieldValue(%s) = %q, %v; want %q", path, got, err, want)
		}
	}
	if _, err := fieldValue(pod, "n1", "spec.bogus"); err == nil {
		t.Error("fieldValue(spec.bogus) succeeded, want an error")
	}
}

func TestImageBinary(t *testing.T) {
	for image, want := range map[string]string{
		"schedlab":                      "schedlab",
		"schedlab:dev":                  "schedlab",
		"ghcr.io/schedlab/schedlab:v1":  "schedlab",
		"localhost:5000/agent@sha256:0": "agent",
		"":                              "",
	} {
		if got := imageBinary(image); got != want {
			t.Errorf("imageBinary(%q) = %q, want %q", image, got, want)
		}
	}
}
