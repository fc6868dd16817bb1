//! Command-line interface: `serve` runs the daemon; the other commands are offline tools or
//! clients of a running daemon.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::config::LogFormat;

pub const DEFAULT_SERVER: &str = "http://127.0.0.1:8080";

#[derive(Debug, Parser)]
#[command(
    name = "landscaper-appliance",
    version,
    about = "Single-node Landscaper appliance: Landscaper installations from a folder of YAML, without Kubernetes",
    propagate_version = true
)]
pub struct Cli {
    /// Log output format.
    #[arg(
        long,
        global = true,
        value_enum,
        env = "LANDSCAPER_APPLIANCE_LOG_FORMAT"
    )]
    pub log_format: Option<LogFormat>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the daemon: ingest the manifests folder, serve the API.
    Serve(ServeArgs),
    /// Run the daemon on an embedded demo folder (mock deployer, no cluster needed).
    Demo(DemoArgs),
    /// Show objects (like `kubectl get`).
    Get(GetArgs),
    /// Show one object with its history of changes and phase transitions.
    Describe(DescribeArgs),
    /// Check manifest files offline; prints every error with file, document and line.
    Validate(ValidateArgs),
    /// Print the version of this binary and of its store format.
    Version,
}

#[derive(Debug, Args, Clone, Default)]
pub struct ServeArgs {
    /// Config file (default: /etc/landscaper-appliance/config.yaml when present).
    #[arg(long, env = "LANDSCAPER_APPLIANCE_CONFIG")]
    pub config: Option<PathBuf>,
    /// Folder of manifests to watch (default: /etc/landscaper-appliance/manifests.d).
    #[arg(long, env = "LANDSCAPER_APPLIANCE_MANIFESTS")]
    pub manifests: Option<PathBuf>,
    /// Data folder holding the store (default: /var/lib/landscaper-appliance).
    #[arg(long, env = "LANDSCAPER_APPLIANCE_DATA")]
    pub data: Option<PathBuf>,
    /// API listen address (default: 127.0.0.1:8080).
    #[arg(long, env = "LANDSCAPER_APPLIANCE_LISTEN")]
    pub listen: Option<String>,
}

#[derive(Debug, Args, Clone)]
pub struct DemoArgs {
    /// Folder for the demo's manifests and data; the demo manifests are written to
    /// DIR/manifests when that folder does not exist yet.
    #[arg(long, default_value = "landscaper-appliance-demo")]
    pub dir: PathBuf,
    /// API listen address.
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub listen: String,
}

#[derive(Debug, Args, Clone)]
pub struct ServerArgs {
    /// Address of the daemon's API.
    #[arg(long, env = "LANDSCAPER_APPLIANCE_SERVER", default_value = DEFAULT_SERVER)]
    pub server: String,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    #[default]
    Table,
    Yaml,
    Json,
    /// Only the names, as `kind/name`.
    Name,
}

#[derive(Debug, Args, Clone)]
pub struct GetArgs {
    /// Resource type: plural, singular, short name or kind (installations, inst, Installation, ...).
    pub resource: String,
    /// Object name; all objects when omitted.
    pub name: Option<String>,
    /// Namespace (default: `default`).
    #[arg(short, long)]
    pub namespace: Option<String>,
    /// List across all namespaces.
    #[arg(short = 'A', long)]
    pub all_namespaces: bool,
    /// Label selector, e.g. `a=b,c!=d`.
    #[arg(short = 'l', long)]
    pub selector: Option<String>,
    #[arg(short, long, value_enum, default_value_t)]
    pub output: OutputFormat,
    #[command(flatten)]
    pub server: ServerArgs,
}

#[derive(Debug, Args, Clone)]
pub struct DescribeArgs {
    pub resource: String,
    pub name: String,
    #[arg(short, long)]
    pub namespace: Option<String>,
    /// How many history entries to show.
    #[arg(long, default_value_t = 50)]
    pub history: usize,
    #[command(flatten)]
    pub server: ServerArgs,
}

#[derive(Debug, Args, Clone)]
pub struct ValidateArgs {
    /// Files or folders (folders are read like the manifests folder).
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn parses_kubectl_like_get() {
        let cli = Cli::try_parse_from([
            "landscaper-appliance",
            "get",
            "inst",
            "-A",
            "-o",
            "yaml",
            "--server",
            "http://127.0.0.1:9",
        ])
        .unwrap();
        match cli.command {
            Command::Get(args) => {
                assert_eq!(args.resource, "inst");
                assert!(args.all_namespaces);
                assert_eq!(args.output, OutputFormat::Yaml);
                assert_eq!(args.server.server, "http://127.0.0.1:9");
            }
            other => panic!("parsed {other:?}"),
        }
    }
}
