//! kubectl without tokens in URLs, as k3s does it: a TLS listener on loopback with a CA and a
//! serving certificate the daemon generates on first start (kept in `<data>/tls`, renewed before
//! they expire), and `<data>/kubeconfig.yaml` naming that listener, the CA and the API token as
//! bearer token (client-go sends tokens only over TLS). All files are 0600.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime};

use base64::Engine;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, UnixTime};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

/// The folder of the CA and serving certificate, inside the data folder.
pub const TLS_DIR: &str = "tls";
/// The kubeconfig written into the data folder.
pub const KUBECONFIG_FILE: &str = "kubeconfig.yaml";
/// Names of cluster, user and context in the kubeconfig.
pub const CONTEXT_NAME: &str = "landscaper-appliance";

const CA_LIFETIME: Duration = Duration::from_secs(10 * 365 * 24 * 3600);
const SERVING_LIFETIME: Duration = Duration::from_secs(365 * 24 * 3600);
/// A certificate is renewed when it would expire within this time.
pub const RENEW_BEFORE: Duration = Duration::from_secs(30 * 24 * 3600);

#[derive(Debug, thiserror::Error)]
pub enum KubeconfigError {
    #[error("{step} {path}: {source}")]
    Io {
        step: &'static str,
        path: String,
        source: std::io::Error,
    },
    #[error("generating the {what} certificate: {message}")]
    Generate { what: &'static str, message: String },
}

fn io(step: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> KubeconfigError {
    let path = path.display().to_string();
    move |source| KubeconfigError::Io { step, path, source }
}

/// The CA and serving certificate files of one data folder.
#[derive(Debug, Clone)]
pub struct TlsFiles {
    dir: PathBuf,
}

/// What [`TlsFiles::ensure`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Renewal {
    Kept,
    /// A new serving certificate from the existing CA.
    Serving,
    /// A new CA (first start, or the old one expires) and serving certificate.
    CaAndServing,
}

/// The CA's certificate (for the kubeconfig) and the serving certificate with its key.
pub struct Material {
    pub ca_pem: String,
    pub certified: Arc<CertifiedKey>,
}

impl TlsFiles {
    pub fn new(data_dir: &Path) -> TlsFiles {
        TlsFiles {
            dir: data_dir.join(TLS_DIR),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// Makes sure a CA and a serving certificate exist that stay valid beyond `now` +
    /// [`RENEW_BEFORE`], generating what is missing, broken or expiring.
    pub fn ensure(&self, now: SystemTime) -> Result<(Material, Renewal), KubeconfigError> {
        create_private_dir(&self.dir)?;
        let horizon = now + RENEW_BEFORE;
        let mut renewal = Renewal::Kept;
        let ca = match self.read_pair("ca") {
            Some((cert, key)) if valid_until_after(&cert, horizon, None) => (cert, key),
            _ => {
                renewal = Renewal::CaAndServing;
                let pair = generate_ca(now)?;
                self.write_pair("ca", &pair)?;
                pair
            }
        };
        let serving = match self.read_pair("serving") {
            Some((cert, key))
                if renewal == Renewal::Kept && valid_until_after(&cert, horizon, Some(&ca.0)) =>
            {
                (cert, key)
            }
            _ => {
                if renewal == Renewal::Kept {
                    renewal = Renewal::Serving;
                }
                let pair = generate_serving(now, &ca)?;
                self.write_pair("serving", &pair)?;
                pair
            }
        };
        let certified = certified_key(&serving)?;
        Ok((
            Material {
                ca_pem: ca.0,
                certified,
            },
            renewal,
        ))
    }

    fn read_pair(&self, name: &str) -> Option<(String, String)> {
        let cert = std::fs::read_to_string(self.path(&format!("{name}.crt"))).ok()?;
        let key = std::fs::read_to_string(self.path(&format!("{name}.key"))).ok()?;
        Some((cert, key))
    }

    fn write_pair(
        &self,
        name: &str,
        (cert, key): &(String, String),
    ) -> Result<(), KubeconfigError> {
        write_private(&self.path(&format!("{name}.key")), key.as_bytes())?;
        write_private(&self.path(&format!("{name}.crt")), cert.as_bytes())
    }
}

/// Whether the PEM certificate parses, is valid at `horizon` and, when `issuer` is given, was
/// signed by it (a serving certificate of an older CA is renewed).
fn valid_until_after(cert_pem: &str, horizon: SystemTime, issuer: Option<&str>) -> bool {
    let Ok(cert) = CertificateDer::from_pem_slice(cert_pem.as_bytes()) else {
        return false;
    };
    let Ok(time) = horizon.duration_since(SystemTime::UNIX_EPOCH) else {
        return false;
    };
    let time = UnixTime::since_unix_epoch(time);
    match issuer {
        Some(issuer_pem) => {
            let Ok(issuer) = CertificateDer::from_pem_slice(issuer_pem.as_bytes()) else {
                return false;
            };
            let Ok(anchor) = webpki::anchor_from_trusted_cert(&issuer) else {
                return false;
            };
            let Ok(end_entity) = webpki::EndEntityCert::try_from(&cert) else {
                return false;
            };
            end_entity
                .verify_for_usage(
                    webpki::ALL_VERIFICATION_ALGS,
                    &[anchor],
                    &[],
                    time,
                    webpki::KeyUsage::server_auth(),
                    None,
                    None,
                )
                .is_ok()
        }
        // webpki refuses a CA as an end entity: read the CA's notAfter directly.
        None => not_after(&cert).is_some_and(|not_after| not_after > time.as_secs()),
    }
}

/// `notAfter` of a DER certificate, in seconds since the epoch (UTCTime or GeneralizedTime).
fn not_after(cert: &CertificateDer<'_>) -> Option<u64> {
    let (_, parsed) = x509_parser::parse_x509_certificate(cert).ok()?;
    u64::try_from(parsed.validity().not_after.timestamp()).ok()
}

fn generation_error(what: &'static str) -> impl Fn(rcgen::Error) -> KubeconfigError {
    move |e| KubeconfigError::Generate {
        what,
        message: e.to_string(),
    }
}

fn validity(params: &mut CertificateParams, now: SystemTime, lifetime: Duration) {
    let start = time::OffsetDateTime::from(now) - time::Duration::hours(1);
    params.not_before = start;
    params.not_after = time::OffsetDateTime::from(now + lifetime);
}

fn ca_params(now: SystemTime) -> Result<CertificateParams, rcgen::Error> {
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params
        .distinguished_name
        .push(DnType::CommonName, "landscaper-appliance-ca");
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    validity(&mut params, now, CA_LIFETIME);
    Ok(params)
}

fn generate_ca(now: SystemTime) -> Result<(String, String), KubeconfigError> {
    let error = generation_error("CA");
    let key = KeyPair::generate().map_err(&error)?;
    let cert = ca_params(now)
        .and_then(|params| params.self_signed(&key))
        .map_err(&error)?;
    Ok((cert.pem(), key.serialize_pem()))
}

fn generate_serving(
    now: SystemTime,
    (ca_cert, ca_key): &(String, String),
) -> Result<(String, String), KubeconfigError> {
    let error = generation_error("serving");
    let ca_key = KeyPair::from_pem(ca_key).map_err(&error)?;
    let issuer = Issuer::from_ca_cert_pem(ca_cert, ca_key).map_err(&error)?;
    let key = KeyPair::generate().map_err(&error)?;
    let mut params = CertificateParams::new(vec![
        "127.0.0.1".to_string(),
        "::1".to_string(),
        "localhost".to_string(),
    ])
    .map_err(&error)?;
    params
        .distinguished_name
        .push(DnType::CommonName, "landscaper-appliance");
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    validity(&mut params, now, SERVING_LIFETIME);
    let cert = params.signed_by(&key, &issuer).map_err(&error)?;
    Ok((cert.pem(), key.serialize_pem()))
}

fn certified_key((cert, key): &(String, String)) -> Result<Arc<CertifiedKey>, KubeconfigError> {
    let error = |message: String| KubeconfigError::Generate {
        what: "serving",
        message,
    };
    let chain =
        vec![CertificateDer::from_pem_slice(cert.as_bytes()).map_err(|e| error(e.to_string()))?];
    let key = PrivateKeyDer::from_pem_slice(key.as_bytes()).map_err(|e| error(e.to_string()))?;
    let provider = rustls::crypto::ring::default_provider();
    let certified =
        CertifiedKey::from_der(chain, key, &provider).map_err(|e| error(e.to_string()))?;
    Ok(Arc::new(certified))
}

/// The serving certificate, swappable while the listener runs (renewal without a restart).
#[derive(Debug)]
pub struct RenewableCert(RwLock<Arc<CertifiedKey>>);

impl RenewableCert {
    pub fn new(certified: Arc<CertifiedKey>) -> Arc<RenewableCert> {
        Arc::new(RenewableCert(RwLock::new(certified)))
    }

    pub fn replace(&self, certified: Arc<CertifiedKey>) {
        if let Ok(mut current) = self.0.write() {
            *current = certified;
        }
    }
}

impl ResolvesServerCert for RenewableCert {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        self.0.read().ok().map(|c| c.clone())
    }
}

/// The rustls configuration of the kubeconfig listener.
pub fn server_config(cert: Arc<RenewableCert>) -> Arc<rustls::ServerConfig> {
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("ring supports the default protocol versions")
    .with_no_client_auth()
    .with_cert_resolver(cert);
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Arc::new(config)
}

/// What `doctor` reports about the kubeconfig and its listener's certificates (read only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Inspection {
    /// No kubeconfig yet (the daemon writes it when it starts).
    Missing(PathBuf),
    /// Usable: the path, its server, and the days the serving certificate stays valid.
    Usable {
        path: PathBuf,
        server: String,
        days_left: u64,
    },
    /// Something an operator must fix, in words.
    Problem(String),
}

pub fn inspect(data_dir: &Path, now: SystemTime) -> Inspection {
    use std::os::unix::fs::PermissionsExt;
    let path = data_dir.join(KUBECONFIG_FILE);
    let Ok(meta) = std::fs::metadata(&path) else {
        return Inspection::Missing(path);
    };
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Inspection::Problem(format!(
            "{}: mode {mode:04o}: it holds the API token; chmod 600 it",
            path.display()
        ));
    }
    let server = std::fs::read_to_string(&path)
        .ok()
        .and_then(|text| {
            text.lines()
                .find_map(|l| l.trim().strip_prefix("server: ").map(str::to_string))
        })
        .unwrap_or_default();
    let files = TlsFiles::new(data_dir);
    let (Some((ca, _)), Some((serving, _))) = (files.read_pair("ca"), files.read_pair("serving"))
    else {
        return Inspection::Problem(format!(
            "{}: the listener's certificates are missing (restart the daemon to make new ones)",
            files.dir.display()
        ));
    };
    if !valid_until_after(&serving, now, Some(&ca)) {
        return Inspection::Problem(format!(
            "{}: the serving certificate is expired or not signed by ca.crt (restart the daemon to renew it)",
            files.dir.display()
        ));
    }
    let expires = CertificateDer::from_pem_slice(serving.as_bytes())
        .ok()
        .as_ref()
        .and_then(not_after)
        .unwrap_or_default();
    let now_secs = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    Inspection::Usable {
        path,
        server,
        days_left: expires.saturating_sub(now_secs) / 86_400,
    }
}

/// The kubeconfig's text for `server` (an `https://` URL).
fn render_kubeconfig(server: &str, ca_pem: &str, token: &str) -> String {
    let ca = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    format!(
        "apiVersion: v1\n\
         kind: Config\n\
         clusters:\n\
         - name: {CONTEXT_NAME}\n  cluster:\n    server: {server}\n    certificate-authority-data: {ca}\n\
         users:\n\
         - name: {CONTEXT_NAME}\n  user:\n    token: {token}\n\
         contexts:\n\
         - name: {CONTEXT_NAME}\n  context:\n    cluster: {CONTEXT_NAME}\n    user: {CONTEXT_NAME}\n\
         current-context: {CONTEXT_NAME}\n"
    )
}

/// Writes `<data>/kubeconfig.yaml` for `server`, the CA and the token (0600, replaced
/// atomically); returns its path.
pub fn write_kubeconfig(
    data_dir: &Path,
    server: &str,
    ca_pem: &str,
    token: &str,
) -> Result<PathBuf, KubeconfigError> {
    let path = data_dir.join(KUBECONFIG_FILE);
    write_private(&path, render_kubeconfig(server, ca_pem, token).as_bytes())?;
    Ok(path)
}

fn create_private_dir(dir: &Path) -> Result<(), KubeconfigError> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    if !dir.exists() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(io("creating", dir))?;
    }
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
        .map_err(io("restricting", dir))
}

/// Writes a file readable only by its owner: a temporary file created 0600, then renamed.
fn write_private(path: &Path, bytes: &[u8]) -> Result<(), KubeconfigError> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let temporary = path.with_extension("tmp");
    let _ = std::fs::remove_file(&temporary);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&temporary)
        .map_err(io("creating", &temporary))?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(io("writing", &temporary))?;
    std::fs::rename(&temporary, path).map_err(io("replacing", path))
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn certificates_are_made_once_kept_and_renewed_before_they_expire() {
        let dir = tempfile::tempdir().unwrap();
        let files = TlsFiles::new(dir.path());
        let now = SystemTime::now();
        let (first, renewal) = files.ensure(now).unwrap();
        assert_eq!(renewal, Renewal::CaAndServing);
        for name in ["ca.crt", "ca.key", "serving.crt", "serving.key"] {
            assert_eq!(mode(&dir.path().join(TLS_DIR).join(name)), 0o600, "{name}");
        }
        assert_eq!(mode(&dir.path().join(TLS_DIR)), 0o700);

        let (again, renewal) = files.ensure(now + Duration::from_secs(3600)).unwrap();
        assert_eq!(renewal, Renewal::Kept);
        assert_eq!(again.ca_pem, first.ca_pem);

        // Eleven months on the serving certificate is within RENEW_BEFORE of its expiry.
        let later = now + Duration::from_secs(340 * 24 * 3600);
        let (renewed, renewal) = files.ensure(later).unwrap();
        assert_eq!(renewal, Renewal::Serving);
        assert_eq!(renewed.ca_pem, first.ca_pem, "the CA lasts ten years");
        assert_ne!(renewed.certified.cert, first.certified.cert);

        // A broken serving certificate is replaced; a broken CA replaces both.
        std::fs::write(dir.path().join(TLS_DIR).join("serving.crt"), "garbage").unwrap();
        assert_eq!(files.ensure(later).unwrap().1, Renewal::Serving);
        std::fs::write(dir.path().join(TLS_DIR).join("ca.crt"), "garbage").unwrap();
        let (replaced, renewal) = files.ensure(later).unwrap();
        assert_eq!(renewal, Renewal::CaAndServing);
        assert_ne!(replaced.ca_pem, first.ca_pem);
    }

    #[test]
    fn inspection_finds_missing_usable_and_unsafe_kubeconfigs() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let now = SystemTime::now();
        assert!(matches!(inspect(dir.path(), now), Inspection::Missing(_)));
        let (material, _) = TlsFiles::new(dir.path()).ensure(now).unwrap();
        let path =
            write_kubeconfig(dir.path(), "https://127.0.0.1:8443", &material.ca_pem, "t").unwrap();
        match inspect(dir.path(), now) {
            Inspection::Usable {
                server, days_left, ..
            } => {
                assert_eq!(server, "https://127.0.0.1:8443");
                assert!((363..=365).contains(&days_left), "{days_left}");
            }
            other => panic!("{other:?}"),
        }
        let far = now + Duration::from_secs(400 * 24 * 3600);
        assert!(
            matches!(inspect(dir.path(), far), Inspection::Problem(m) if m.contains("expired"))
        );
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(
            matches!(inspect(dir.path(), now), Inspection::Problem(m) if m.contains("chmod 600"))
        );
    }

    #[test]
    fn the_kubeconfig_is_private_and_names_server_ca_and_token() {
        let dir = tempfile::tempdir().unwrap();
        let path = write_kubeconfig(dir.path(), "https://127.0.0.1:8443", "PEM", "t0ken").unwrap();
        assert_eq!(mode(&path), 0o600);
        let text = std::fs::read_to_string(&path).unwrap();
        let parsed: serde_json::Value = serde_saphyr::from_str(&text).unwrap();
        assert_eq!(parsed["current-context"], CONTEXT_NAME);
        assert_eq!(
            parsed["clusters"][0]["cluster"]["server"],
            "https://127.0.0.1:8443"
        );
        assert_eq!(
            parsed["clusters"][0]["cluster"]["certificate-authority-data"],
            "UEVN"
        );
        assert_eq!(parsed["users"][0]["user"]["token"], "t0ken");
    }
}
