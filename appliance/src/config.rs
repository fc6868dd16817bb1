//! Daemon configuration: a YAML file (`/etc/landscaper-appliance/config.yaml` when present),
//! overridden by command-line flags.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

pub const DEFAULT_CONFIG_FILE: &str = "/etc/landscaper-appliance/config.yaml";
pub const DEFAULT_MANIFESTS_DIR: &str = "/etc/landscaper-appliance/manifests.d";
pub const DEFAULT_DATA_DIR: &str = "/var/lib/landscaper-appliance";
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8080";
/// The API's Unix socket, in the data folder.
pub const SOCKET_FILE_NAME: &str = "api.sock";

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("reading config file {path}: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("config file {path}: {message}")]
    Parse { path: String, message: String },
    #[error("config: {field}: {message}")]
    Invalid {
        field: &'static str,
        message: String,
    },
}

/// The config file's shape. Every field is optional; absent fields take defaults.
#[derive(Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConfigFile {
    pub manifests_dir: Option<PathBuf>,
    pub data_dir: Option<PathBuf>,
    pub listen: Option<String>,
    pub log_format: Option<LogFormat>,
    pub log_level: Option<String>,
    /// Safety-net full rescan of the manifests folder, e.g. `60s`.
    pub resync_interval: Option<String>,
    /// Landscaper's `deployItemTimeouts`: `pickup` (default `5m`, `none` disables).
    pub deploy_item_timeouts: Option<DeployItemTimeouts>,
    /// Workers per controller (default 4).
    pub workers: Option<usize>,
    /// TLS for the API listener; required when `listen` is not a loopback address.
    pub tls: Option<TlsFiles>,
    /// Host names (besides localhost, loopback addresses, the listen address and the TLS
    /// certificate's names) the API answers to in the `Host` header; `*.example.com` matches
    /// one label. Requests naming other hosts get 421 (DNS rebinding protection).
    pub allowed_hosts: Option<Vec<String>>,
    /// Largest manifest file read, e.g. `16Mi` (default), `512Ki`, `10M` or a number of bytes;
    /// bigger files are rejected with an error in their `ManifestFile` status.
    pub max_manifest_file_size: Option<String>,
    /// Loopback address of the TLS listener that `<dataDir>/kubeconfig.yaml` points kubectl at
    /// (default `127.0.0.1:8443`; `off` disables it and the kubeconfig).
    pub kubeconfig_listen: Option<String>,
}

/// PEM files of the API's TLS certificate (chain) and private key.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TlsFiles {
    pub cert_file: PathBuf,
    pub key_file: PathBuf,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeployItemTimeouts {
    pub pickup: Option<String>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

/// The effective configuration of a running daemon.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub manifests_dir: PathBuf,
    pub data_dir: PathBuf,
    pub listen: SocketAddr,
    pub log_format: LogFormat,
    pub log_level: String,
    pub resync_interval: Duration,
    /// TLS for the API listener (mandatory off loopback).
    pub tls: Option<TlsFiles>,
    /// `None`: deploy items of unserved types wait forever.
    pub pickup_timeout: Option<Duration>,
    pub workers: usize,
    /// Extra names the API answers to in the `Host` header.
    pub allowed_hosts: Vec<String>,
    /// Largest manifest file read, in bytes.
    pub max_manifest_file_size: u64,
    /// The kubeconfig's TLS listener (loopback only); `None`: no listener, no kubeconfig.
    pub kubeconfig_listen: Option<SocketAddr>,
}

/// Default of `kubeconfigListen` (Kubernetes' usual TLS port 6443 is left to a local k3s).
pub const DEFAULT_KUBECONFIG_LISTEN: &str = "127.0.0.1:8443";

/// Default of `maxManifestFileSize`: 16 MiB (the ingest is built for files of 10 MB).
pub const DEFAULT_MAX_MANIFEST_FILE_SIZE: u64 = 16 * 1024 * 1024;

/// Flags that override the file.
#[derive(Debug, Default, Clone)]
pub struct Overrides {
    pub manifests_dir: Option<PathBuf>,
    pub data_dir: Option<PathBuf>,
    pub listen: Option<String>,
    pub log_format: Option<LogFormat>,
    pub kubeconfig_listen: Option<String>,
}

impl Config {
    /// Loads `explicit` (which must exist) or the default file when present, then applies
    /// the overrides.
    pub fn load(explicit: Option<&Path>, overrides: Overrides) -> Result<Config, ConfigError> {
        let file = match explicit {
            Some(path) => read_file(path)?,
            None if Path::new(DEFAULT_CONFIG_FILE).exists() => {
                read_file(Path::new(DEFAULT_CONFIG_FILE))?
            }
            None => ConfigFile::default(),
        };
        Config::resolve(file, overrides)
    }

    pub fn resolve(file: ConfigFile, overrides: Overrides) -> Result<Config, ConfigError> {
        let listen_text = overrides
            .listen
            .or(file.listen)
            .unwrap_or_else(|| DEFAULT_LISTEN.to_string());
        let listen = parse_listen(&listen_text).map_err(|message| ConfigError::Invalid {
            field: "listen",
            message,
        })?;
        if let Some(tls) = &file.tls {
            for (field, path) in [
                ("tls.certFile", &tls.cert_file),
                ("tls.keyFile", &tls.key_file),
            ] {
                if path.as_os_str().is_empty() {
                    return Err(ConfigError::Invalid {
                        field,
                        message: "must name a PEM file".into(),
                    });
                }
            }
        }
        if !listen.ip().is_loopback() && file.tls.is_none() {
            // Off loopback every request needs the token, and the token must not cross the
            // network in clear text.
            return Err(ConfigError::Invalid {
                field: "listen",
                message: format!(
                    "{listen} is not a loopback address: listening there needs tls.certFile and tls.keyFile (requests then need the API token)"
                ),
            });
        }
        let resync_interval = match file.resync_interval.as_deref() {
            None => Duration::from_secs(60),
            Some(text) => parse_seconds(text).ok_or_else(|| ConfigError::Invalid {
                field: "resyncInterval",
                message: format!("{text:?} is not a duration like 60s, 5m or 1h"),
            })?,
        };
        let pickup_timeout = match file
            .deploy_item_timeouts
            .as_ref()
            .and_then(|t| t.pickup.as_deref())
        {
            None => Some(Duration::from_secs(300)),
            Some("none" | "0" | "0s") => None,
            Some(text) => Some(parse_seconds(text).ok_or_else(|| ConfigError::Invalid {
                field: "deployItemTimeouts.pickup",
                message: format!("{text:?} is not a duration like 30s, 5m or none"),
            })?),
        };
        let workers = match file.workers {
            None => 4,
            Some(n) if (1..=256).contains(&n) => n,
            Some(n) => {
                return Err(ConfigError::Invalid {
                    field: "workers",
                    message: format!("{n} is not between 1 and 256"),
                });
            }
        };
        let allowed_hosts = file.allowed_hosts.unwrap_or_default();
        for host in &allowed_hosts {
            if !is_host_pattern(host) {
                return Err(ConfigError::Invalid {
                    field: "allowedHosts",
                    message: format!(
                        "{host:?} is not a host name or IP address (optionally `*.` and a domain)"
                    ),
                });
            }
        }
        let kubeconfig_listen = match overrides
            .kubeconfig_listen
            .or(file.kubeconfig_listen)
            .as_deref()
            .unwrap_or(DEFAULT_KUBECONFIG_LISTEN)
        {
            "off" | "" => None,
            text => {
                let address = parse_listen(text).map_err(|message| ConfigError::Invalid {
                    field: "kubeconfigListen",
                    message,
                })?;
                if !address.ip().is_loopback() {
                    return Err(ConfigError::Invalid {
                        field: "kubeconfigListen",
                        message: format!(
                            "{address} is not a loopback address: the kubeconfig listener serves this host only (use listen and tls for remote access)"
                        ),
                    });
                }
                Some(address)
            }
        };
        let max_manifest_file_size = match file.max_manifest_file_size.as_deref() {
            None => DEFAULT_MAX_MANIFEST_FILE_SIZE,
            Some(text) => parse_size(text).ok_or_else(|| ConfigError::Invalid {
                field: "maxManifestFileSize",
                message: format!("{text:?} is not a size like 4Mi, 512Ki or 1048576 (more than 0)"),
            })?,
        };
        Ok(Config {
            pickup_timeout,
            workers,
            allowed_hosts,
            max_manifest_file_size,
            kubeconfig_listen,
            manifests_dir: overrides
                .manifests_dir
                .or(file.manifests_dir)
                .unwrap_or_else(|| DEFAULT_MANIFESTS_DIR.into()),
            data_dir: overrides
                .data_dir
                .or(file.data_dir)
                .unwrap_or_else(|| DEFAULT_DATA_DIR.into()),
            listen,
            log_format: overrides.log_format.or(file.log_format).unwrap_or_default(),
            log_level: file.log_level.unwrap_or_else(|| "info".to_string()),
            resync_interval,
            tls: file.tls,
        })
    }

    /// The Unix socket in the data folder: requests over it are authorised by file
    /// permissions (root and the service user).
    pub fn socket_path(&self) -> PathBuf {
        self.data_dir.join(SOCKET_FILE_NAME)
    }

    pub fn store_path(&self) -> PathBuf {
        self.data_dir.join("store.redb")
    }
}

fn read_file(path: &Path) -> Result<ConfigFile, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.display().to_string(),
        source,
    })?;
    if text.trim().is_empty() {
        return Ok(ConfigFile::default());
    }
    serde_saphyr::from_str(&text).map_err(|e| ConfigError::Parse {
        path: path.display().to_string(),
        message: crate::daemon::ingest::manifest::yaml_message(&e.to_string()),
    })
}

/// A host name (`appliance.example.com`, `*.example.com`) or an IP address, no port.
fn is_host_pattern(host: &str) -> bool {
    let name = host.strip_prefix("*.").unwrap_or(host);
    if name.parse::<std::net::IpAddr>().is_ok() && !host.starts_with("*.") {
        return true;
    }
    !name.is_empty()
        && name.len() <= 253
        && name.trim_end_matches('.').split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}

/// `4Mi`, `512Ki`, `1Gi`, `10M`, `500k`, or a bare number of bytes; more than 0.
fn parse_size(text: &str) -> Option<u64> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let n: u64 = number.parse().ok()?;
    let factor: u64 = match unit {
        "" => 1,
        "k" | "K" => 1000,
        "Ki" => 1024,
        "M" => 1000 * 1000,
        "Mi" => 1024 * 1024,
        "G" => 1000 * 1000 * 1000,
        "Gi" => 1024 * 1024 * 1024,
        _ => return None,
    };
    n.checked_mul(factor).filter(|&size| size > 0)
}

/// `90s`, `5m`, `1h`, or a bare number of seconds.
fn parse_seconds(text: &str) -> Option<Duration> {
    let text = text.trim();
    let (number, unit) = text
        .find(|c: char| !c.is_ascii_digit())
        .map(|i| text.split_at(i))
        .unwrap_or((text, "s"));
    let n: u64 = number.parse().ok()?;
    let secs = match unit {
        "s" => n,
        "m" => n.checked_mul(60)?,
        "h" => n.checked_mul(3600)?,
        _ => return None,
    };
    (secs > 0).then(|| Duration::from_secs(secs))
}

/// An `address:port` as `SocketAddr` parses it, or `localhost:PORT` (what people type, and what
/// kubectl's `--address` accepts), which means the IPv4 loopback.
fn parse_listen(text: &str) -> Result<SocketAddr, String> {
    if let Ok(address) = text.parse() {
        return Ok(address);
    }
    let invalid = |why: String| format!("{text:?} is not an address:port ({why})");
    match text.rsplit_once(':') {
        Some((host, port)) if host.eq_ignore_ascii_case("localhost") => {
            let port: u16 = port
                .parse()
                .map_err(|e| invalid(format!("port {port:?}: {e}")))?;
            Ok(SocketAddr::from(([127, 0, 0, 1], port)))
        }
        Some((host, _)) => Err(invalid(format!(
            "{host:?} is not an IP address; use an IP address, [::1] or localhost"
        ))),
        None => Err(invalid("the port is missing, e.g. 127.0.0.1:8080".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_accepts_localhost_and_names_what_is_wrong() {
        assert_eq!(
            parse_listen("localhost:8081").unwrap().to_string(),
            "127.0.0.1:8081"
        );
        assert_eq!(
            parse_listen("[::1]:9000").unwrap().to_string(),
            "[::1]:9000"
        );
        let err = parse_listen("example.org:80").unwrap_err();
        assert!(err.contains("not an IP address"), "{err}");
        let err = parse_listen("localhost:http").unwrap_err();
        assert!(err.contains("port \"http\""), "{err}");
        let err = parse_listen("127.0.0.1").unwrap_err();
        assert!(err.contains("port is missing"), "{err}");
    }

    #[test]
    fn defaults_apply_without_file_or_flags() {
        let c = Config::resolve(ConfigFile::default(), Overrides::default()).unwrap();
        assert_eq!(c.manifests_dir, PathBuf::from(DEFAULT_MANIFESTS_DIR));
        assert_eq!(c.data_dir, PathBuf::from(DEFAULT_DATA_DIR));
        assert_eq!(c.listen.to_string(), DEFAULT_LISTEN);
        assert_eq!(c.resync_interval, Duration::from_secs(60));
        assert_eq!(
            c.kubeconfig_listen.map(|a| a.to_string()).as_deref(),
            Some(DEFAULT_KUBECONFIG_LISTEN)
        );
    }

    #[test]
    fn the_kubeconfig_listener_is_loopback_only_and_can_be_off() {
        let with = |text: &str| {
            Config::resolve(
                ConfigFile::default(),
                Overrides {
                    kubeconfig_listen: Some(text.into()),
                    ..Overrides::default()
                },
            )
        };
        assert_eq!(with("off").unwrap().kubeconfig_listen, None);
        assert_eq!(
            with("localhost:0").unwrap().kubeconfig_listen,
            Some("127.0.0.1:0".parse().unwrap())
        );
        let err = with("0.0.0.0:8443").unwrap_err().to_string();
        assert!(
            err.contains("kubeconfigListen") && err.contains("loopback"),
            "{err}"
        );
    }

    #[test]
    fn flags_override_the_file() {
        let file: ConfigFile = serde_saphyr::from_str(
            "manifestsDir: /srv/m\ndataDir: /srv/d\nlisten: 127.0.0.1:9000\nlogFormat: json\nresyncInterval: 5m\n",
        )
        .unwrap();
        let c = Config::resolve(
            file,
            Overrides {
                listen: Some("127.0.0.1:9100".into()),
                ..Overrides::default()
            },
        )
        .unwrap();
        assert_eq!(c.manifests_dir, PathBuf::from("/srv/m"));
        assert_eq!(c.data_dir, PathBuf::from("/srv/d"));
        assert_eq!(c.listen.port(), 9100);
        assert_eq!(c.log_format, LogFormat::Json);
        assert_eq!(c.resync_interval, Duration::from_secs(300));
    }

    #[test]
    fn shipped_default_config_matches_the_defaults() {
        let file: ConfigFile =
            serde_saphyr::from_str(include_str!("../../systemd/config.yaml")).unwrap();
        let shipped = Config::resolve(file, Overrides::default()).unwrap();
        let builtin = Config::resolve(ConfigFile::default(), Overrides::default()).unwrap();
        assert_eq!(shipped, builtin);
    }

    #[test]
    fn bad_values_name_their_field() {
        let err = Config::resolve(
            ConfigFile::default(),
            Overrides {
                listen: Some("0.0.0.0:8080".into()),
                ..Overrides::default()
            },
        )
        .unwrap_err();
        assert!(err.to_string().contains("listen"), "{err}");
        assert!(err.to_string().contains("tls.certFile"), "{err}");
        // With TLS, a non-loopback address is fine.
        let file: ConfigFile = serde_saphyr::from_str(
            "listen: 0.0.0.0:8443\ntls: {certFile: /etc/l/tls.crt, keyFile: /etc/l/tls.key}\n",
        )
        .unwrap();
        let c = Config::resolve(file, Overrides::default()).unwrap();
        assert_eq!(c.tls.unwrap().key_file, PathBuf::from("/etc/l/tls.key"));
        let err = serde_saphyr::from_str::<ConfigFile>("listn: x\n").unwrap_err();
        assert!(err.to_string().contains("listn"), "{err}");
        let file = ConfigFile {
            resync_interval: Some("soon".into()),
            ..ConfigFile::default()
        };
        let err = Config::resolve(file, Overrides::default()).unwrap_err();
        assert!(err.to_string().contains("resyncInterval"), "{err}");
        for (yaml, field) in [
            ("allowedHosts: [\"evil.example:80\"]\n", "allowedHosts"),
            ("allowedHosts: [\"a b\"]\n", "allowedHosts"),
            ("maxManifestFileSize: 4MB\n", "maxManifestFileSize"),
            ("maxManifestFileSize: \"0\"\n", "maxManifestFileSize"),
        ] {
            let file: ConfigFile = serde_saphyr::from_str(yaml).unwrap();
            let err = Config::resolve(file, Overrides::default()).unwrap_err();
            assert!(err.to_string().contains(field), "{yaml}: {err}");
        }
    }

    #[test]
    fn allowed_hosts_and_manifest_size_limit() {
        let c = Config::resolve(ConfigFile::default(), Overrides::default()).unwrap();
        assert_eq!(c.max_manifest_file_size, 16 * 1024 * 1024);
        assert!(c.allowed_hosts.is_empty());
        let file: ConfigFile = serde_saphyr::from_str(
            "allowedHosts: [appliance.example.com, \"*.apps.example.com\", 10.0.0.5]\nmaxManifestFileSize: 512Ki\n",
        )
        .unwrap();
        let c = Config::resolve(file, Overrides::default()).unwrap();
        assert_eq!(
            c.allowed_hosts,
            ["appliance.example.com", "*.apps.example.com", "10.0.0.5"]
        );
        assert_eq!(c.max_manifest_file_size, 512 * 1024);
        assert_eq!(parse_size("10M"), Some(10_000_000));
        assert_eq!(parse_size("2Gi"), Some(2 << 30));
        assert_eq!(parse_size("123"), Some(123));
        assert_eq!(parse_size("Mi"), None);
    }
}
