package experiment

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"

	yaml3 "go.yaml.in/yaml/v3"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

// manifestDoc is one YAML document of a manifest file: its bytes, its node
// tree (for paths and line numbers) and the line it starts on.
type manifestDoc struct {
	data      []byte
	root      *yaml3.Node
	firstLine int // line of the file the document's line 1 is
}

// splitDocuments splits a YAML stream into its documents with apimachinery's
// YAML reader, skipping empty ones, and parses each into a node tree. JSON is
// one document.
func splitDocuments(data []byte) ([]manifestDoc, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs []manifestDoc
	pos := 0
	for {
		d, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		first := 1
		if i := bytes.Index(data[pos:], d); i >= 0 {
			first += bytes.Count(data[:pos+i], []byte("\n"))
			pos += i + len(d)
		}
		var n yaml3.Node
		if err := yaml3.Unmarshal(d, &n); err != nil {
			return nil, shiftLines(err, first-1)
		}
		if n.Kind == 0 || len(n.Content) == 0 || n.Content[0].Kind == yaml3.ScalarNode && n.Content[0].Tag == "!!null" {
			continue // only comments or blank
		}
		docs = append(docs, manifestDoc{data: d, root: n.Content[0], firstLine: first})
	}
	return docs, nil
}

var yamlLineRE = regexp.MustCompile(`line (\d+)`)

// shiftLines makes the "line N" of a YAML error count from the file's start.
func shiftLines(err error, by int) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if by > 0 {
		msg = yamlLineRE.ReplaceAllStringFunc(msg, func(m string) string {
			var n int
			fmt.Sscanf(m, "line %d", &n)
			return fmt.Sprintf("line %d", n+by)
		})
	}
	return fmt.Errorf("not valid YAML: %s", msg)
}

// field returns the string value of a top-level key ("" if absent or not a
// string) and the line of the key.
func (d *manifestDoc) field(key string) (string, *yaml3.Node) {
	if d.root.Kind != yaml3.MappingNode {
		return "", nil
	}
	for i := 0; i+1 < len(d.root.Content); i += 2 {
		if d.root.Content[i].Value == key {
			v := d.root.Content[i+1]
			if v.Kind == yaml3.ScalarNode {
				return v.Value, v
			}
			return "", v
		}
	}
	return "", nil
}

// nodeVisit is one node of a document: its path (spec.groups[1].name), the
// node, and whether it is a mapping key.
type nodeVisit struct {
	path string
	key  bool
	node *yaml3.Node
}

// walk lists every key and value node of the document with its path.
func (d *manifestDoc) walk() []nodeVisit {
	var out []nodeVisit
	var rec func(n *yaml3.Node, path string, depth int)
	rec = func(n *yaml3.Node, path string, depth int) {
		if depth > 64 {
			return
		}
		switch n.Kind {
		case yaml3.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				p := k.Value
				if path != "" {
					p = path + "." + k.Value
				}
				out = append(out, nodeVisit{p, true, k})
				rec(v, p, depth+1)
			}
		case yaml3.SequenceNode:
			for i, c := range n.Content {
				rec(c, fmt.Sprintf("%s[%d]", path, i), depth+1)
			}
		default:
			out = append(out, nodeVisit{path, false, n})
		}
	}
	rec(d.root, "", 0)
	return out
}

func (d *manifestDoc) line(n *yaml3.Node) int { return d.firstLine + n.Line - 1 }

// yaml11Bool says whether a plain scalar is a boolean in YAML 1.1 (which
// sigs.k8s.io/yaml, kubectl and the API server's YAML decoding follow) but a
// string in YAML 1.2: y, yes, on, n, no, off in any of their spellings.
func yaml11Bool(n *yaml3.Node) (value, ok bool) {
	if n.Kind != yaml3.ScalarNode || n.Style != 0 || n.Tag != "!!str" {
		return false, false
	}
	switch n.Value {
	case "y", "Y", "yes", "Yes", "YES", "on", "On", "ON":
		return true, true
	case "n", "N", "no", "No", "NO", "off", "Off", "OFF":
		return false, true
	}
	return false, false
}

// jsonKind is what a node becomes in JSON under YAML 1.1 rules.
func jsonKind(n *yaml3.Node) string {
	switch n.Kind {
	case yaml3.MappingNode:
		return "object"
	case yaml3.SequenceNode:
		return "array"
	}
	if _, ok := yaml11Bool(n); ok {
		return "bool"
	}
	if n.Style != 0 {
		return "string"
	}
	switch n.Tag {
	case "!!int", "!!float":
		return "number"
	case "!!bool":
		return "bool"
	case "!!null":
		return "null"
	}
	return "string"
}

// checkKeys refuses mapping keys that YAML 1.1 turns into "true" or "false":
// a label or sysctl named on/off/yes/no would be silently renamed.
func (d *manifestDoc) checkKeys() error {
	var errs []string
	for _, v := range d.walk() {
		if b, ok := yaml11Bool(v.node); ok && v.key {
			errs = append(errs, fmt.Sprintf("%s (line %d): the key %s is the boolean %v in YAML 1.1, as kubectl reads it, and would become %q: quote it (\"%s\")",
				v.path, d.line(v.node), v.node.Value, b, fmt.Sprint(b), v.node.Value))
		}
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// checkKind refuses a document that is not a schedlab.io/v1alpha1
// SchedExperiment.
func (d *manifestDoc) checkKind() error {
	kind, kn := d.field("kind")
	api, an := d.field("apiVersion")
	want := v1alpha1.GroupVersion.String()
	switch {
	case kn == nil:
		return fmt.Errorf("kind is missing: add 'kind: SchedExperiment' (and 'apiVersion: %s')", want)
	case kind != "SchedExperiment":
		return fmt.Errorf("kind (line %d): %q is not a SchedExperiment: schedlab reads 'kind: SchedExperiment' manifests", d.line(kn), kind)
	case an == nil:
		return fmt.Errorf("apiVersion is missing: add 'apiVersion: %s'", want)
	case api != want:
		return fmt.Errorf("apiVersion (line %d): %q is not supported: use %s", d.line(an), api, want)
	}
	return nil
}

var (
	typeErrRE    = regexp.MustCompile(`cannot unmarshal (\w+)\S* into Go (?:struct field \S*?\.|value of type )?(\S*) of type (\S+)`)
	unknownErrRE = regexp.MustCompile(`unknown field "([^"]+)"`)
	// metav1.Duration's own error names no field: time: invalid duration "ten seconds".
	durationErrRE = regexp.MustCompile(`time: invalid duration "((?:[^"\\]|\\.)*)"`)
	dupErrRE      = regexp.MustCompile(`duplicate field "([^"]+)"`)
	indexRE       = regexp.MustCompile(`\[\d+\]`)
)

// decodeExperiment decodes a SchedExperiment document strictly. Every error
// names the YAML path, its line, and what to change.
func (d *manifestDoc) decodeExperiment() (*v1alpha1.SchedExperiment, error) {
	if err := d.checkKind(); err != nil {
		return nil, err
	}
	if err := d.checkKeys(); err != nil {
		return nil, err
	}
	js, err := yaml.YAMLToJSON(d.data)
	if err != nil {
		return nil, fmt.Errorf("not valid YAML: %w", err)
	}
	var exp v1alpha1.SchedExperiment
	strict, err := sigsjson.UnmarshalStrict(js, &exp)
	if err != nil {
		return nil, d.explainTypeError(err)
	}
	if len(strict) > 0 {
		var msgs []string
		for _, e := range strict {
			msgs = append(msgs, d.explainStrictError(e))
		}
		return nil, errors.New(strings.Join(msgs, "; "))
	}
	return &exp, nil
}

// explainTypeError turns "json: cannot unmarshal string into Go struct field
// Group.spec.workload.groups.tasks of type int32" into the node's path with
// its index, line, what it holds and what the field wants.
func (d *manifestDoc) explainTypeError(err error) error {
	m := typeErrRE.FindStringSubmatch(err.Error())
	if m == nil {
		if dm := durationErrRE.FindStringSubmatch(err.Error()); dm != nil {
			return d.explainDuration(dm[1])
		}
		return fmt.Errorf("not a valid SchedExperiment: %v", err)
	}
	got, field, goType := m[1], m[2], m[3]
	want := describeGoType(goType)
	if t := typeAt(reflect.TypeOf(v1alpha1.SchedExperiment{}), field); t != nil {
		want = describeKind(t, want)
	}
	// The API server's words for the same refusal ("must be of type
	// string"), so the CLI and the server can be matched on one message.
	schema := ""
	if t := typeAt(reflect.TypeOf(v1alpha1.SchedExperiment{}), field); t != nil {
		schema = " (must be of type " + schemaType(t) + ")"
	}
	var found []string
	for _, v := range d.walk() {
		if v.key || indexRE.ReplaceAllString(v.path, "") != field || jsonKind(v.node) != got {
			continue
		}
		if b, ok := yaml11Bool(v.node); ok && got == "bool" {
			found = append(found, fmt.Sprintf("%s (line %d): %s is the boolean %v in YAML 1.1, as kubectl reads it, not the word: quote it (\"%s\"); the field wants %s%s",
				v.path, d.line(v.node), v.node.Value, b, v.node.Value, want, schema))
			continue
		}
		found = append(found, fmt.Sprintf("%s (line %d): %s is %s; the field wants %s%s", v.path, d.line(v.node), shortValue(v.node), describeJSONKind(got), want, schema))
	}
	if len(found) == 0 {
		return fmt.Errorf("%s: %s given where the field wants %s%s", field, describeJSONKind(got), want, schema)
	}
	return errors.New(strings.Join(found, "; "))
}

// explainDuration names the field whose duration did not parse (metav1's
// error says only the value), with the schema's own words for it.
func (d *manifestDoc) explainDuration(value string) error {
	if u, err := strconv.Unquote(`"` + value + `"`); err == nil {
		value = u
	}
	const want = "should match '^([0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$', such as 500ms, 10s or 1m30s"
	var found []string
	for _, v := range d.walk() {
		if !v.key && v.node.Kind == yaml3.ScalarNode && v.node.Value == value {
			found = append(found, fmt.Sprintf("%s (line %d): %q is not a duration: a duration %s", v.path, d.line(v.node), value, want))
		}
	}
	if len(found) == 0 {
		return fmt.Errorf("%q is not a duration: a duration %s", value, want)
	}
	return errors.New(strings.Join(found, "; "))
}

// explainStrictError names the line of an unknown or duplicate field and
// lists the fields the place allows.
func (d *manifestDoc) explainStrictError(e error) string {
	if m := unknownErrRE.FindStringSubmatch(e.Error()); m != nil {
		path := m[1]
		line := ""
		for _, v := range d.walk() {
			if v.key && v.path == path {
				line = fmt.Sprintf(" (line %d)", d.line(v.node))
				break
			}
		}
		parent, name := path, path
		if i := strings.LastIndex(path, "."); i >= 0 {
			parent, name = path[:i], path[i+1:]
		} else {
			parent = ""
		}
		msg := fmt.Sprintf("%s%s: unknown field %q", path, line, name)
		if fields := fieldsAt(reflect.TypeOf(v1alpha1.SchedExperiment{}), indexRE.ReplaceAllString(parent, "")); len(fields) > 0 {
			msg += fmt.Sprintf(": the fields of %s are %s", orTop(parent), strings.Join(fields, ", "))
		}
		return msg
	}
	if m := dupErrRE.FindStringSubmatch(e.Error()); m != nil {
		return fmt.Sprintf("%s: given twice: keep one", m[1])
	}
	return e.Error()
}

func orTop(p string) string {
	if p == "" {
		return "the manifest"
	}
	return p
}

// fieldsAt lists the JSON field names of the struct at a dotted path (no
// indices) under t.
func fieldsAt(t reflect.Type, path string) []string {
	for _, seg := range strings.Split(path, ".") {
		t = elem(t)
		if seg == "" {
			continue
		}
		if t.Kind() != reflect.Struct {
			return nil
		}
		f, ok := jsonField(t, seg)
		if !ok {
			return nil
		}
		t = f.Type
	}
	t = elem(t)
	if t.Kind() != reflect.Struct {
		return nil
	}
	var names []string
	collectFields(t, &names)
	sort.Strings(names)
	return names
}

func elem(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
		t = t.Elem()
	}
	return t
}

func jsonName(f reflect.StructField) (name string, inline bool) {
	tag := f.Tag.Get("json")
	name, _, _ = strings.Cut(tag, ",")
	if name == "-" {
		return "", false
	}
	if name == "" && f.Anonymous {
		return "", true
	}
	if name == "" {
		name = f.Name
	}
	return name, strings.Contains(tag, ",inline")
}

func jsonField(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		n, inline := jsonName(f)
		if inline || (n == "" && f.Anonymous) {
			if g, ok := jsonField(elem(f.Type), name); ok {
				return g, true
			}
			continue
		}
		if n == name {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

func collectFields(t reflect.Type, names *[]string) {
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		n, inline := jsonName(f)
		if inline || (n == "" && f.Anonymous) {
			if et := elem(f.Type); et.Kind() == reflect.Struct {
				collectFields(et, names)
			}
			continue
		}
		if n != "" && n != "status" {
			*names = append(*names, n)
		}
	}
}

// typeAt is the Go type of the field at a dotted path (no indices), or nil.
func typeAt(t reflect.Type, path string) reflect.Type {
	for _, seg := range strings.Split(path, ".") {
		t = elem(t)
		if t.Kind() == reflect.Map {
			t = t.Elem()
			continue
		}
		if t.Kind() != reflect.Struct {
			return nil
		}
		f, ok := jsonField(t, seg)
		if !ok {
			return nil
		}
		t = f.Type
	}
	return t
}

// describeKind says what a field of type t wants, by its kind.
func describeKind(t reflect.Type, fallback string) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if strings.HasSuffix(t.Name(), "Duration") || t.Name() == "Quantity" || t.Name() == "IntOrString" {
		return fallback
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "a mapping"
	}
	return fallback
}

func shortValue(n *yaml3.Node) string {
	if n.Kind != yaml3.ScalarNode {
		return "a " + map[yaml3.Kind]string{yaml3.MappingNode: "mapping", yaml3.SequenceNode: "list"}[n.Kind]
	}
	v := n.Value
	if len(v) > 40 {
		v = v[:40] + "…"
	}
	return fmt.Sprintf("%q", v)
}

func describeJSONKind(k string) string {
	switch k {
	case "object":
		return "a mapping"
	case "array":
		return "a list"
	case "number":
		return "a number"
	case "bool":
		return "a boolean"
	case "string":
		return "a string"
	}
	return k
}

func describeGoType(t string) string {
	t = strings.TrimLeft(t, "*")
	switch {
	case strings.HasPrefix(t, "[]"):
		return "a list"
	case strings.HasPrefix(t, "map["):
		return "a mapping"
	case strings.HasPrefix(t, "int") || strings.HasPrefix(t, "uint"):
		return "an integer"
	case strings.HasPrefix(t, "float"):
		return "a number"
	case t == "string":
		return "a string"
	case t == "bool":
		return "true or false"
	case strings.HasSuffix(t, "Duration"):
		return `a duration such as "10s"`
	}
	return "a value of type " + t
}

// schemaType names a Go type as the CRD's OpenAPI schema does.
func schemaType(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.String() == "v1.Duration" || t.String() == "resource.Quantity" {
		return "string"
	}
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
