// Package envtest starts a real kube-apiserver and etcd for integration tests.
//
// It wraps sigs.k8s.io/controller-runtime/pkg/envtest with the project's conventions: the
// binaries come from bin/k8s at the repository root (built by `make k8s-bins`), the CRDs from
// config/crd/bases, and a missing binary fails the test with the command that builds it.
//
// In a single test:
//
//	cfg, c, stop := envtest.Start(t)
//	defer stop() // optional: Start also registers stop with t.Cleanup
//
// In TestMain, shared by a package's tests:
//
//	func TestMain(m *testing.M) {
//		env, err := envtest.StartEnv(envtest.Options{Scheme: scheme})
//		if err != nil {
//			fmt.Fprintln(os.Stderr, err)
//			os.Exit(1)
//		}
//		code := m.Run()
//		env.Stop()
//		os.Exit(code)
//	}
package envtest
