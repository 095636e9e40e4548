package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/schedlab/schedlab/hack/demo/lab"
)

// freeAddr is a loopback address with a port nothing listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// scraperToken is a token of a new ServiceAccount, bound to the chart's
// metrics-reader ClusterRole when bind is true.
func scraperToken(t *testing.T, l *lab.Lab, name string, bind bool) string {
	t.Helper()
	ctx := context.Background()
	cs := l.Cluster.Client
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: operatorNamespace}}
	if _, err := cs.CoreV1().ServiceAccounts(operatorNamespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if bind {
		crb := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "schedlab-metrics-reader"},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: operatorNamespace}},
		}
		if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = cs.RbacV1().ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
		})
	}
	tr, err := cs.CoreV1().ServiceAccounts(operatorNamespace).CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// scrape GETs /metrics over HTTPS (the manager's certificate is self-signed)
// with a bearer token ("" for none).
func scrape(addr, token string) (int, string, error) {
	c := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	req, err := http.NewRequest(http.MethodGet, "https://"+addr+"/metrics", nil)
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// metricValue reads one sample ("name{labels}") of the exposition text.
func metricValue(body, series string) (float64, bool) {
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`)
	m := re.FindStringSubmatch(body)
	if m == nil {
		return 0, false
	}
	v, err := strconv.ParseFloat(m[1], 64)
	return v, err == nil
}

// testMetrics scrapes the manager's /metrics through the secure endpoint:
// refused without a token (401) and with a token not allowed to get /metrics
// (403); with a token bound to the chart's metrics-reader role, the
// schedlab metrics, with the finished experiments counted.
func testMetrics(t *testing.T, l *lab.Lab, addr string, finished []string) {
	reader := scraperToken(t, l, "e2e-scraper", true)
	other := scraperToken(t, l, "e2e-nobody", false)
	if code, _, err := scrape(addr, ""); err != nil || code != http.StatusUnauthorized {
		t.Errorf("/metrics without a token: %d %v, want 401", code, err)
	}
	if code, _, err := scrape(addr, other); err != nil || code != http.StatusForbidden {
		t.Errorf("/metrics with a token that may not get it: %d %v, want 403", code, err)
	}
	code, body, err := scrape(addr, reader)
	if err != nil || code != http.StatusOK {
		t.Fatalf("/metrics with the metrics-reader token: %d %v\n%s", code, err, body)
	}
	for _, name := range []string{"schedlab_experiments", "schedlab_experiment_conditions", "schedlab_nodes_locked", "schedlab_nodes_unrestored",
		"schedlab_experiment_outcomes_total", "schedlab_experiment_run_duration_seconds", "schedlab_reconcile_duration_seconds",
		"schedlab_simulation_duration_seconds", "schedlab_agent_window_reruns_total", "schedlab_prediction_error_ratio"} {
		if !strings.Contains(body, "# TYPE "+name+" ") {
			t.Errorf("/metrics has no %s", name)
		}
	}
	var lines []string
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, "schedlab_") && !strings.Contains(line, "_bucket{") {
			lines = append(lines, line)
		}
	}
	t.Logf("schedlab series on /metrics:\n%s", strings.Join(lines, "\n"))
	want := map[string]float64{}
	for _, o := range finished {
		want[fmt.Sprintf(`schedlab_experiment_outcomes_total{outcome="%s"}`, o)]++
	}
	for series, n := range want {
		if v, ok := metricValue(body, series); !ok || v < n {
			t.Errorf("%s = %v (present %v), want at least %v", series, v, ok, n)
		}
	}
	if v, ok := metricValue(body, `schedlab_reconcile_duration_seconds_count{result="success"}`); !ok || v < 1 {
		t.Errorf("no successful reconcile timed: %v %v", v, ok)
	}
	if v, ok := metricValue(body, "schedlab_simulation_duration_seconds_count"); !ok || v < 1 {
		t.Errorf("no prediction timed: %v %v", v, ok)
	}
	if v, ok := metricValue(body, "schedlab_nodes_locked"); !ok || v != 0 {
		t.Errorf("schedlab_nodes_locked = %v (present %v) after every experiment was deleted, want 0", v, ok)
	}
}
