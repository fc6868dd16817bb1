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

/// `render chart`'s command line alone (with the global `--log-format`), for
/// [`parse_render_chart`].
#[derive(Debug, Parser)]
#[command(
    name = "landscaper-appliance",
    disable_help_flag = true,
    disable_version_flag = true
)]
struct RenderChartOnly {
    #[arg(long, value_enum, env = "LANDSCAPER_APPLIANCE_LOG_FORMAT")]
    #[allow(dead_code)]
    // accepted as the full command line accepts it; render chart logs nothing
    log_format: Option<LogFormat>,
    #[command(flatten)]
    args: crate::commands::render_chart::RenderChartArgs,
}

/// The arguments of `landscaper-appliance render chart …` without building the parser of every
/// other command (`render chart` runs in loops; that was a noticeable part of a small chart's
/// render). `None` for any other command line, and for one this narrow parser does not take
/// (help, version, a mistake): [`Cli::parse`] then answers as always.
pub fn parse_render_chart(
    args: &[std::ffi::OsString],
) -> Option<crate::commands::render_chart::RenderChartArgs> {
    let [program, render, chart, rest @ ..] = args else {
        return None;
    };
    if render != "render" || chart != "chart" {
        return None;
    }
    let argv = std::iter::once(program).chain(rest);
    RenderChartOnly::try_parse_from(argv).ok().map(|r| r.args)
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
    /// Show an installation tree: subinstallations, executions and deploy items with their
    /// phases and job IDs.
    Tree(TreeArgs),
    /// Request a reconcile of an Installation (annotation landscaper.gardener.cloud/operation=reconcile).
    Reconcile(OperationArgs),
    /// Interrupt the running job of an Installation (or, with --execution, an Execution).
    Interrupt(InterruptArgs),
    /// Delete an object through the API (objects defined by manifest files are removed from the
    /// folder instead).
    Delete(DeleteArgs),
    /// Check manifest files offline; prints every error with file, document and line.
    Validate(ValidateArgs),
    /// Render a blueprint offline (deploy items, subinstallations, exports), or one template.
    Render(RenderArgs),
    /// Save a consistent copy of the store (from the running daemon, or from the store file
    /// when it is stopped).
    Backup(BackupArgs),
    /// Replace the store with a backup (the daemon must be stopped); the old store is kept as
    /// store.redb.before-restore.
    Restore(RestoreArgs),
    /// Write the objects defined in the manifests folder as Kubernetes YAML for a full
    /// Landscaper (includes Secrets with their values).
    Export(ExportArgs),
    /// Check the configuration, folders, store, Targets, clock and disk space.
    Doctor(DoctorArgs),
    /// Print a one-time login link for the status page (valid two minutes, single use): the
    /// browser that opens it can use the page's actions without pasting the token.
    Ui(UiArgs),
    /// Print the version of this binary and of its store format.
    Version,
}

#[derive(Debug, Args, Clone)]
pub struct UiArgs {
    #[command(flatten)]
    pub write: WriteArgs,
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
    /// Loopback address of the TLS listener DATA/kubeconfig.yaml points at (default:
    /// 127.0.0.1:8443; "off" disables the listener and the kubeconfig).
    #[arg(long)]
    pub kubeconfig_listen: Option<String>,
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

/// `get`'s output formats (kubectl's names).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum OutputFormat {
    #[default]
    Table,
    /// The table with the columns kubectl shows only with `-o wide`.
    Wide,
    Yaml,
    Json,
    /// Only the names, as `kind/name`.
    Name,
    /// A kubectl JSONPath template (`-o jsonpath='{.items[*].metadata.name}'`).
    JsonPath(String),
}

impl std::str::FromStr for OutputFormat {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if let Some(template) = s.strip_prefix("jsonpath=") {
            return Ok(OutputFormat::JsonPath(template.to_string()));
        }
        Ok(match s {
            "table" => OutputFormat::Table,
            "wide" => OutputFormat::Wide,
            "yaml" => OutputFormat::Yaml,
            "json" => OutputFormat::Json,
            "name" => OutputFormat::Name,
            _ => {
                return Err(format!(
                    "unknown output format {s:?} (allowed: table, wide, yaml, json, name, jsonpath=TEMPLATE)"
                ));
            }
        })
    }
}

#[derive(Debug, Args, Clone)]
#[command(after_help = "Examples:\n  \
    landscaper-appliance get installations -A\n  \
    landscaper-appliance get inst,di -n demo -o wide\n  \
    landscaper-appliance get inst/greeter -n demo -o jsonpath='{.status.phase}'\n  \
    landscaper-appliance get inst -n demo -o jsonpath='{range .items[*]}{.metadata.name}{\"\\n\"}{end}'\n  \
    landscaper-appliance get inst -n demo -w")]
pub struct GetArgs {
    /// Resource type: plural, singular, short name or kind (installations, inst, Installation,
    /// ...), several separated by commas (`inst,di`), or `TYPE/NAME`.
    pub resource: String,
    /// Object names (or more `TYPE/NAME`); all objects when omitted.
    pub names: Vec<String>,
    /// Namespace (default: `default`).
    #[arg(short, long)]
    pub namespace: Option<String>,
    /// List across all namespaces.
    #[arg(short = 'A', long)]
    pub all_namespaces: bool,
    /// Label selector, e.g. `a=b,c!=d`.
    #[arg(short = 'l', long)]
    pub selector: Option<String>,
    /// Output format: table, wide, yaml, json, name or jsonpath=TEMPLATE.
    #[arg(short, long, default_value = "table", value_name = "FORMAT")]
    pub output: OutputFormat,
    /// Leave out the table's header line.
    #[arg(long)]
    pub no_headers: bool,
    /// After listing, follow changes and print the objects as they change (one resource type).
    #[arg(short = 'w', long)]
    pub watch: bool,
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

/// How the write commands reach the daemon and prove they may write.
#[derive(Debug, Args, Clone)]
pub struct WriteArgs {
    #[command(flatten)]
    pub server: ServerArgs,
    /// Namespace (default: `default`).
    #[arg(short, long)]
    pub namespace: Option<String>,
    /// File holding the API token (default: DATA/api-token, DATA being
    /// $LANDSCAPER_APPLIANCE_DATA or /var/lib/landscaper-appliance). The environment variable
    /// LANDSCAPER_APPLIANCE_TOKEN, holding the token itself, is used when this is not given.
    #[arg(long, value_name = "PATH", env = "LANDSCAPER_APPLIANCE_TOKEN_FILE")]
    pub token_file: Option<PathBuf>,
}

#[derive(Debug, Args, Clone)]
pub struct OperationArgs {
    /// Installation name.
    pub name: String,
    #[command(flatten)]
    pub write: WriteArgs,
}

#[derive(Debug, Args, Clone)]
pub struct InterruptArgs {
    /// Installation name (Execution name with --execution).
    pub name: String,
    /// NAME is an Execution.
    #[arg(long)]
    pub execution: bool,
    #[command(flatten)]
    pub write: WriteArgs,
}

#[derive(Debug, Args, Clone)]
#[command(after_help = "Examples:\n  \
    landscaper-appliance delete my-installation\n  \
    landscaper-appliance delete deployitem my-item-x7k2p -n demo")]
pub struct DeleteArgs {
    /// `KIND NAME`, or just `NAME` for an Installation.
    #[arg(required = true, num_args = 1..=2, value_names = ["KIND", "NAME"])]
    pub args: Vec<String>,
    #[command(flatten)]
    pub write: WriteArgs,
}

/// Where the store is, found as `serve` finds it: flags, then the config file, then defaults.
#[derive(Debug, Args, Clone, Default)]
pub struct StoreLocationArgs {
    /// Config file, read for dataDir and listen (default: /etc/landscaper-appliance/config.yaml
    /// when present).
    #[arg(long, env = "LANDSCAPER_APPLIANCE_CONFIG")]
    pub config: Option<PathBuf>,
    /// Data folder holding the store (default: dataDir of the config file, else
    /// /var/lib/landscaper-appliance).
    #[arg(long, env = "LANDSCAPER_APPLIANCE_DATA")]
    pub data: Option<PathBuf>,
}

/// How the day-2 commands reach a running daemon.
#[derive(Debug, Args, Clone, Default)]
pub struct DaemonAccessArgs {
    /// Address of the daemon's API (default: http://LISTEN, LISTEN from the config file).
    #[arg(long, env = "LANDSCAPER_APPLIANCE_SERVER")]
    pub server: Option<String>,
    /// File holding the API token (default: DATA/api-token). The environment variable
    /// LANDSCAPER_APPLIANCE_TOKEN, holding the token itself, is used when this is not given.
    #[arg(long, value_name = "PATH", env = "LANDSCAPER_APPLIANCE_TOKEN_FILE")]
    pub token_file: Option<PathBuf>,
}

#[derive(Debug, Args, Clone)]
#[command(
    after_help = "A running daemon answers through its API (GET /appliance/v1/backup, \
    with the API token); when none answers, the store file is read directly. The file holds \
    every Secret unredacted and is created with mode 0600."
)]
pub struct BackupArgs {
    /// The backup file to write (replaced atomically when it exists).
    pub file: PathBuf,
    #[command(flatten)]
    pub location: StoreLocationArgs,
    #[command(flatten)]
    pub access: DaemonAccessArgs,
}

#[derive(Debug, Args, Clone)]
#[command(
    after_help = "The backup is checked first (it is opened as the daemon opens its \
    store: format version, migration of older formats, every object readable); then it \
    replaces DATA/store.redb atomically and the old file is kept as \
    DATA/store.redb.before-restore."
)]
pub struct RestoreArgs {
    /// The backup file (made by `backup`).
    pub file: PathBuf,
    #[command(flatten)]
    pub location: StoreLocationArgs,
}

#[derive(Debug, Args, Clone)]
#[command(after_help = "Writes DIR/<namespace>/<kind plural>/<name>.yaml (and \
    DIR/<namespace>/00-namespace.yaml for namespaces other than default): the objects the \
    manifest files define, with spec and metadata (name, namespace, labels, annotations) \
    only. Objects the controllers made (Executions, DeployItems, subinstallations, exported \
    DataObjects, Targets and Secrets) are left out: Landscaper makes them again. Apply with \
    `kubectl apply -R -f DIR`.")]
pub struct ExportArgs {
    /// Output folder; must not exist or be empty.
    pub dir: PathBuf,
    /// Export from this backup file instead of the running daemon or the store.
    #[arg(long, value_name = "FILE")]
    pub from: Option<PathBuf>,
    /// Check every exported object against the CustomResourceDefinitions in this folder
    /// (e.g. those of the Landscaper release you move to) and write nothing if one fails.
    #[arg(long, value_name = "DIR")]
    pub crds: Option<PathBuf>,
    #[command(flatten)]
    pub location: StoreLocationArgs,
    #[command(flatten)]
    pub access: DaemonAccessArgs,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
pub enum DoctorOutputFormat {
    /// One line per check: OK, WARN or FAIL, the check and the reason.
    #[default]
    Text,
    Json,
}

#[derive(Debug, Args, Clone)]
#[command(after_help = "Exits with 1 when a check FAILs, 0 otherwise (warnings included).")]
pub struct DoctorArgs {
    #[command(flatten)]
    pub location: StoreLocationArgs,
    /// Folder of manifests (default: manifestsDir of the config file).
    #[arg(long, env = "LANDSCAPER_APPLIANCE_MANIFESTS")]
    pub manifests: Option<PathBuf>,
    #[command(flatten)]
    pub access: DaemonAccessArgs,
    /// Seconds to wait for each network check (daemon, Targets).
    #[arg(long, value_name = "SECONDS", default_value_t = 3)]
    pub timeout: u64,
    #[arg(short, long, value_enum, default_value_t)]
    pub output: DoctorOutputFormat,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
pub enum TreeOutputFormat {
    /// Indented like `tree`.
    #[default]
    Text,
    Json,
}

#[derive(Debug, Args, Clone)]
pub struct TreeArgs {
    /// Name of the root Installation.
    pub name: String,
    /// Namespace (default: `default`).
    #[arg(short, long)]
    pub namespace: Option<String>,
    #[arg(short, long, value_enum, default_value_t)]
    pub output: TreeOutputFormat,
    #[command(flatten)]
    pub server: ServerArgs,
}

#[derive(Debug, Args, Clone)]
pub struct ValidateArgs {
    /// Files or folders (folders are read like the manifests folder).
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
pub enum RenderOutputFormat {
    #[default]
    Yaml,
    Json,
}

#[derive(Debug, Args, Clone)]
#[command(
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true,
    after_help = "Examples:\n  \
    landscaper-appliance render ./my-blueprint --imports imports.yaml\n  \
    landscaper-appliance render installation.yaml --imports-from manifests.d/\n  \
    landscaper-appliance render manifests.d/20-installations.yaml --name greeter\n  \
    landscaper-appliance render template --engine gotemplate deploy.yaml --values values.yaml"
)]
pub struct RenderArgs {
    #[command(subcommand)]
    pub command: Option<RenderCommand>,
    /// A blueprint directory (with blueprint.yaml), or an Installation manifest with an inline
    /// blueprint.
    #[arg(required = true)]
    pub path: Option<PathBuf>,
    /// The Installation to render when the manifest file holds several.
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// YAML/JSON map of import name to value (a Target object or its spec for target imports);
    /// wins over values found with --imports-from.
    #[arg(long, value_name = "FILE")]
    pub imports: Option<PathBuf>,
    /// Manifest file or folder with the DataObjects, Targets, ConfigMaps and Secrets an
    /// Installation's imports refer to (objects in the Installation's own file are used too).
    #[arg(long, value_name = "PATH")]
    pub imports_from: Option<PathBuf>,
    /// YAML/JSON map with `deployitems` (deploy item name to its exports), `dataobjects` and
    /// `targets`: renders the export executions too.
    #[arg(long, value_name = "FILE")]
    pub export_values: Option<PathBuf>,
    /// YAML/JSON map of previous template state (`deploy<execution>`, `export<execution>`).
    #[arg(long, value_name = "FILE")]
    pub state: Option<PathBuf>,
    /// Folder with OCM transport archives (CTF, component archives) consulted before the
    /// registries, for Installations with spec.componentDescriptor.ref (default: the
    /// --imports-from folder).
    #[arg(long, value_name = "DIR")]
    pub archives: Option<PathBuf>,
    /// The data folder whose artifact cache (`chart-cache`) component versions are read from
    /// and kept in (default: the daemon's).
    #[arg(long, value_name = "DIR")]
    pub data: Option<PathBuf>,
    /// Resolve component versions from the cache and the archives only (no registry requests).
    #[arg(long)]
    pub offline: bool,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t)]
    pub output: RenderOutputFormat,
}

#[derive(Debug, Subcommand, Clone)]
pub enum RenderCommand {
    /// Render one template file with the Landscaper function set (gotemplate) or Spiff.
    Template(RenderTemplateArgs),
    /// Render a Helm chart as `helm template` does (directory or .tgz).
    Chart(Box<crate::commands::render_chart::RenderChartArgs>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RenderEngine {
    Gotemplate,
    Spiff,
}

#[derive(Debug, Args, Clone)]
pub struct RenderTemplateArgs {
    #[arg(long, value_enum)]
    pub engine: RenderEngine,
    /// The template file.
    pub file: PathBuf,
    /// YAML/JSON values: the template's data (gotemplate) or bindings (spiff).
    #[arg(long, value_name = "FILE")]
    pub values: Option<PathBuf>,
    /// Folder that `include`/`readFile`/`read` may read (default: the template's folder).
    #[arg(long, value_name = "DIR")]
    pub files: Option<PathBuf>,
    /// Output format; default: the text as rendered (gotemplate) or YAML (spiff).
    #[arg(short, long, value_enum)]
    pub output: Option<RenderOutputFormat>,
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
    fn parses_render_and_render_template() {
        let cli = Cli::try_parse_from([
            "landscaper-appliance",
            "render",
            "bp",
            "--imports",
            "i.yaml",
            "-o",
            "json",
        ])
        .unwrap();
        match cli.command {
            Command::Render(args) => {
                assert_eq!(args.path.as_deref(), Some(std::path::Path::new("bp")));
                assert!(args.command.is_none());
                assert_eq!(args.output, RenderOutputFormat::Json);
            }
            other => panic!("parsed {other:?}"),
        }
        let cli = Cli::try_parse_from([
            "landscaper-appliance",
            "render",
            "template",
            "--engine",
            "spiff",
            "t.yaml",
            "--values",
            "v.yaml",
        ])
        .unwrap();
        match cli.command {
            Command::Render(RenderArgs {
                command: Some(RenderCommand::Template(t)),
                ..
            }) => {
                assert_eq!(t.engine, RenderEngine::Spiff);
                assert_eq!(t.file, std::path::PathBuf::from("t.yaml"));
            }
            other => panic!("parsed {other:?}"),
        }
        assert!(Cli::try_parse_from(["landscaper-appliance", "render"]).is_err());
    }

    /// A `render chart` command line with every kind of flag.
    const RENDER_CHART_LINE: &[&str] = &[
        "landscaper-appliance",
        "render",
        "chart",
        "charts/app",
        "--release",
        "r",
        "-n",
        "ns",
        "-f",
        "a.yaml",
        "--values",
        "b.yaml",
        "--set",
        "a=1,b[0]=x",
        "--set-string",
        "c=2",
        "--set-json",
        "d={\"e\":1}",
        "--kube-version",
        "1.33.0",
        "--api-versions",
        "x/v1,y/v1",
        "-a",
        "z/v1/Kind",
        "--include-crds",
        "--skip-tests",
        "--show-only",
        "templates/a.yaml",
        "--version",
        "1.0.0",
    ];

    #[test]
    fn parses_render_chart_like_helm_template() {
        let cli = Cli::try_parse_from(RENDER_CHART_LINE).unwrap();
        let Command::Render(RenderArgs {
            command: Some(RenderCommand::Chart(c)),
            ..
        }) = cli.command
        else {
            panic!("not render chart");
        };
        assert_eq!(c.chart, "charts/app");
        assert_eq!((c.release.as_str(), c.namespace.as_str()), ("r", "ns"));
        assert_eq!(c.values.len(), 2);
        assert_eq!(c.set, ["a=1,b[0]=x"]);
        assert_eq!(c.api_versions, ["x/v1", "y/v1", "z/v1/Kind"]);
        assert!(c.include_crds && c.skip_tests && !c.is_upgrade);
        assert_eq!(c.version.as_deref(), Some("1.0.0"));
    }

    #[test]
    fn the_narrow_render_chart_parser_reads_what_the_full_one_reads() {
        let os = |v: &[&str]| -> Vec<std::ffi::OsString> { v.iter().map(Into::into).collect() };
        let line = RENDER_CHART_LINE;
        let narrow = parse_render_chart(&os(line)).expect("a render chart line");
        let Command::Render(RenderArgs {
            command: Some(RenderCommand::Chart(full)),
            ..
        }) = Cli::try_parse_from(line).unwrap().command
        else {
            panic!("not render chart");
        };
        assert_eq!(format!("{narrow:?}"), format!("{full:?}"));
        // The global flag after the subcommand, as the full parser takes it.
        let with_log_format = [line, &["--log-format", "json"]].concat();
        assert!(parse_render_chart(&os(&with_log_format)).is_some());
        // Help, version, mistakes and other commands are the full parser's.
        for other in [
            &["landscaper-appliance", "render", "chart", "--help"][..],
            &["landscaper-appliance", "render", "chart", "x", "-V"],
            &["landscaper-appliance", "render", "chart", "x", "--bogus"],
            &["landscaper-appliance", "render", "chart"],
            &["landscaper-appliance", "render", "x"],
            &[
                "landscaper-appliance",
                "--log-format",
                "json",
                "render",
                "chart",
                "x",
            ],
            &["landscaper-appliance", "get", "installations"],
        ] {
            assert!(parse_render_chart(&os(other)).is_none(), "{other:?}");
        }
    }

    #[test]
    fn parses_operations() {
        let cli = Cli::try_parse_from([
            "landscaper-appliance",
            "reconcile",
            "a",
            "-n",
            "ns",
            "--token-file",
            "/t",
        ])
        .unwrap();
        match cli.command {
            Command::Reconcile(args) => {
                assert_eq!(args.name, "a");
                assert_eq!(args.write.namespace.as_deref(), Some("ns"));
                assert_eq!(args.write.token_file, Some(PathBuf::from("/t")));
            }
            other => panic!("parsed {other:?}"),
        }
        let cli =
            Cli::try_parse_from(["landscaper-appliance", "interrupt", "e", "--execution"]).unwrap();
        assert!(matches!(
            cli.command,
            Command::Interrupt(InterruptArgs {
                execution: true,
                ..
            })
        ));
        let cli = Cli::try_parse_from(["landscaper-appliance", "delete", "di", "x"]).unwrap();
        match cli.command {
            Command::Delete(args) => assert_eq!(args.args, ["di", "x"]),
            other => panic!("parsed {other:?}"),
        }
        assert!(Cli::try_parse_from(["landscaper-appliance", "delete"]).is_err());
        assert!(Cli::try_parse_from(["landscaper-appliance", "delete", "a", "b", "c"]).is_err());
        let cli = Cli::try_parse_from(["landscaper-appliance", "tree", "a", "-o", "json"]).unwrap();
        assert!(matches!(
            cli.command,
            Command::Tree(TreeArgs {
                output: TreeOutputFormat::Json,
                ..
            })
        ));
    }

    #[test]
    fn parses_day2_commands() {
        let cli = Cli::try_parse_from([
            "landscaper-appliance",
            "backup",
            "b.redb",
            "--data",
            "/d",
            "--server",
            "http://127.0.0.1:9",
        ])
        .unwrap();
        match cli.command {
            Command::Backup(args) => {
                assert_eq!(args.file, PathBuf::from("b.redb"));
                assert_eq!(args.location.data, Some(PathBuf::from("/d")));
                assert_eq!(args.access.server.as_deref(), Some("http://127.0.0.1:9"));
            }
            other => panic!("parsed {other:?}"),
        }
        let cli = Cli::try_parse_from(["landscaper-appliance", "restore", "b.redb"]).unwrap();
        assert!(matches!(cli.command, Command::Restore(_)));
        let cli = Cli::try_parse_from([
            "landscaper-appliance",
            "export",
            "out",
            "--from",
            "b.redb",
            "--crds",
            "crds",
        ])
        .unwrap();
        match cli.command {
            Command::Export(args) => {
                assert_eq!(args.from, Some(PathBuf::from("b.redb")));
                assert_eq!(args.crds, Some(PathBuf::from("crds")));
            }
            other => panic!("parsed {other:?}"),
        }
        let cli = Cli::try_parse_from(["landscaper-appliance", "doctor", "-o", "json"]).unwrap();
        assert!(matches!(
            cli.command,
            Command::Doctor(DoctorArgs {
                output: DoctorOutputFormat::Json,
                timeout: 3,
                ..
            })
        ));
        assert!(Cli::try_parse_from(["landscaper-appliance", "backup"]).is_err());
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
        let cli = Cli::try_parse_from([
            "landscaper-appliance",
            "get",
            "inst/a",
            "di/b",
            "-o",
            "jsonpath={.items[*]['metadata.name']}",
            "--no-headers",
            "-w",
        ])
        .unwrap();
        match cli.command {
            Command::Get(args) => {
                assert_eq!(args.resource, "inst/a");
                assert_eq!(args.names, ["di/b"]);
                assert_eq!(
                    args.output,
                    OutputFormat::JsonPath("{.items[*]['metadata.name']}".into())
                );
                assert!(args.no_headers && args.watch);
            }
            other => panic!("parsed {other:?}"),
        }
        for (text, format) in [
            ("wide", OutputFormat::Wide),
            ("name", OutputFormat::Name),
            ("table", OutputFormat::Table),
        ] {
            assert_eq!(text.parse::<OutputFormat>(), Ok(format));
        }
        let bad = Cli::try_parse_from(["landscaper-appliance", "get", "inst", "-o", "go-template"])
            .unwrap_err()
            .to_string();
        assert!(bad.contains("jsonpath=TEMPLATE"), "{bad}");
    }
}
