package main

import (
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestClusterCertsInProcess: `hermes cluster certs` makes a CA once and
// member certificates it signed, good for both ends of a connection, with
// private keys only the owner reads; config.yaml's cluster.tls names them
// relative to the home, and a partial cluster.tls is refused.
func TestClusterCertsInProcess(t *testing.T) {
	quietEnv(t)
	home := t.TempDir()
	dir := filepath.Join(home, "certs")
	out, errOut, err := inHome(t, home, "cluster", "certs", dir, "node1", "gateway")
	if err != nil || !strings.Contains(out, "node1: ") {
		t.Fatalf("certs: %v %s %s", err, out, errOut)
	}
	caBefore, _ := os.ReadFile(filepath.Join(dir, "ca.pem"))
	// A second run adds a member under the same CA, and a server's
	// certificate with the addresses it is reached by.
	out, _, err = inHome(t, home, "cluster", "certs", dir, "node2", "etcd=127.0.0.1,etcd.internal")
	if err != nil || !strings.Contains(out, "etcd (for 127.0.0.1,etcd.internal): "+filepath.Join(dir, "etcd.pem")) {
		t.Fatalf("certs: %v %s", err, out)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "etcd.pem")); err != nil {
		t.Fatal(err)
	} else if blk, _ := pem.Decode(b); blk == nil {
		t.Fatal("etcd.pem holds no PEM")
	} else if c, err := x509.ParseCertificate(blk.Bytes); err != nil || len(c.IPAddresses) != 1 || !c.IPAddresses[0].Equal(net.ParseIP("127.0.0.1")) ||
		len(c.DNSNames) != 1 || c.DNSNames[0] != "etcd.internal" {
		t.Fatalf("etcd's certificate names %v %v (%v)", c.IPAddresses, c.DNSNames, err)
	}
	caAfter, _ := os.ReadFile(filepath.Join(dir, "ca.pem"))
	if string(caBefore) != string(caAfter) {
		t.Fatal("a second run replaced the CA")
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caAfter) {
		t.Fatal("ca.pem holds no certificate")
	}
	for _, n := range []string{"node1", "gateway", "node2"} {
		b, err := os.ReadFile(filepath.Join(dir, n+".pem"))
		if err != nil {
			t.Fatal(err)
		}
		blk, _ := pem.Decode(b)
		cert, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
			if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{u}}); err != nil {
				t.Fatalf("%s for %v: %v", n, u, err)
			}
		}
		if fi, err := os.Stat(filepath.Join(dir, n+"-key.pem")); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s's key: %v %v", n, fi, err)
		}
	}
	if _, _, err := inHome(t, home, "cluster", "certs", dir, "../evil"); err == nil {
		t.Fatal("a member name with a path was taken")
	}

	os.WriteFile(filepath.Join(home, "config.yaml"), []byte("cluster:\n  etcd: [127.0.0.1:2379]\n  tls: {ca: certs/ca.pem, cert: certs/node1.pem, key: certs/node1-key.pem}\n"), 0o600)
	cfg, err := nodeConfig(home, "", "")
	if err != nil || cfg.TLS == nil || cfg.TLS.CA != filepath.Join(dir, "ca.pem") || cfg.TLS.Key != filepath.Join(dir, "node1-key.pem") {
		t.Fatalf("cluster.tls resolved to %+v (%v)", cfg.TLS, err)
	}
	os.WriteFile(filepath.Join(home, "config.yaml"), []byte("cluster:\n  etcd: [127.0.0.1:2379]\n  tls: {ca: certs/ca.pem}\n"), 0o600)
	if _, err := nodeConfig(home, "", ""); err == nil || !strings.Contains(err.Error(), "cluster.tls needs") {
		t.Fatalf("a partial cluster.tls: %v", err)
	}
}
