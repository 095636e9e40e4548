package crd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// TestEveryFieldExplained: every field of every CRD has a description, so
// `kubectl explain schedexperiment.spec…` says what it is. (metadata is the
// standard ObjectMeta, which kubectl explains itself.)
func TestEveryFieldExplained(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(root, "config", "crd", "bases", "*.yaml"))
	if err != nil || len(files) < 2 {
		t.Fatalf("CRDs: %v %v", files, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict(b, &crd); err != nil {
			t.Fatal(err)
		}
		for _, v := range crd.Spec.Versions {
			var total int
			var missing []string
			var walk func(s *apiextensionsv1.JSONSchemaProps, path string)
			walk = func(s *apiextensionsv1.JSONSchemaProps, path string) {
				for name, p := range s.Properties {
					total++
					if path == crd.Spec.Names.Kind && name == "metadata" {
						continue
					}
					if strings.TrimSpace(p.Description) == "" {
						missing = append(missing, path+"."+name)
					}
					walk(&p, path+"."+name)
				}
				if s.Items != nil && s.Items.Schema != nil {
					walk(s.Items.Schema, path+"[]")
				}
				if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
					walk(s.AdditionalProperties.Schema, path+"{}")
				}
			}
			walk(v.Schema.OpenAPIV3Schema, crd.Spec.Names.Kind)
			t.Logf("%s %s: %d fields, %d without a description", crd.Spec.Names.Kind, v.Name, total, len(missing))
			if len(missing) > 0 {
				t.Errorf("%s %s: fields without a description (add a doc comment in api/v1alpha1): %s", crd.Spec.Names.Kind, v.Name, strings.Join(missing, ", "))
			}
		}
	}
}

// TestPrinterColumnsAndNames: the default `kubectl get` view shows STATUS for
// both kinds, the short names are sx and nr, and both are in the schedlab
// category (`kubectl get schedlab`).
func TestPrinterColumnsAndNames(t *testing.T) {
	want := map[string]string{"SchedExperiment": "sx", "NodeRun": "nr"}
	files, _ := filepath.Glob(filepath.Join(root, "config", "crd", "bases", "*.yaml"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(b, &crd); err != nil {
			t.Fatal(err)
		}
		n := crd.Spec.Names
		if want[n.Kind] == "" {
			continue // a kind of its own owner's
		}
		if !contains(n.ShortNames, want[n.Kind]) || !contains(n.Categories, "schedlab") {
			t.Errorf("%s: short names %v categories %v, want %s and schedlab", n.Kind, n.ShortNames, n.Categories, want[n.Kind])
		}
		for _, v := range crd.Spec.Versions {
			cols := v.AdditionalPrinterColumns
			if len(cols) == 0 || cols[0].Name != "Status" || cols[0].Priority != 0 {
				t.Errorf("%s: the first printer column is %+v, want Status in the default view", n.Kind, cols)
			}
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
