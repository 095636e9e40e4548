// Command etcd is the etcd server, built from go.etcd.io/etcd/server/v3 at the version that
// k8s.io/kubernetes uses, for the local control plane in bin/k8s.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
