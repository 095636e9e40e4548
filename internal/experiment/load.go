package experiment

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
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

// Parse decodes one SchedExperiment from YAML or JSON (the first document of
// a multi-document file that is a SchedExperiment), defaults and validates it.
func Parse(data []byte) (*v1alpha1.SchedExperiment, error) {
	return parse(data, validation.ValidateSpec)
}

func parse(data []byte, validate func(*v1alpha1.SchedExperimentSpec, *field.Path) field.ErrorList) (*v1alpha1.SchedExperiment, error) {
	doc, err := pickDocument(data)
	if err != nil {
		return nil, err
	}
	exp, err := decode(doc)
	if err != nil {
		return nil, err
	}
	if exp.APIVersion != "" && exp.APIVersion != v1alpha1.GroupVersion.String() {
		return nil, fmt.Errorf("apiVersion %q is not supported: use %s", exp.APIVersion, v1alpha1.GroupVersion)
	}
	exp.Spec.Default()
	if err := validation.AsError("invalid SchedExperiment", validate(&exp.Spec, field.NewPath("spec"))); err != nil {
		return nil, err
	}
	return exp, nil
}

// decode reads a manifest as kubectl sends it to the API server: YAML into
// JSON without looking at the Go types (so `name: y` stays the YAML 1.1
// boolean it is, not the string "true"), then JSON into the types, refusing
// unknown fields and values of the wrong type as the schema does.
func decode(doc []byte) (*v1alpha1.SchedExperiment, error) {
	j, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return nil, fmt.Errorf("not a valid SchedExperiment: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.DisallowUnknownFields()
	var exp v1alpha1.SchedExperiment
	if err := dec.Decode(&exp); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			got := te.Value
			switch {
			case got == "bool":
				got = "boolean"
			case strings.HasPrefix(got, "number"):
				got = "number"
			}
			msg := fmt.Sprintf("not a valid SchedExperiment: %s: Invalid value: %q: must be of type %s", te.Field, got, jsonType(te.Type))
			if got == "boolean" {
				msg += " (YAML 1.1 reads y, n, yes, no, on, off, true and false, in any case, as booleans: quote the value)"
			}
			return nil, errors.New(msg)
		}
		if strings.Contains(err.Error(), "time: invalid duration") {
			// metav1.Duration's own error has no field; say what the
			// schema's pattern says.
			return nil, fmt.Errorf("not a valid SchedExperiment: %w: a duration should match '^([0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$', such as 500ms, 10s or 1m30s", err)
		}
		return nil, fmt.Errorf("not a valid SchedExperiment: %w", err)
	}
	return &exp, nil
}

// jsonType names a Go type as the schema does.
func jsonType(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice:
		return "array"
	default:
		return "object"
	}
}

// pickDocument returns the first YAML document whose kind is SchedExperiment
// (or the only document).
func pickDocument(data []byte) ([]byte, error) {
	docs := bytes.Split(append([]byte("\n"), data...), []byte("\n---"))
	var candidates [][]byte
	for _, d := range docs {
		if len(bytes.TrimSpace(d)) == 0 {
			continue
		}
		candidates = append(candidates, d)
	}
	if len(candidates) == 0 {
		return nil, fmt.Errorf("the file is empty: expected a SchedExperiment manifest")
	}
	if len(candidates) == 1 {
		return candidates[0], nil
	}
	for _, d := range candidates {
		var meta struct {
			Kind string `json:"kind"`
		}
		if err := yaml.Unmarshal(d, &meta); err == nil && meta.Kind == "SchedExperiment" {
			return d, nil
		}
	}
	return nil, fmt.Errorf("no document of kind SchedExperiment among %d documents", len(candidates))
}
