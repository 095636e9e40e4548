package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/schedlab/schedlab/api"
	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/internal/progress"
)

func init() { register("watch", newWatchCmd) }

func newWatchCmd() *cobra.Command {
	var timeout time.Duration
	kube := newClusterFlags()
	cmd := &cobra.Command{
		Use:   "watch NAME",
		Short: "follow a SchedExperiment until it completes or fails: its phase and each node's progress",
		Long: `Watches SchedExperiment NAME and prints a line each time its conditions or a node's phase
or steps change, as make demo does:

  [  12s] NodesLocked,Ready,Running; node vm: Running 3/8

Exits 0 when the experiment has completed its current generation, 1 when it failed, was
deleted or --timeout passed (then schedlab report NAME prints the results).`,
		Example: `  kubectl apply -f config/samples/group-fairness.yaml && schedlab watch group-fairness
  schedlab watch group-fairness --timeout 10m && schedlab report group-fairness`,
		Args: exactArgs(1, "the experiment's NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if timeout < 0 {
				return usagef("--timeout %s: give a positive duration, or 0 for none", timeout)
			}
			cfg, err := kube.restConfig()
			if err != nil {
				return err
			}
			c, err := client.NewWithWatch(cfg, client.Options{Scheme: api.NewScheme()})
			if err != nil {
				return fmt.Errorf("connecting to %s: %w", cfg.Host, err)
			}
			ctx := cmd.Context()
			if timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, timeout)
				defer cancel()
			}
			return watchExperiment(ctx, cmd.OutOrStdout(), c, args[0], time.Now)
		},
		ValidArgsFunction: kube.completeExperiments,
	}
	kube.register(cmd)
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "give up after this long (exit 1); 0 waits until the experiment finishes")
	return cmd
}

// watchExperiment prints experiment name's progress line whenever it
// changes until the experiment finishes. It reads the object, then watches
// it from that resourceVersion; when the watch ends (the server closes
// watches after a while, or the version is too old) it reads and watches
// again, so no change is missed and none is printed twice.
func watchExperiment(ctx context.Context, w io.Writer, c client.WithWatch, name string, now func() time.Time) error {
	start := now()
	last := ""
	show := func(exp *v1alpha1.SchedExperiment) (bool, error) {
		if l := progress.Line(exp); l != last {
			fmt.Fprintf(w, "[%4ds] %s\n", int(now().Sub(start).Seconds()), l)
			last = l
		}
		done, err := progress.Finished(exp)
		if done && err == nil {
			best := exp.Status.BestVariant
			if best == "" {
				best = "none"
			}
			fmt.Fprintf(w, "%s completed: best variant %s; schedlab report %s prints the results\n", name, best, name)
		}
		return done, err
	}
	stillAt := func(err error) error {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("%s has not finished after %s (last: %s)", name, now().Sub(start).Round(time.Second), last)
		}
		return err
	}
	for {
		var exp v1alpha1.SchedExperiment
		if err := c.Get(ctx, client.ObjectKey{Name: name}, &exp); err != nil {
			if apierrors.IsNotFound(err) && last != "" {
				return fmt.Errorf("SchedExperiment %s was deleted before it finished (last: %s)", name, last)
			}
			return stillAt(notFound(fmt.Errorf("SchedExperiment %s: %w", name, err)))
		}
		if done, err := show(&exp); done {
			return err
		}
		wi, err := c.Watch(ctx, &v1alpha1.SchedExperimentList{}, &client.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("metadata.name", name),
			Raw:           &metav1.ListOptions{ResourceVersion: exp.ResourceVersion, AllowWatchBookmarks: true},
		})
		if err != nil {
			return stillAt(fmt.Errorf("watching SchedExperiment %s: %w", name, err))
		}
		done, err := follow(ctx, wi, name, show)
		wi.Stop()
		if done || err != nil {
			return stillAt(err)
		}
	}
}

// follow reads watch events until the experiment finishes (true), the
// watch ends (false, nil: read and watch again) or fails.
func follow(ctx context.Context, wi watch.Interface, name string, show func(*v1alpha1.SchedExperiment) (bool, error)) (bool, error) {
	for {
		select {
		case <-ctx.Done():
			return true, ctx.Err()
		case ev, ok := <-wi.ResultChan():
			if !ok {
				return false, nil
			}
			switch ev.Type {
			case watch.Added, watch.Modified:
				exp, ok := ev.Object.(*v1alpha1.SchedExperiment)
				if !ok {
					continue
				}
				if done, err := show(exp); done {
					return true, err
				}
			case watch.Deleted:
				return true, fmt.Errorf("SchedExperiment %s was deleted before it finished", name)
			case watch.Error:
				// 410 Gone and the like: start over from a fresh read.
				if st, ok := ev.Object.(*metav1.Status); ok && st.Code != 0 && st.Code != 410 {
					return true, fmt.Errorf("watching SchedExperiment %s: %s", name, st.Message)
				}
				return false, nil
			}
		}
	}
}
