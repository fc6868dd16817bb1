//! sprig's key and certificate functions through the template engine (`genPrivateKey`,
//! `genCA`, `genSelfSignedCert`, `genSignedCert`, their `WithKey` variants and
//! `buildCustomCert`), and, where Go 1.19 is installed, a differential check against Go's
//! `crypto/x509` and sprig: `tests/x509check` parses and verifies what the Rust functions
//! made, and makes keys and certificates for them to read.
//!
//! Outputs are random (keys, serial numbers, times), so the tests check structure: what Go
//! parses out of our PEM, whether chains verify, the key encodings, types, printing and errors.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use landscaper_templating::gotemplate::funcs::{Components, landscaper_template_funcs};
use landscaper_templating::gotemplate::render;
use serde_json::{Value as J, json};

fn run(text: &str) -> Result<String, String> {
    render(
        "t",
        text,
        &json!({}),
        &landscaper_template_funcs(Components::default()),
    )
    .map_err(|e| e.to_string())
}

fn ok(text: &str) -> String {
    run(text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn err(text: &str) -> String {
    match run(text) {
        Ok(out) => panic!("{text}: expected an error, got {out:?}"),
        Err(e) => e,
    }
}

/// Splits a template's output at `@@`.
fn parts(text: &str) -> Vec<String> {
    ok(text).split("@@").map(str::to_owned).collect()
}

fn pem_der(text: &str, kind: &str) -> Vec<u8> {
    use base64::Engine as _;
    let begin = format!("-----BEGIN {kind}-----\n");
    let end = format!("-----END {kind}-----\n");
    assert!(text.starts_with(&begin), "{text}");
    assert!(text.ends_with(&end), "{text}");
    let body: String = text[begin.len()..text.len() - end.len()]
        .lines()
        .inspect(|l| assert!(l.len() <= 64))
        .collect();
    base64::engine::general_purpose::STANDARD
        .decode(body)
        .unwrap()
}

fn x509(text: &str) -> x509_cert::Certificate {
    use x509_cert::der::Decode as _;
    x509_cert::Certificate::from_der(&pem_der(text, "CERTIFICATE")).unwrap()
}

#[test]
fn private_keys_have_gos_types_and_encodings() {
    let rsa = ok(r#"{{ genPrivateKey "rsa" }}"#);
    {
        use rsa::pkcs1::DecodeRsaPrivateKey as _;
        use rsa::traits::PublicKeyParts as _;
        let key = rsa::RsaPrivateKey::from_pkcs1_der(&pem_der(&rsa, "RSA PRIVATE KEY")).unwrap();
        assert_eq!(key.n().bits(), 4096);
        assert_eq!(key.e(), &rsa::BigUint::from(65537u32));
    }
    if go_installed() {
        // Go reads the key, and writes it back byte for byte the same.
        let r = go_check(&build_checker(), &[json!({"name": "rsa", "key": rsa})]);
        assert_eq!(r["rsa"]["key_type"], "rsa-4096", "{}", r["rsa"]);
        assert_eq!(r["rsa"]["go_encoding"], true, "{}", r["rsa"]);
        assert_eq!(r["rsa"]["key_works"], "ok", "{}", r["rsa"]);
    }
    let ec = ok(r#"{{ genPrivateKey "ecdsa" }}"#);
    let der = pem_der(&ec, "EC PRIVATE KEY");
    assert_eq!(der.len(), 121, "SEC 1 with the curve and the public key");
    let ed = ok(r#"{{ genPrivateKey "ed25519" }}"#);
    assert_eq!(
        &pem_der(&ed, "PRIVATE KEY")[..16],
        [
            0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22,
            0x04, 0x20
        ],
        "PKCS#8 v1 without the public key, as Go writes it"
    );
    assert_ne!(ed, ok(r#"{{ genPrivateKey "ed25519" }}"#), "random");
    // sprig returns its error text as the result.
    assert_eq!(ok(r#"{{ genPrivateKey "rsa2" }}"#), "Unknown type rsa2");
    assert_eq!(
        err(r#"{{ genPrivateKey 1 }}"#),
        "template: t:1:17: executing \"t\" at <1>: expected string; found 1"
    );
}

#[test]
fn certificates_are_sprig_certificate_structs() {
    let text = r#"{{ $ca := genCAWithKey "ca" 3 (genPrivateKey "ed25519") }}"#;
    assert_eq!(
        ok(&format!(
            "{text}{{{{ typeOf $ca }}}} {{{{ kindOf $ca }}}} {{{{ if $ca }}}}t{{{{ end }}}}"
        )),
        "sprig.certificate struct t"
    );
    // Printed as Go prints the struct.
    let printed = parts(&format!(
        "{text}{{{{ $ca }}}}@@{{{{ printf \"%+v\" $ca }}}}@@{{{{ printf \"%#v\" $ca }}}}@@{{{{ $ca.Cert }}}}@@{{{{ $ca.Key }}}}"
    ));
    let (cert, key) = (&printed[3], &printed[4]);
    assert_eq!(printed[0], format!("{{{cert} {key}}}"));
    assert_eq!(printed[1], format!("{{Cert:{cert} Key:{key}}}"));
    let q = |s: &str| serde_json::to_string(s).unwrap();
    assert_eq!(
        printed[2],
        format!("sprig.certificate{{Cert:{}, Key:{}}}", q(cert), q(key))
    );
    // JSON has the field names.
    assert_eq!(
        ok(&format!(
            "{text}{{{{ toJson $ca | fromJson | keys | sortAlpha }}}}"
        )),
        "[Cert Key]"
    );
    // A struct has its fields, no others; map functions do not take it.
    assert!(
        err(&format!("{text}{{{{ $ca.Nope }}}}"))
            .ends_with("can't evaluate field Nope in type sprig.certificate"),
    );
    assert!(err(&format!("{text}{{{{ keys $ca }}}}")).ends_with(
        "wrong type for value; expected map[string]interface {}; got sprig.certificate"
    ),);
    // And only it is a certificate.
    assert!(
        err(r#"{{ genSignedCert "x" nil nil 1 (dict "Cert" "a" "Key" "b") }}"#).ends_with(
            "wrong type for value; expected sprig.certificate; got map[string]interface {}"
        )
    );
}

#[test]
fn a_ca_signs_certificates_for_names_and_addresses() {
    let p = parts(
        r#"{{ $ca := genCA "my-ca" 365 }}{{ $c := genSignedCert "web" (list "10.0.0.1" "fd00::1") (list "web.example" "web") 30 $ca }}{{ $ca.Cert }}@@{{ $ca.Key }}@@{{ $c.Cert }}@@{{ $c.Key }}"#,
    );
    let (ca, leaf) = (x509(&p[0]), x509(&p[2]));
    pem_der(&p[1], "RSA PRIVATE KEY");
    pem_der(&p[3], "RSA PRIVATE KEY");
    assert_eq!(ca.tbs_certificate.subject.to_string(), "CN=my-ca");
    assert_eq!(leaf.tbs_certificate.subject.to_string(), "CN=web");
    assert_eq!(leaf.tbs_certificate.issuer, ca.tbs_certificate.subject);
    let days = |c: &x509_cert::Certificate| {
        let v = &c.tbs_certificate.validity;
        (v.not_after.to_unix_duration() - v.not_before.to_unix_duration()).as_secs() / 86_400
    };
    assert_eq!((days(&ca), days(&leaf)), (365, 30));
    let bits = |c: &x509_cert::Certificate| {
        use rsa::pkcs1::DecodeRsaPublicKey as _;
        use rsa::traits::PublicKeyParts as _;
        let spki = &c.tbs_certificate.subject_public_key_info;
        rsa::RsaPublicKey::from_pkcs1_der(spki.subject_public_key.raw_bytes())
            .unwrap()
            .n()
            .bits()
    };
    assert_eq!((bits(&ca), bits(&leaf)), (2048, 2048), "sprig's RSA 2048");
    // The leaf's signature verifies with the CA's key.
    {
        use rsa::pkcs1::DecodeRsaPublicKey as _;
        use x509_cert::der::Encode as _;
        let spki = &ca.tbs_certificate.subject_public_key_info;
        let public =
            rsa::RsaPublicKey::from_pkcs1_der(spki.subject_public_key.raw_bytes()).unwrap();
        let tbs = leaf.tbs_certificate.to_der().unwrap();
        let digest = <rsa::sha2::Sha256 as rsa::sha2::Digest>::digest(&tbs);
        public
            .verify(
                rsa::Pkcs1v15Sign::new::<rsa::sha2::Sha256>(),
                &digest,
                leaf.signature.raw_bytes(),
            )
            .unwrap();
    }
}

#[test]
fn with_key_variants_use_the_given_key() {
    for kind in ["ecdsa", "ed25519"] {
        let out = ok(&format!(
            r#"{{{{ $k := genPrivateKey "{kind}" }}}}{{{{ $ca := genCAWithKey "ca" 1 $k }}}}{{{{ $s := genSelfSignedCertWithKey "s" nil (list "s") 1 $k }}}}{{{{ $l := genSignedCertWithKey "l" nil nil 1 $ca $k }}}}{{{{ eq $ca.Key $k }}}} {{{{ eq $s.Key $k }}}} {{{{ eq $l.Key $k }}}}"#
        ));
        assert_eq!(out, "true true true", "{kind}");
    }
    // The key's public half is the certificate's.
    let p = parts(
        r#"{{ $k := genPrivateKey "ed25519" }}{{ $c := genSelfSignedCertWithKey "s" nil nil 1 $k }}{{ $c.Cert }}@@{{ $k }}"#,
    );
    let spki = x509(&p[0]).tbs_certificate.subject_public_key_info;
    let seed: [u8; 32] = pem_der(&p[1], "PRIVATE KEY")[16..].try_into().unwrap();
    let public = ed25519_dalek::SigningKey::from_bytes(&seed)
        .verifying_key()
        .to_bytes();
    assert_eq!(spki.subject_public_key.raw_bytes(), public);
    assert_eq!(spki.algorithm.oid.to_string(), "1.3.101.112");
}

#[test]
fn custom_certificates_round_trip_and_sign() {
    let out = ok(
        r#"{{ $ca := genCAWithKey "ca" 1 (genPrivateKey "ecdsa") }}{{ $b := buildCustomCert (b64enc $ca.Cert) (b64enc $ca.Key) }}{{ eq $b.Cert $ca.Cert }} {{ eq $b.Key $ca.Key }} {{ typeOf $b }} {{ $l := genSignedCertWithKey "l" nil nil 1 $b (genPrivateKey "ecdsa") }}{{ typeOf $l }}"#,
    );
    assert_eq!(out, "true true sprig.certificate sprig.certificate");
}

#[test]
fn bad_arguments_fail_with_sprigs_messages() {
    let cases: &[(&str, &str)] = &[
        (
            r#"{{ genCAWithKey "x" 1 "nope" }}"#,
            "error calling genCAWithKey: parsing private key: no PEM data in input",
        ),
        (
            r#"{{ genCAWithKey "x" 1 "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n" }}"#,
            "error calling genCAWithKey: parsing private key: no private key data in PEM block of type CERTIFICATE",
        ),
        (
            r#"{{ genSelfSignedCertWithKey "x" (list 1) nil 1 (genPrivateKey "ecdsa") }}"#,
            "error calling genSelfSignedCertWithKey: error parsing ip: 1 is not a string",
        ),
        (
            r#"{{ genSelfSignedCert "x" (list "300.1.1.1") nil 1 }}"#,
            "error calling genSelfSignedCert: error parsing ip: 300.1.1.1",
        ),
        (
            r#"{{ genSelfSignedCert "x" nil (list "a" 2) 1 }}"#,
            "error calling genSelfSignedCert: error processing alternate dns name: 2 is not a string",
        ),
        (
            r#"{{ genSelfSignedCertWithKey "x" nil (list "é.example") 1 (genPrivateKey "ecdsa") }}"#,
            "error calling genSelfSignedCertWithKey: error creating certificate: x509: \"é.example\" cannot be encoded as an IA5String",
        ),
        (
            r#"{{ buildCustomCert "!" "" }}"#,
            "error calling buildCustomCert: unable to decode base64 certificate",
        ),
        (
            r#"{{ buildCustomCert "" "" }}"#,
            "error calling buildCustomCert: unable to decode certificate",
        ),
        (
            r#"{{ $ca := genCAWithKey "ca" 1 (genPrivateKey "ecdsa") }}{{ genSignedCertWithKey "x" nil nil 1 (buildCustomCert (b64enc $ca.Cert) (b64enc (genPrivateKey "ecdsa"))) (genPrivateKey "ecdsa") }}"#,
            "error calling genSignedCertWithKey: error creating certificate: x509: provided PrivateKey doesn't match parent's PublicKey",
        ),
        // The variants that make a new key leave making it (and the certificate) to the first
        // reader of the result, but check their inputs at the call, result used or not.
        (
            r#"{{ $c := genSelfSignedCert "x" nil (list "é.example") 1 }}"#,
            "error calling genSelfSignedCert: error creating certificate: x509: \"é.example\" cannot be encoded as an IA5String",
        ),
        (
            r#"{{ $c := genCA (b64dec "/w==") 1 }}"#,
            "error calling genCA: error creating certificate: asn1: string not valid UTF-8",
        ),
        (
            r#"{{ $ca := genCAWithKey "ca" 1 (genPrivateKey "ecdsa") }}{{ $c := genSignedCert "x" nil (list "é.example") 1 $ca }}"#,
            "error calling genSignedCert: error creating certificate: x509: \"é.example\" cannot be encoded as an IA5String",
        ),
        (
            r#"{{ $ca := genCAWithKey "ca" 1 (genPrivateKey "ecdsa") }}{{ $c := genSignedCert "x" nil nil 1 (buildCustomCert (b64enc $ca.Cert) (b64enc (genPrivateKey "ecdsa"))) }}"#,
            "error calling genSignedCert: error creating certificate: x509: provided PrivateKey doesn't match parent's PublicKey",
        ),
    ];
    for (text, want) in cases {
        let got = err(text);
        assert!(got.ends_with(want), "{text}\n got: {got}\nwant: ...{want}");
    }
}

// --- against Go ------------------------------------------------------------------------------

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn go_installed() -> bool {
    let go = Command::new("go")
        .arg("version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    go && Path::new("/usr/share/gocode/src/github.com/Masterminds/sprig").is_dir()
}

/// Builds tests/x509check (GOPATH mode, offline; cached by the hash of its source).
fn build_checker() -> PathBuf {
    use sha2::Digest as _;
    let source = manifest_dir().join("tests/x509check/main.go");
    let hash = sha2::Sha256::digest(std::fs::read(&source).unwrap());
    let hex: String = hash[..8].iter().map(|b| format!("{b:02x}")).collect();
    let cache = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| manifest_dir().join("../target"))
        .join("oracle");
    std::fs::create_dir_all(cache.join("gocache")).unwrap();
    let bin = cache.join(format!("x509check-{hex}"));
    if !bin.exists() {
        let tmp = cache.join(format!("x509check-{hex}.tmp.{}", std::process::id()));
        let out = Command::new("go")
            .args(["build", "-o"])
            .arg(&tmp)
            .arg(&source)
            .env("GO111MODULE", "off")
            .env("GOPATH", "/usr/share/gocode")
            .env("GOCACHE", cache.join("gocache"))
            .env("GOFLAGS", "")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "building x509check failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::fs::rename(&tmp, &bin).unwrap();
    }
    bin
}

fn go(bin: &Path, mode: &str, stdin: &str) -> String {
    use std::io::Write as _;
    let mut child = Command::new(bin)
        .arg(mode)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "x509check {mode}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Asks Go about each item ({"name", "cert"?, "key"?, "ca"?}); the answers by name.
fn go_check(bin: &Path, items: &[J]) -> std::collections::BTreeMap<String, J> {
    let input: String = items.iter().map(|i| format!("{i}\n")).collect();
    go(bin, "check", &input)
        .lines()
        .map(|l| {
            let v: J = serde_json::from_str(l).unwrap();
            (v["name"].as_str().unwrap().to_owned(), v)
        })
        .collect()
}

/// Go's `x509.KeyUsage` bits and `ExtKeyUsage` values.
const KU_DIGITAL_SIGNATURE: i64 = 1;
const KU_KEY_ENCIPHERMENT: i64 = 4;
const KU_CERT_SIGN: i64 = 32;
const EKU_SERVER_CLIENT: [i64; 2] = [1, 2];

#[test]
fn go_reads_and_verifies_what_we_make() {
    if !go_installed() {
        println!("SKIP: Go 1.19 + sprig not installed (scripts/test.sh installs them)");
        return;
    }
    let bin = build_checker();
    let p = parts(concat!(
        r#"{{ $ca := genCA "rust-ca" 30 }}"#,
        r#"{{ $leaf := genSignedCert "rust-leaf" (list "10.1.2.3" "::1") (list "a.example" "b.example") 7 $ca }}"#,
        r#"{{ $self := genSelfSignedCert "rust-self" (list "127.0.0.1") (list "localhost") 2 }}"#,
        r#"{{ $eck := genPrivateKey "ecdsa" }}{{ $edk := genPrivateKey "ed25519" }}"#,
        r#"{{ $ecca := genCAWithKey "ec-ca" 5 $eck }}"#,
        r#"{{ $edleaf := genSignedCertWithKey "ed-leaf" nil (list "ed.example") 5 $ecca $edk }}"#,
        r#"{{ $edself := genSelfSignedCertWithKey "" (list "192.168.0.1") nil 5 $edk }}"#,
        r#"{{ $ca.Cert }}@@{{ $ca.Key }}@@{{ $leaf.Cert }}@@{{ $leaf.Key }}@@{{ $self.Cert }}@@{{ $self.Key }}"#,
        r#"@@{{ $ecca.Cert }}@@{{ $ecca.Key }}@@{{ $edleaf.Cert }}@@{{ $edleaf.Key }}@@{{ $edself.Cert }}@@{{ $edself.Key }}"#,
        r#"@@{{ genPrivateKey "dsa" }}"#,
    ));
    let items = vec![
        json!({"name": "ca", "cert": p[0], "key": p[1]}),
        json!({"name": "leaf", "cert": p[2], "key": p[3], "ca": p[0]}),
        json!({"name": "self", "cert": p[4], "key": p[5]}),
        json!({"name": "ecca", "cert": p[6], "key": p[7]}),
        json!({"name": "edleaf", "cert": p[8], "key": p[9], "ca": p[6]}),
        json!({"name": "edself", "cert": p[10], "key": p[11]}),
        json!({"name": "dsa", "key": p[12]}),
    ];
    let r = go_check(&bin, &items);
    let now = jiff::Timestamp::now().as_second();
    for (name, cn, days, is_ca, key_type) in [
        ("ca", "rust-ca", 30.0, true, "rsa-2048"),
        ("leaf", "rust-leaf", 7.0, false, "rsa-2048"),
        ("self", "rust-self", 2.0, false, "rsa-2048"),
        ("ecca", "ec-ca", 5.0, true, "ecdsa-P-256"),
        ("edleaf", "ed-leaf", 5.0, false, "ed25519"),
        ("edself", "", 5.0, false, "ed25519"),
    ] {
        let g = &r[name];
        let ctx = format!("{name}: {g}");
        assert_eq!(g["parse_error"], J::Null, "{ctx}");
        assert_eq!(g["version"], 3, "{ctx}");
        assert_eq!(g["cn"], cn, "{ctx}");
        assert_eq!(g["days"], days, "{ctx}");
        assert!(
            (g["not_before"].as_i64().unwrap() - now).abs() < 120,
            "{ctx}"
        );
        assert_eq!(g["is_ca"], is_ca, "{ctx}");
        assert_eq!(g["bc_valid"], true, "{ctx}");
        assert_eq!(g["max_path_len"], -1, "{ctx}");
        let ku = KU_DIGITAL_SIGNATURE | KU_KEY_ENCIPHERMENT | if is_ca { KU_CERT_SIGN } else { 0 };
        assert_eq!(g["key_usage"], ku, "{ctx}");
        assert_eq!(g["ext_key_usage"], json!(EKU_SERVER_CLIENT), "{ctx}");
        assert!(g["serial_bits"].as_i64().unwrap() <= 128, "{ctx}");
        assert!(g["serial_bits"].as_i64().unwrap() > 64, "{ctx}");
        assert_eq!(g["key_pair"], "ok", "{ctx}");
        assert_eq!(g["public_matches"], true, "{ctx}");
        assert_eq!(g["verify"], "ok", "{ctx}");
        assert_eq!(g["key_type"], key_type, "{ctx}");
        assert_eq!(g["go_encoding"], true, "Go encodes the key the same: {ctx}");
        assert_eq!(g["key_works"], "ok", "{ctx}");
        let mut critical = vec!["2.5.29.15", "2.5.29.19"];
        if cn.is_empty() {
            critical.push("2.5.29.17");
        }
        assert_eq!(g["critical"], json!(critical), "{ctx}");
        assert_eq!(
            g["skid"].as_str().unwrap().len(),
            if is_ca { 40 } else { 0 },
            "{ctx}"
        );
    }
    assert_eq!(r["ca"]["issuer"], "rust-ca");
    assert_eq!(r["leaf"]["issuer"], "rust-ca");
    assert_eq!(r["leaf"]["akid"], r["ca"]["skid"]);
    assert_eq!(r["edleaf"]["akid"], r["ecca"]["skid"]);
    assert_eq!(r["ca"]["akid"], "");
    assert_eq!(r["leaf"]["dns"], json!(["a.example", "b.example"]));
    assert_eq!(r["leaf"]["ips"], json!(["10.1.2.3", "::1"]));
    assert_eq!(r["edself"]["ips"], json!(["192.168.0.1"]));
    assert_eq!(
        r["leaf"]["extensions"],
        json!([
            "2.5.29.15",
            "2.5.29.37",
            "2.5.29.19",
            "2.5.29.35",
            "2.5.29.17"
        ])
    );
    assert_eq!(r["ca"]["sig_alg"], "SHA256-RSA");
    assert_eq!(r["edleaf"]["sig_alg"], "ECDSA-SHA256");
    assert_eq!(r["edself"]["sig_alg"], "Ed25519");
    assert_eq!(r["edleaf"]["pub_alg"], "Ed25519");
    // sprig's DSA key: L2048 N256 parameters, Y = G^X mod P, and it signs with Go's crypto/dsa.
    let g = &r["dsa"];
    assert_eq!(g["key_type"], "dsa-2048-256", "{g}");
    assert_eq!(g["go_encoding"], true, "{g}");
    assert_eq!(g["key_works"], "ok", "{g}");
}

#[test]
fn we_read_and_sign_with_what_go_makes() {
    if !go_installed() {
        println!("SKIP: Go 1.19 + sprig not installed (scripts/test.sh installs them)");
        return;
    }
    let bin = build_checker();
    let made: J = serde_json::from_str(&go(&bin, "make", "")).unwrap();
    let s = |k: &str| made[k].as_str().unwrap().to_owned();
    let data = json!({
        "ca_cert": s("ca_cert"), "ca_key": s("ca_key"),
        "self_cert": s("self_cert"), "self_key": s("self_key"),
        "keys": {
            "rsa_pkcs1": s("rsa_pkcs1"), "rsa_pkcs8": s("rsa_pkcs8"),
            "ec_sec1": s("ec_sec1"), "ec_pkcs8": s("ec_pkcs8"),
            "ed25519": s("ed25519"), "gen_ecdsa": s("gen_ecdsa"), "gen_ed25519": s("gen_ed25519"),
        },
    });
    let funcs = landscaper_template_funcs(Components::default());
    let run =
        |text: &str| render("t", text, &data, &funcs).unwrap_or_else(|e| panic!("{text}: {e}"));

    // Go's keys, in every encoding, are read and given back in Go's own encoding (PKCS#8 RSA
    // and EC keys come back as PKCS#1 and SEC 1, as sprig's pemBlockForKey writes them).
    for (input, canonical) in [
        ("rsa_pkcs1", "rsa_pkcs1"),
        ("rsa_pkcs8", "rsa_pkcs1"),
        ("ec_sec1", "ec_sec1"),
        ("ec_pkcs8", "ec_sec1"),
        ("ed25519", "ed25519"),
        ("gen_ecdsa", "gen_ecdsa"),
        ("gen_ed25519", "gen_ed25519"),
    ] {
        let key = run(&format!(
            r#"{{{{ (genCAWithKey "k" 1 (index .keys "{input}")).Key }}}}"#
        ));
        assert_eq!(key, s(canonical), "{input}");
    }

    // Go's CA (sprig's genCA) signs our certificates; Go verifies the chain.
    let out = run(concat!(
        r#"{{ $ca := buildCustomCert (b64enc .ca_cert) (b64enc .ca_key) }}"#,
        r#"{{ $a := genSignedCert "from-go-ca" (list "10.0.0.7") (list "x.example") 3 $ca }}"#,
        r#"{{ $b := genSignedCertWithKey "from-go-ca-ec" nil nil 3 $ca .keys.ec_pkcs8 }}"#,
        r#"{{ $a.Cert }}@@{{ $a.Key }}@@{{ $b.Cert }}@@{{ $b.Key }}"#,
    ));
    let p: Vec<&str> = out.split("@@").collect();
    let r = go_check(
        &bin,
        &[
            json!({"name": "a", "cert": p[0], "key": p[1], "ca": s("ca_cert")}),
            json!({"name": "b", "cert": p[2], "key": p[3], "ca": s("ca_cert")}),
        ],
    );
    let go_ca = go_check(&bin, &[json!({"name": "ca", "cert": s("ca_cert")})]);
    for name in ["a", "b"] {
        let g = &r[name];
        assert_eq!(g["verify"], "ok", "{g}");
        assert_eq!(g["key_pair"], "ok", "{g}");
        assert_eq!(g["issuer"], "go-ca", "{g}");
        assert_eq!(g["akid"], go_ca["ca"]["skid"], "{g}");
    }
    assert_eq!(r["a"]["ips"], json!(["10.0.0.7"]));
    assert_eq!(r["b"]["key_type"], "ecdsa-P-256");

    // A self-signed certificate is no CA, but sprig signs with it all the same (Go checks
    // nothing more); the leaf verifies against it as a root only if it were a CA.
    let out = run(concat!(
        r#"{{ $s := buildCustomCert (b64enc .self_cert) (b64enc .self_key) }}"#,
        r#"{{ (genSignedCertWithKey "under-self" nil nil 1 $s .keys.ed25519).Cert }}"#,
    ));
    let r = go_check(
        &bin,
        &[json!({"name": "u", "cert": out, "ca": s("self_cert")})],
    );
    assert_eq!(r["u"]["issuer"], "go-self");
    assert_ne!(
        r["u"]["verify"], "ok",
        "Go refuses a chain through a non-CA"
    );

    // Keys Go has and the appliance does not: P-384.
    let e = render(
        "t",
        r#"{{ genCAWithKey "k" 1 .k }}"#,
        &json!({"k": s("ec384_sec1")}),
        &funcs,
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.ends_with("parsing private key: parsing EC private key from PEM: the elliptic curve P-384 is not supported in the appliance (P-256 is)"),
        "{e}"
    );
}
