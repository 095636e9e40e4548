// Package kubelet is a fake kubelet for local end-to-end tests and demos. It registers this
// machine as a Node (capacity, kernel version and OS from the host), keeps the Node Ready with a
// heartbeat Lease, and runs the containers of every Pod bound to the Node as local processes:
// the image is not pulled; a relative command[0] is resolved against a binary directory, and a
// container without command runs the binary named after its image (image "schedlab:dev" runs
// <binary dir>/schedlab with the container's args), so a locally built binary stands in for the
// image. It reports Pod phase and container statuses, honours
// restart policies, and on Pod deletion sends SIGTERM, waits the grace period, sends SIGKILL and
// then deletes the Pod with grace period 0 so the API server finalizes it.
//
// Each Pod's processes get KUBECONFIG pointing at a kubeconfig with a token of the Pod's
// ServiceAccount (TokenRequest, bound to the Pod), so that RBAC applies as in a real cluster.
// Clients must load config the standard way (controller-runtime's GetConfig or clientcmd
// honour KUBECONFIG); rest.InClusterConfig does not work because no token is mounted at
// /var/run/secrets/kubernetes.io/serviceaccount. Volumes are not mounted: a process sees the
// host file system, so a hostPath volume works when its mountPath equals its path.
package kubelet
