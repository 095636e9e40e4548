package cluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// pki is the cluster's certificate material, all generated at start and written to dir.
type pki struct {
	dir string

	caCert []byte // PEM

	// file paths
	caCertFile, caKeyFile       string
	servingCertFile, servingKey string
	adminCertFile, adminKeyFile string
	saKeyFile, saPubFile        string
	adminCertPEM, adminKeyPEM   []byte
}

// newPKI creates a CA, a serving certificate for kube-apiserver on 127.0.0.1, a client
// certificate for a cluster admin (group system:masters), and the RSA key that signs service
// account tokens.
func newPKI(dir string) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	p := &pki{
		dir:             dir,
		caCertFile:      filepath.Join(dir, "ca.crt"),
		caKeyFile:       filepath.Join(dir, "ca.key"),
		servingCertFile: filepath.Join(dir, "apiserver.crt"),
		servingKey:      filepath.Join(dir, "apiserver.key"),
		adminCertFile:   filepath.Join(dir, "admin.crt"),
		adminKeyFile:    filepath.Join(dir, "admin.key"),
		saKeyFile:       filepath.Join(dir, "sa.key"),
		saPubFile:       filepath.Join(dir, "sa.pub"),
	}
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "schedlab-localcluster-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	p.caCert = pemBlock("CERTIFICATE", caDER)
	if err := writeFile(p.caCertFile, p.caCert); err != nil {
		return nil, err
	}
	if err := writeKey(p.caKeyFile, caKey); err != nil {
		return nil, err
	}

	issue := func(serial int64, tmpl *x509.Certificate, certFile, keyFile string) ([]byte, []byte, error) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, nil, err
		}
		tmpl.SerialNumber = big.NewInt(serial)
		tmpl.NotBefore = now.Add(-time.Hour)
		tmpl.NotAfter = now.Add(365 * 24 * time.Hour)
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			return nil, nil, err
		}
		certPEM := pemBlock("CERTIFICATE", der)
		if err := writeFile(certFile, certPEM); err != nil {
			return nil, nil, err
		}
		if err := writeKey(keyFile, key); err != nil {
			return nil, nil, err
		}
		keyPEM, _ := os.ReadFile(keyFile)
		return certPEM, keyPEM, nil
	}
	if _, _, err := issue(2, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP(serviceIP)},
	}, p.servingCertFile, p.servingKey); err != nil {
		return nil, fmt.Errorf("serving certificate: %w", err)
	}
	if p.adminCertPEM, p.adminKeyPEM, err = issue(3, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "schedlab-admin", Organization: []string{"system:masters"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, p.adminCertFile, p.adminKeyFile); err != nil {
		return nil, fmt.Errorf("admin certificate: %w", err)
	}

	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	if err := writeFile(p.saKeyFile, pemBlock("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(saKey))); err != nil {
		return nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, err
	}
	if err := writeFile(p.saPubFile, pemBlock("PUBLIC KEY", pub)); err != nil {
		return nil, err
	}
	return p, nil
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func writeKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	return writeFile(path, pemBlock("EC PRIVATE KEY", der))
}

func writeFile(path string, data []byte) error {
	return os.WriteFile(path, data, 0o600)
}
