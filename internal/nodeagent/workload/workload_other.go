//go:build !linux

package workload

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
)

var errNotLinux = errors.New("workload: workers run on Linux only (running on " + runtime.GOOS + ")")

// MaxTasks is the most tasks a Spec may have, as in the CRD schema.
const MaxTasks = 512

// Set is a running workload (Linux only).
type Set struct{}

func Start(context.Context, Spec) (*Set, error) { return nil, errNotLinux }
func (s *Set) RunID() string                    { return "" }
func (s *Set) PIDs() []int                      { return nil }
func (s *Set) Begin() error                     { return errNotLinux }
func (s *Set) End() (*Window, error)            { return nil, errNotLinux }
func (s *Set) Stop() error                      { return nil }
func ReadSched(int) (Sched, error)              { return Sched{}, errNotLinux }
func Survivors(string) ([]int, error)           { return nil, errNotLinux }

// WorkerMain is the hidden worker mode (Linux only).
func WorkerMain([]string) int {
	fmt.Fprintln(os.Stderr, errNotLinux)
	return 2
}
