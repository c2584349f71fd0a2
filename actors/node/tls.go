package node

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/asynkron/protoactor-go/remote"
)

// TLSFiles are the PEM files that make a process a member of a cluster
// whose remote speaks mutual TLS: the cluster's CA certificate, and this
// member's certificate (signed by that CA) and key. The CA is the
// boundary: a peer is a member exactly when it presents a certificate the
// CA signed, whatever its address (members are reached by IP and port, so
// no host name is checked). Keep the CA's key off the members.
type TLSFiles struct {
	CA, Cert, Key string
}

// remoteOptions makes the remote's gRPC server require and check a client
// certificate, and its connections present this member's and check the
// server's, both against the cluster CA (TLS 1.3).
func (f TLSFiles) remoteOptions() ([]remote.ConfigOption, error) {
	if f.CA == "" || f.Cert == "" || f.Key == "" {
		return nil, errors.New("cluster TLS needs the CA certificate, this member's certificate and its key (cluster.tls.ca, cert, key)")
	}
	caPEM, err := os.ReadFile(f.CA)
	if err != nil {
		return nil, fmt.Errorf("cluster TLS: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("cluster TLS: %s holds no PEM certificate", f.CA)
	}
	cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	if err != nil {
		return nil, fmt.Errorf("cluster TLS: %w", err)
	}
	server := &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{cert},
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}
	client := &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{cert},
		// The chain is checked below, against the cluster CA alone; the
		// name is not (members are addressed by IP and port).
		InsecureSkipVerify: true,
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			return verifyChain(raw, pool, x509.ExtKeyUsageServerAuth)
		}}
	return []remote.ConfigOption{
		remote.WithServerOptions(grpc.Creds(credentials.NewTLS(server))),
		remote.WithDialOptions(grpc.WithTransportCredentials(credentials.NewTLS(client))),
	}, nil
}

// verifyChain checks that the peer's certificate chains to roots for usage.
func verifyChain(raw [][]byte, roots *x509.CertPool, usage x509.ExtKeyUsage) error {
	if len(raw) == 0 {
		return errors.New("the peer presented no certificate")
	}
	certs := make([]*x509.Certificate, len(raw))
	for i, b := range raw {
		c, err := x509.ParseCertificate(b)
		if err != nil {
			return fmt.Errorf("the peer's certificate: %w", err)
		}
		certs[i] = c
	}
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	_, err := certs[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{usage}})
	if err != nil {
		return fmt.Errorf("the peer's certificate is not the cluster's: %w", err)
	}
	return nil
}

// MakeCerts writes into dir a cluster CA (ca.pem, ca-key.pem; made only
// when ca.pem is not there yet) and, for each name, a member certificate
// and key signed by it (NAME.pem, NAME-key.pem), valid for both ends of a
// connection for the given time. Keys are ECDSA P-256, written 0600. A
// name may carry the host names and addresses its server is reached by,
// NAME=host[,host…] (etcd=127.0.0.1,etcd.internal): clients that check the
// server's name, such as etcd's, need them.
func MakeCerts(dir string, names []string, valid time.Duration) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	caCert, caKey, err := loadOrMakeCA(dir, valid)
	if err != nil {
		return err
	}
	for _, name := range names {
		name, hosts, _ := strings.Cut(name, "=")
		if name == "" || name == "ca" || filepath.Base(name) != name {
			return fmt.Errorf("member name %q: give plain names, not ca or paths", name)
		}
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return err
		}
		tmpl := &x509.Certificate{SerialNumber: serial(), Subject: pkix.Name{CommonName: name, Organization: []string{"hermes cluster"}},
			NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(valid),
			KeyUsage:    x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
		for _, h := range strings.Split(hosts, ",") {
			switch h = strings.TrimSpace(h); {
			case h == "":
			case net.ParseIP(h) != nil:
				tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(h))
			default:
				tmpl.DNSNames = append(tmpl.DNSNames, h)
			}
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
		if err != nil {
			return err
		}
		if err := writePEM(filepath.Join(dir, name+".pem"), "CERTIFICATE", der, 0o644); err != nil {
			return err
		}
		kb, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			return err
		}
		if err := writePEM(filepath.Join(dir, name+"-key.pem"), "EC PRIVATE KEY", kb, 0o600); err != nil {
			return err
		}
	}
	return nil
}

func loadOrMakeCA(dir string, valid time.Duration) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	certPath, keyPath := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "ca-key.pem")
	if cb, err := os.ReadFile(certPath); err == nil {
		kb, err := os.ReadFile(keyPath)
		if err != nil {
			return nil, nil, fmt.Errorf("%s is there but not its key: %w", certPath, err)
		}
		cblock, _ := pem.Decode(cb)
		kblock, _ := pem.Decode(kb)
		if cblock == nil || kblock == nil {
			return nil, nil, fmt.Errorf("%s or %s is not PEM", certPath, keyPath)
		}
		cert, err := x509.ParseCertificate(cblock.Bytes)
		if err != nil {
			return nil, nil, err
		}
		key, err := x509.ParseECPrivateKey(kblock.Bytes)
		if err != nil {
			return nil, nil, err
		}
		return cert, key, nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: serial(), Subject: pkix.Name{CommonName: "hermes cluster CA", Organization: []string{"hermes cluster"}},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(valid),
		IsCA: true, BasicConstraintsValid: true, MaxPathLenZero: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	if err := writePEM(keyPath, "EC PRIVATE KEY", kb, 0o600); err != nil {
		return nil, nil, err
	}
	if err := writePEM(certPath, "CERTIFICATE", der, 0o644); err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return cert, key, err
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	return n
}

func writePEM(path, kind string, der []byte, mode os.FileMode) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), mode)
}

// ClientTLS is the TLS configuration of this process's connections to
// the servers the cluster relies on (etcd, a NATS bus): this member's
// certificate, and the server's checked against the cluster CA, name
// included (TLS 1.2 or later). The certificate and key may be left out
// together, for a server that does not ask for one.
func (f TLSFiles) ClientTLS() (*tls.Config, error) {
	if f.CA == "" || (f.Cert == "") != (f.Key == "") {
		return nil, errors.New("TLS needs the CA certificate, and this member's certificate and key together (ca, cert, key)")
	}
	caPEM, err := os.ReadFile(f.CA)
	if err != nil {
		return nil, fmt.Errorf("cluster TLS: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("cluster TLS: %s holds no PEM certificate", f.CA)
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool}
	if f.Cert != "" {
		cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
		if err != nil {
			return nil, fmt.Errorf("cluster TLS: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

// etcdTLS is the TLS configuration of the etcd client: nil for http://
// endpoints (or none named); for https:// ones, the cluster's certificate
// and CA when cluster TLS is set (etcd started with --client-cert-auth and
// the cluster CA as --trusted-ca-file), else the system's roots.
func etcdTLS(cfg Config) (*tls.Config, error) {
	secure := 0
	for _, e := range cfg.Etcd {
		if strings.HasPrefix(e, "https://") {
			secure++
		}
	}
	switch {
	case secure == 0:
		return nil, nil
	case secure != len(cfg.Etcd):
		return nil, fmt.Errorf("cluster.etcd %v: give every endpoint as https:// or none", cfg.Etcd)
	case cfg.TLS == nil:
		return &tls.Config{MinVersion: tls.VersionTLS12}, nil
	}
	return cfg.TLS.ClientTLS()
}
