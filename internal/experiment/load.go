package experiment

import (
	"errors"
	"fmt"
	"io"
	"os"

	"k8s.io/apimachinery/pkg/util/validation/field"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/api/v1alpha1/validation"
)

// Load reads a SchedExperiment manifest, refusing unknown fields, applies the
// schema's defaults and validates it as the API server would. Errors name
// the file and say what to change.
func Load(path string) (*v1alpha1.SchedExperiment, error) {
	return load(path, validation.ValidateSpec)
}

// LoadLocal is Load for a manifest run on this machine: it validates with
// validation.ValidateLocalSpec, so the fields that pick a cluster's nodes may
// be left out.
func LoadLocal(path string) (*v1alpha1.SchedExperiment, error) {
	return load(path, validation.ValidateLocalSpec)
}

func load(path string, validate func(*v1alpha1.SchedExperimentSpec, *field.Path) field.ErrorList) (*v1alpha1.SchedExperiment, error) {
	var data []byte
	var err error
	if path == "-" {
		data, err = io.ReadAll(os.Stdin)
	} else {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, err
	}
	exp, err := parse(data, validate)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return exp, nil
}

// Parse decodes one SchedExperiment from YAML or JSON (the SchedExperiment
// document of a multi-document file), defaults and validates it. Errors name
// the YAML path and line and say what to change.
func Parse(data []byte) (*v1alpha1.SchedExperiment, error) {
	return parse(data, validation.ValidateSpec)
}

func parse(data []byte, validate func(*v1alpha1.SchedExperimentSpec, *field.Path) field.ErrorList) (*v1alpha1.SchedExperiment, error) {
	doc, err := pickDocument(data)
	if err != nil {
		return nil, err
	}
	exp, err := doc.decodeExperiment()
	if err != nil {
		return nil, err
	}
	exp.Spec.Default()
	if err := validation.AsError("invalid SchedExperiment", validate(&exp.Spec, field.NewPath("spec"))); err != nil {
		return nil, err
	}
	return exp, nil
}

// pickDocument returns the only document, or the one SchedExperiment among
// several.
func pickDocument(data []byte) (*manifestDoc, error) {
	docs, err := splitDocuments(data)
	if err != nil {
		return nil, err
	}
	switch len(docs) {
	case 0:
		return nil, fmt.Errorf("the file is empty: expected a SchedExperiment manifest")
	case 1:
		return &docs[0], nil
	}
	var found []int
	for i := range docs {
		if kind, _ := docs[i].field("kind"); kind == "SchedExperiment" {
			found = append(found, i)
		}
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("no document of kind SchedExperiment among %d documents", len(docs))
	case 1:
		return &docs[found[0]], nil
	}
	return nil, fmt.Errorf("%d SchedExperiments in one file (documents starting at lines %d and %d): give one per file", len(found), docs[found[0]].firstLine, docs[found[1]].firstLine)
}

// LoadProfile reads a SchedProfile manifest, refusing unknown fields, and
// validates its spec as the API server would (validation.ValidateProfileSpec).
func LoadProfile(path string) (*v1alpha1.SchedProfile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("%s: not valid YAML: %w", path, err)
	}
	var p v1alpha1.SchedProfile
	strict, err := sigsjson.UnmarshalStrict(js, &p)
	if err != nil {
		return nil, fmt.Errorf("%s: not a valid SchedProfile: %w", path, err)
	}
	if len(strict) > 0 {
		return nil, fmt.Errorf("%s: not a valid SchedProfile: %w", path, errors.Join(strict...))
	}
	if p.Kind != "" && p.Kind != "SchedProfile" {
		return nil, fmt.Errorf("%s: kind %q: expected SchedProfile", path, p.Kind)
	}
	if err := validation.AsError("invalid SchedProfile", validation.ValidateProfileSpec(&p.Spec, field.NewPath("spec"))); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &p, nil
}
