// Package workload runs schedlab's synthetic workload on this machine and
// measures what the scheduler did to it.
//
// Every task is its own process: the schedlab binary re-executed in its hidden
// worker mode (`schedlab __worker <json>`, see WorkerMain). A worker is
// placed — cgroup, session, nice, policy, EEVDF slice — before its work
// starts: it starts, applies its own scheduling attributes, reports "ready",
// the parent moves it into its cgroup, and only then sends "go".
//
// The parent side is a Set: Start spawns and places every worker, Begin opens
// the measured window, End closes it and returns per-task statistics, and Stop
// kills and reaps every worker. GroupMetrics and WindowMetrics turn a Window
// into the metric vocabulary of api/v1alpha1.
//
// Workers die with their parent (PR_SET_PDEATHSIG, set both by the parent
// through SysProcAttr and by the worker itself). Linux delivers that signal
// when the *thread* that forked the worker exits, so a Set forks its workers
// from a thread of its own that lives until Stop.
//
// It imports the API only. Start reading at Set in set_linux.go.
package workload
