// Package testcert makes throwaway certificate authorities and leaf
// certificates for loopback HTTPS fixtures, so tests can run real TLS against
// names such as "cdn.test" without touching the network or the system trust
// store. Nothing here is fit for production: keys live in memory only.
package testcert

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// Authority is a throwaway certificate authority.
type Authority struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

// NewAuthority creates a CA valid from an hour ago for a day.
func NewAuthority() (*Authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("testcert: generate CA key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "lectern test CA", Organization: []string{"lectern tests"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("testcert: sign CA: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("testcert: parse CA: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &Authority{cert: cert, key: key, pool: pool}, nil
}

// Pool is a client trust pool holding only this authority.
func (a *Authority) Pool() *x509.CertPool { return a.pool }

// CertPEM is the authority's certificate in PEM form, for clients configured
// by file (a headless browser, curl).
func (a *Authority) CertPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: a.cert.Raw})
}

// Leaf issues a server certificate for hosts, each a DNS name (wildcards
// allowed) or an IP literal.
func (a *Authority) Leaf(hosts ...string) (tls.Certificate, error) {
	if len(hosts) == 0 {
		return tls.Certificate{}, errors.New("testcert: a leaf needs at least one host")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("testcert: generate leaf key: %w", err)
	}
	return a.leafFor(key, hosts)
}

// leafFor signs a leaf for hosts over key.
func (a *Authority) leafFor(key *ecdsa.PrivateKey, hosts []string) (tls.Certificate, error) {
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: hosts[0]},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, &key.PublicKey, a.key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("testcert: sign leaf for %v: %w", hosts, err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("testcert: parse leaf: %w", err)
	}
	return tls.Certificate{Certificate: [][]byte{der, a.cert.Raw}, PrivateKey: key, Leaf: leaf}, nil
}

// OnDemand issues leaves signed by an Authority for whatever name a client
// asks for (its TLS server name), all on one key, so one SPKI hash pins every
// leaf. A client that sends no server name (it dialled an IP literal) gets
// the leaf for the fallback hosts.
type OnDemand struct {
	ca       *Authority
	key      *ecdsa.PrivateKey
	fallback []string
	spki     string

	mu     sync.Mutex
	leaves map[string]*tls.Certificate
}

// OnDemand starts issuing leaves on demand; fallback names the hosts (IP
// literals, usually) of the leaf for a client that sends no server name.
func (a *Authority) OnDemand(fallback ...string) (*OnDemand, error) {
	if len(fallback) == 0 {
		return nil, errors.New("testcert: on-demand leaves need at least one fallback host")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("testcert: generate leaf key: %w", err)
	}
	o := &OnDemand{ca: a, key: key, fallback: fallback, leaves: map[string]*tls.Certificate{}}
	leaf, err := o.leaf("")
	if err != nil {
		return nil, err
	}
	if o.spki, err = SPKIHash(*leaf); err != nil {
		return nil, err
	}
	return o, nil
}

// GetCertificate is tls.Config.GetCertificate: the leaf for the name asked.
func (o *OnDemand) GetCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	return o.leaf(strings.ToLower(strings.TrimSuffix(hello.ServerName, ".")))
}

// SPKIHash is the base64 SHA-256 of the key every leaf carries, the form
// Chromium's --ignore-certificate-errors-spki-list takes.
func (o *OnDemand) SPKIHash() string { return o.spki }

func (o *OnDemand) leaf(name string) (*tls.Certificate, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if c, ok := o.leaves[name]; ok {
		return c, nil
	}
	hosts := o.fallback
	if name != "" {
		hosts = []string{name}
	}
	c, err := o.ca.leafFor(o.key, hosts)
	if err != nil {
		return nil, err
	}
	o.leaves[name] = &c
	return &c, nil
}

// ServerConfig is a TLS server configuration presenting a leaf for hosts.
func (a *Authority) ServerConfig(hosts ...string) (*tls.Config, error) {
	leaf, err := a.Leaf(hosts...)
	if err != nil {
		return nil, err
	}
	return &tls.Config{Certificates: []tls.Certificate{leaf}, MinVersion: tls.VersionTLS12}, nil
}

// New is the one-call form for tests: a fresh authority, a server
// configuration for hosts, and the pool a client needs to trust it. It fails
// tb on any error.
func New(tb testing.TB, hosts ...string) (*tls.Config, *x509.CertPool) {
	tb.Helper()
	a, err := NewAuthority()
	if err != nil {
		tb.Fatal(err)
	}
	cfg, err := a.ServerConfig(hosts...)
	if err != nil {
		tb.Fatal(err)
	}
	return cfg, a.Pool()
}

// SPKIHash is the base64 SHA-256 of a certificate's public key, the form
// Chromium's --ignore-certificate-errors-spki-list takes.
func SPKIHash(cert tls.Certificate) (string, error) {
	leaf := cert.Leaf
	if leaf == nil {
		if len(cert.Certificate) == 0 {
			return "", errors.New("testcert: empty certificate")
		}
		var err error
		if leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return "", fmt.Errorf("testcert: parse leaf: %w", err)
		}
	}
	sum := sha256.Sum256(leaf.RawSubjectPublicKeyInfo)
	return base64.StdEncoding.EncodeToString(sum[:]), nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		// crypto/rand does not fail on supported platforms; a fixed serial
		// would still yield a usable throwaway certificate.
		return big.NewInt(time.Now().UnixNano())
	}
	return n
}
