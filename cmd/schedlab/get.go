package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/cli-runtime/pkg/resource"
	"k8s.io/client-go/rest"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

func init() { register("get", newGetCmd) }

// experimentsResource is the SchedExperiment resource, fully qualified so
// that no other API group's "schedexperiments" can be meant.
const experimentsResource = "schedexperiments." + "schedlab.io"

func newGetCmd() *cobra.Command {
	var (
		out      outputFormat
		selector string
		wide     bool
	)
	kube := newClusterFlags()
	cmd := &cobra.Command{
		Use:   "get [NAME...]",
		Short: "list SchedExperiments from the cluster, with their status and each node's progress",
		Long: `Lists SchedExperiments as kubectl get sx does (the server's columns: STATUS, MODE, NODES,
BEST, PRED-ERROR, AGE; --wide adds the rest), or the named ones. For one NAME, each node's
phase and steps follow. -o json or yaml prints the objects (a List unless one NAME is given).`,
		Example: `  schedlab get
  schedlab get group-fairness
  schedlab get -l team=perf -o yaml`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := kube.restConfig(); err != nil {
				return err
			}
			return getExperiments(cmd.OutOrStdout(), kube, args, selector, out, wide)
		},
		ValidArgsFunction: func(cmd *cobra.Command, args []string, s string) ([]string, cobra.ShellCompDirective) {
			names, d := kube.completeExperiments(cmd, nil, s)
			return names, d
		},
	}
	kube.register(cmd)
	addOutputFlag(cmd, &out)
	cmd.Flags().StringVarP(&selector, "selector", "l", "", "label selector (key=value,key!=value,…) the experiments must match")
	cmd.Flags().BoolVar(&wide, "wide", false, "table: also the columns kubectl shows only with -o wide")
	return cmd
}

// asTable asks the API server for its Table rendering of the objects (the
// CRD's printer columns, as kubectl get shows them), with the whole object
// in each row.
func asTable(req *rest.Request) {
	req.SetHeader("Accept", strings.Join([]string{
		fmt.Sprintf("application/json;as=Table;v=%s;g=%s", metav1.SchemeGroupVersion.Version, metav1.GroupName),
		"application/json",
	}, ","))
	req.Param("includeObject", string(metav1.IncludeObject))
}

// fetchResources gets the named objects of resource (all matching selector
// when names is empty) through cli-runtime's resource builder, as kubectl
// does; table asks for the server's Table rendering. A name that is not
// there is an error after the rest are returned.
func fetchResources(kube *clusterFlags, resourceName string, names []string, selector string, table bool) ([]runtime.Object, error) {
	b := resource.NewBuilder(kube.cf).Unstructured().ContinueOnError().Flatten()
	if len(names) > 0 {
		if selector != "" {
			return nil, usagef("give NAMEs or -l, not both")
		}
		b = b.ResourceNames(resourceName, names...)
	} else {
		b = b.ResourceTypes(resourceName).LabelSelectorParam(selector).SelectAllParam(selector == "")
	}
	if table {
		b = b.TransformRequests(asTable)
	}
	infos, err := b.Do().Infos()
	var objs []runtime.Object
	for _, info := range infos {
		objs = append(objs, info.Object)
	}
	return objs, err
}

// decodeTable turns the server's Table (unstructured) into a metav1.Table
// with each row's object decoded.
func decodeTable(obj runtime.Object) (*metav1.Table, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || u.GetKind() != "Table" {
		return nil, fmt.Errorf("the server sent %s, not a Table", obj.GetObjectKind().GroupVersionKind().Kind)
	}
	t := &metav1.Table{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, t); err != nil {
		return nil, err
	}
	for i := range t.Rows {
		row := &t.Rows[i]
		if row.Object.Raw == nil || row.Object.Object != nil {
			continue
		}
		o, err := runtime.Decode(unstructured.UnstructuredJSONScheme, row.Object.Raw)
		if err != nil {
			return nil, err
		}
		row.Object.Object = o
	}
	return t, nil
}

// getExperiments prints the experiments named (or all) as a table, JSON or
// YAML.
func getExperiments(w io.Writer, kube *clusterFlags, names []string, selector string, out outputFormat, wide bool) error {
	objs, ferr := fetchResources(kube, experimentsResource, names, selector, out == outputTable)
	if out != outputTable {
		if len(objs) > 0 || ferr == nil {
			if err := printObjects(w, out, objs, len(names) == 1); err != nil {
				return err
			}
		}
		return fetchError(ferr)
	}
	p := printers.NewTablePrinter(printers.PrintOptions{Wide: wide})
	var exps []*v1alpha1.SchedExperiment
	rows := 0
	for _, o := range objs {
		t, err := decodeTable(o)
		if err != nil {
			return err
		}
		rows += len(t.Rows)
		if err := p.PrintObj(t, w); err != nil {
			return err
		}
		for _, r := range t.Rows {
			var e v1alpha1.SchedExperiment
			if u, ok := r.Object.Object.(*unstructured.Unstructured); ok &&
				runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &e) == nil {
				exps = append(exps, &e)
			}
		}
	}
	if rows == 0 && ferr == nil {
		fmt.Fprintln(w, "No SchedExperiments found.")
	}
	if len(names) == 1 && len(exps) == 1 {
		if err := printNodeProgress(w, exps[0]); err != nil {
			return err
		}
	}
	return fetchError(ferr)
}

// printNodeProgress prints each node's phase and steps.
func printNodeProgress(w io.Writer, exp *v1alpha1.SchedExperiment) error {
	if len(exp.Status.Nodes) == 0 {
		_, err := fmt.Fprintln(w, "\nNo nodes chosen yet.")
		return err
	}
	fmt.Fprintln(w)
	tw := printers.GetNewTabWriter(w)
	fmt.Fprintln(tw, "NODE\tPHASE\tSHAPE\tSTEPS\tMESSAGE")
	for _, n := range exp.Status.Nodes {
		steps := "-"
		if n.StepsTotal > 0 {
			steps = fmt.Sprintf("%d/%d", n.StepsDone, n.StepsTotal)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", n.Name, orDash(string(n.Phase)), orDash(n.Shape), steps, n.Message)
	}
	return tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// printObjects prints objects as JSON or YAML with cli-runtime's printers,
// without managedFields (as kubectl does): the object itself when single,
// else a List.
func printObjects(w io.Writer, out outputFormat, objs []runtime.Object, single bool) error {
	var p printers.ResourcePrinter = &printers.JSONPrinter{}
	if out == outputYAML {
		p = &printers.YAMLPrinter{}
	}
	list := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "v1", "kind": "List", "metadata": map[string]any{"resourceVersion": ""}}}
	for _, o := range objs {
		u, ok := o.(*unstructured.Unstructured)
		if !ok {
			return fmt.Errorf("unexpected %T from the server", o)
		}
		u.SetManagedFields(nil)
		list.Items = append(list.Items, *u)
	}
	if single && len(list.Items) == 1 {
		return p.PrintObj(&list.Items[0], w)
	}
	return p.PrintObj(list, w)
}

// fetchError makes an object that is not there invalid input (exit code 2),
// and keeps every other error as it is.
func fetchError(err error) error {
	if err == nil {
		return nil
	}
	var agg utilerrors.Aggregate
	errs := []error{err}
	if a, ok := err.(utilerrors.Aggregate); ok {
		agg, errs = a, a.Errors()
	}
	for _, e := range errs {
		if !apierrors.IsNotFound(e) {
			return err
		}
	}
	if agg != nil && len(errs) == 1 {
		err = errs[0]
	}
	return invalidInput(err)
}
