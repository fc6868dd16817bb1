// Command x509check is the Go side of templating/tests/certs_go.rs: it reads keys and
// certificates that the Rust sprig functions made and reports what Go's crypto/x509 sees in
// them, and it makes keys and certificates with Go's sprig for the Rust functions to read.
//
//	x509check check   reads JSON lines {"name", "cert"?, "key"?, "ca"?} on stdin and prints one
//	                  JSON line per input: the certificate's fields as Go parses them, whether
//	                  cert and key form a pair (tls.X509KeyPair), whether the certificate
//	                  verifies against "ca" (or itself), and for a key alone its Go type and
//	                  whether Go's own encoding of it is the input text.
//	x509check make    prints one JSON object of PEM texts made by Go and sprig: keys of every
//	                  type and encoding, and a CA, a self-signed and a signed certificate.
//
// Build (GOPATH mode, offline, with Debian's golang-go and golang-github-masterminds-sprig-dev):
//
//	GO111MODULE=off GOPATH=/usr/share/gocode GOCACHE=$TMP/gocache GOFLAGS= \
//	    go build -o $TMP/x509check templating/tests/x509check/main.go
package main

import (
	"bufio"
	"bytes"
	"crypto"
	"crypto/dsa"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/asn1"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"strings"
	"text/template"
	"time"

	"github.com/Masterminds/sprig"
)

type input struct {
	Name string `json:"name"`
	Cert string `json:"cert"`
	Key  string `json:"key"`
	CA   string `json:"ca"`
}

type output struct {
	Name string `json:"name"`
	// Certificate fields.
	ParseError  string   `json:"parse_error,omitempty"`
	Version     int      `json:"version,omitempty"`
	CN          string   `json:"cn"`
	Issuer      string   `json:"issuer"`
	DNS         []string `json:"dns"`
	IPs         []string `json:"ips"`
	IsCA        bool     `json:"is_ca"`
	BCValid     bool     `json:"bc_valid"`
	MaxPathLen  int      `json:"max_path_len"`
	KeyUsage    int      `json:"key_usage"`
	ExtKeyUsage []int    `json:"ext_key_usage"`
	Extensions  []string `json:"extensions"`
	Critical    []string `json:"critical"`
	Days        float64  `json:"days"`
	NotBefore   int64    `json:"not_before"`
	SerialBits  int      `json:"serial_bits"`
	SKID        string   `json:"skid"`
	AKID        string   `json:"akid"`
	SigAlg      string   `json:"sig_alg"`
	PubAlg      string   `json:"pub_alg"`
	KeyPair     string   `json:"key_pair"`
	Verify      string   `json:"verify"`
	// Key fields.
	KeyType       string `json:"key_type,omitempty"`
	KeyError      string `json:"key_error,omitempty"`
	GoEncoding    bool   `json:"go_encoding"`
	KeyWorks      string `json:"key_works,omitempty"`
	PublicMatches bool   `json:"public_matches"`
}

// parseKey is sprig's parsePrivateKeyPEM.
func parseKey(text string) (crypto.PrivateKey, string, error) {
	block, _ := pem.Decode([]byte(text))
	if block == nil {
		return nil, "", fmt.Errorf("no PEM data")
	}
	switch block.Type {
	case "PRIVATE KEY":
		k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		return k, block.Type, err
	case "RSA PRIVATE KEY":
		k, err := x509.ParsePKCS1PrivateKey(block.Bytes)
		return k, block.Type, err
	case "EC PRIVATE KEY":
		k, err := x509.ParseECPrivateKey(block.Bytes)
		return k, block.Type, err
	case "DSA PRIVATE KEY":
		var k struct {
			Version       int
			P, Q, G, Y, X *big.Int
		}
		if _, err := asn1.Unmarshal(block.Bytes, &k); err != nil {
			return nil, block.Type, err
		}
		return &dsa.PrivateKey{
			PublicKey: dsa.PublicKey{Parameters: dsa.Parameters{P: k.P, Q: k.Q, G: k.G}, Y: k.Y},
			X:         k.X,
		}, block.Type, nil
	}
	return nil, block.Type, fmt.Errorf("unknown block %s", block.Type)
}

// encodeKey is sprig's pemBlockForKey.
func encodeKey(priv crypto.PrivateKey) string {
	var block *pem.Block
	switch k := priv.(type) {
	case *rsa.PrivateKey:
		block = &pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)}
	case *ecdsa.PrivateKey:
		b, _ := x509.MarshalECPrivateKey(k)
		block = &pem.Block{Type: "EC PRIVATE KEY", Bytes: b}
	case *dsa.PrivateKey:
		b, _ := asn1.Marshal(struct {
			Version       int
			P, Q, G, Y, X *big.Int
		}{0, k.P, k.Q, k.G, k.Y, k.X})
		block = &pem.Block{Type: "DSA PRIVATE KEY", Bytes: b}
	default:
		b, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			return ""
		}
		block = &pem.Block{Type: "PRIVATE KEY", Bytes: b}
	}
	return string(pem.EncodeToMemory(block))
}

func keyType(priv crypto.PrivateKey) string {
	switch k := priv.(type) {
	case *rsa.PrivateKey:
		return fmt.Sprintf("rsa-%d", k.N.BitLen())
	case *ecdsa.PrivateKey:
		return "ecdsa-" + k.Curve.Params().Name
	case ed25519.PrivateKey:
		return "ed25519"
	case *dsa.PrivateKey:
		return fmt.Sprintf("dsa-%d-%d", k.P.BitLen(), k.Q.BitLen())
	}
	return fmt.Sprintf("%T", priv)
}

// keyWorks signs and verifies with the key (DSA: also checks Y = G^X mod P).
func keyWorks(priv crypto.PrivateKey) error {
	msg := []byte("x509check")
	digest := make([]byte, 32)
	copy(digest, msg)
	switch k := priv.(type) {
	case *rsa.PrivateKey:
		if err := k.Validate(); err != nil {
			return err
		}
		sig, err := rsa.SignPKCS1v15(rand.Reader, k, crypto.SHA256, digest)
		if err != nil {
			return err
		}
		return rsa.VerifyPKCS1v15(&k.PublicKey, crypto.SHA256, digest, sig)
	case *ecdsa.PrivateKey:
		if !ecdsa.VerifyASN1(&k.PublicKey, digest, mustSign(ecdsa.SignASN1(rand.Reader, k, digest))) {
			return fmt.Errorf("ecdsa signature does not verify")
		}
	case ed25519.PrivateKey:
		if !ed25519.Verify(k.Public().(ed25519.PublicKey), msg, ed25519.Sign(k, msg)) {
			return fmt.Errorf("ed25519 signature does not verify")
		}
	case *dsa.PrivateKey:
		if new(big.Int).Exp(k.G, k.X, k.P).Cmp(k.Y) != 0 {
			return fmt.Errorf("dsa: Y != G^X mod P")
		}
		if !k.Q.ProbablyPrime(20) || !k.P.ProbablyPrime(20) {
			return fmt.Errorf("dsa: P or Q not prime")
		}
		r, s, err := dsa.Sign(rand.Reader, k, digest)
		if err != nil {
			return err
		}
		if !dsa.Verify(&k.PublicKey, digest, r, s) {
			return fmt.Errorf("dsa signature does not verify")
		}
	default:
		return fmt.Errorf("unknown key type %T", priv)
	}
	return nil
}

func mustSign(sig []byte, err error) []byte {
	if err != nil {
		return nil
	}
	return sig
}

func parseCert(text string) (*x509.Certificate, error) {
	block, _ := pem.Decode([]byte(text))
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("no CERTIFICATE block")
	}
	return x509.ParseCertificate(block.Bytes)
}

func check(in input) output {
	out := output{Name: in.Name, DNS: []string{}, IPs: []string{}, ExtKeyUsage: []int{}, Extensions: []string{}, Critical: []string{}}
	if in.Key != "" {
		priv, _, err := parseKey(in.Key)
		if err != nil {
			out.KeyError = err.Error()
		} else {
			out.KeyType = keyType(priv)
			out.GoEncoding = encodeKey(priv) == in.Key
			if err := keyWorks(priv); err != nil {
				out.KeyWorks = err.Error()
			} else {
				out.KeyWorks = "ok"
			}
		}
	}
	if in.Cert == "" {
		return out
	}
	cert, err := parseCert(in.Cert)
	if err != nil {
		out.ParseError = err.Error()
		return out
	}
	out.Version = cert.Version
	out.CN = cert.Subject.CommonName
	out.Issuer = cert.Issuer.CommonName
	out.DNS = append(out.DNS, cert.DNSNames...)
	for _, ip := range cert.IPAddresses {
		out.IPs = append(out.IPs, ip.String())
	}
	out.IsCA = cert.IsCA
	out.BCValid = cert.BasicConstraintsValid
	out.MaxPathLen = cert.MaxPathLen
	out.KeyUsage = int(cert.KeyUsage)
	for _, u := range cert.ExtKeyUsage {
		out.ExtKeyUsage = append(out.ExtKeyUsage, int(u))
	}
	for _, e := range cert.Extensions {
		out.Extensions = append(out.Extensions, e.Id.String())
		if e.Critical {
			out.Critical = append(out.Critical, e.Id.String())
		}
	}
	out.Days = cert.NotAfter.Sub(cert.NotBefore).Hours() / 24
	out.NotBefore = cert.NotBefore.Unix()
	out.SerialBits = cert.SerialNumber.BitLen()
	out.SKID = hex.EncodeToString(cert.SubjectKeyId)
	out.AKID = hex.EncodeToString(cert.AuthorityKeyId)
	out.SigAlg = cert.SignatureAlgorithm.String()
	out.PubAlg = cert.PublicKeyAlgorithm.String()
	if in.Key != "" {
		if _, err := tls.X509KeyPair([]byte(in.Cert), []byte(in.Key)); err != nil {
			out.KeyPair = err.Error()
		} else {
			out.KeyPair = "ok"
		}
		if priv, _, err := parseKey(in.Key); err == nil {
			if p, ok := priv.(interface{ Public() crypto.PublicKey }); ok {
				if eq, ok := p.Public().(interface{ Equal(crypto.PublicKey) bool }); ok {
					out.PublicMatches = eq.Equal(cert.PublicKey)
				}
			}
		}
	}
	roots := x509.NewCertPool()
	if in.CA != "" {
		ca, err := parseCert(in.CA)
		if err != nil {
			out.Verify = "ca: " + err.Error()
			return out
		}
		roots.AddCert(ca)
	} else {
		roots.AddCert(cert)
	}
	opts := x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}, CurrentTime: time.Now().Add(time.Minute)}
	if _, err := cert.Verify(opts); err != nil {
		out.Verify = err.Error()
	} else {
		out.Verify = "ok"
	}
	return out
}

func render(text string) string {
	t := template.Must(template.New("t").Funcs(sprig.TxtFuncMap()).Parse(text))
	var b bytes.Buffer
	if err := t.Execute(&b, nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	return b.String()
}

func make_() map[string]string {
	out := map[string]string{}
	var err error
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	out["rsa_pkcs1"] = encodeKey(rsaKey)
	b, _ := x509.MarshalPKCS8PrivateKey(rsaKey)
	out["rsa_pkcs8"] = string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: b}))
	ecKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	out["ec_sec1"] = encodeKey(ecKey)
	b, _ = x509.MarshalPKCS8PrivateKey(ecKey)
	out["ec_pkcs8"] = string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: b}))
	ecKey384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	out["ec384_sec1"] = encodeKey(ecKey384)
	_, edKey, _ := ed25519.GenerateKey(rand.Reader)
	out["ed25519"] = encodeKey(edKey)
	out["gen_ecdsa"] = render(`{{ genPrivateKey "ecdsa" }}`)
	out["gen_ed25519"] = render(`{{ genPrivateKey "ed25519" }}`)
	ca := render(`{{ $ca := genCA "go-ca" 30 }}{{ $ca.Cert }}|{{ $ca.Key }}`)
	parts := strings.SplitN(ca, "|", 2)
	out["ca_cert"], out["ca_key"] = parts[0], parts[1]
	ss := render(`{{ $c := genSelfSignedCert "go-self" (list "127.0.0.1") (list "go.example") 7 }}{{ $c.Cert }}|{{ $c.Key }}`)
	parts = strings.SplitN(ss, "|", 2)
	out["self_cert"], out["self_key"] = parts[0], parts[1]
	return out
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: x509check check|make")
		os.Exit(2)
	}
	enc := json.NewEncoder(os.Stdout)
	switch os.Args[1] {
	case "make":
		if err := enc.Encode(make_()); err != nil {
			panic(err)
		}
	case "check":
		sc := bufio.NewScanner(os.Stdin)
		sc.Buffer(make([]byte, 1<<20), 1<<26)
		for sc.Scan() {
			var in input
			if err := json.Unmarshal(sc.Bytes(), &in); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			if err := enc.Encode(check(in)); err != nil {
				panic(err)
			}
		}
		if err := sc.Err(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	default:
		fmt.Fprintln(os.Stderr, "usage: x509check check|make")
		os.Exit(2)
	}
}
