//! `landscaper-appliance render chart`: Helm's `helm template`, offline, with the in-process
//! chart engine (`landscaper-charts`). Same stdout as `helm template`; errors on stderr.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;
use landscaper_charts::{
    Capabilities, ChartError, KubeVersion, ReleaseOptions, TemplateOptions, ValueOptions,
};

#[derive(Debug, Args, Clone, Default)]
#[command(
    disable_version_flag = true,
    after_help = "Examples:\n  \
    landscaper-appliance render chart ./mychart --release demo --namespace apps -f values.yaml\n  \
    landscaper-appliance render chart mychart-1.0.0.tgz --release demo --namespace apps --set image.tag=1.2 --kube-version 1.33.0"
)]
pub struct RenderChartArgs {
    /// Chart directory or .tgz archive.
    pub chart: String,
    /// Release name (.Release.Name).
    #[arg(long, default_value = "release-name")]
    pub release: String,
    /// Release namespace (.Release.Namespace).
    #[arg(short, long, default_value = "default")]
    pub namespace: String,
    /// Values file (YAML); repeatable, later files win.
    #[arg(short = 'f', long = "values", value_name = "FILE")]
    pub values: Vec<PathBuf>,
    /// Set values on the command line (a.b=c,d[0]=e); repeatable.
    #[arg(long = "set", value_name = "K=V")]
    pub set: Vec<String>,
    /// Set string values on the command line; repeatable.
    #[arg(long = "set-string", value_name = "K=V")]
    pub set_string: Vec<String>,
    /// Set JSON values on the command line (a={"b":1}); repeatable.
    #[arg(long = "set-json", value_name = "K=JSON")]
    pub set_json: Vec<String>,
    /// Kubernetes version for .Capabilities.KubeVersion and Chart.yaml's kubeVersion.
    #[arg(long, value_name = "VERSION")]
    pub kube_version: Option<String>,
    /// Extra API versions for .Capabilities.APIVersions (group/version or group/version/Kind);
    /// repeatable, comma-separated lists allowed.
    #[arg(
        short = 'a',
        long = "api-versions",
        value_name = "G/V",
        value_delimiter = ','
    )]
    pub api_versions: Vec<String>,
    /// Print the chart's crds/ files too.
    #[arg(long)]
    pub include_crds: bool,
    /// Leave out test hooks.
    #[arg(long)]
    pub skip_tests: bool,
    /// Only print manifests from these templates (path below the chart, glob); repeatable.
    #[arg(short = 's', long = "show-only", value_name = "PATH")]
    pub show_only: Vec<String>,
    /// Set .Release.IsUpgrade instead of .Release.IsInstall.
    #[arg(long)]
    pub is_upgrade: bool,
    /// Chart repository URL (not supported yet: chart sources come with the helm deployer).
    #[arg(long, value_name = "URL")]
    pub repo: Option<String>,
    /// Chart version (with --repo or oci://).
    #[arg(long, value_name = "VERSION")]
    pub version: Option<String>,
}

/// Runs the command; returns whether it succeeded (errors are written to `err` as Helm
/// writes them, `Error: ...`).
pub fn run(args: &RenderChartArgs, out: &mut impl Write, err: &mut impl Write) -> bool {
    // Chart templates recurse (include within include); give the engine room.
    let args = args.clone();
    let result = std::thread::Builder::new()
        .name("render-chart".into())
        .stack_size(64 << 20)
        .spawn(move || render(&args))
        .map_err(|e| ChartError::Usage(format!("cannot start renderer: {e}")))
        .and_then(|h| {
            h.join()
                .unwrap_or_else(|_| Err(ChartError::Render("the renderer panicked".into())))
        });
    match result {
        Ok(text) => {
            if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
                let _ = writeln!(err, "Error: writing output: {e}");
                return false;
            }
            true
        }
        Err(e) => {
            // Helm adds this hint when the release was rendered (so not for loading, values or
            // schema errors).
            let hint = if matches!(e, ChartError::Render(_) | ChartError::KubeVersion(_)) {
                "\n\nUse --debug flag to render out invalid YAML"
            } else {
                ""
            };
            let _ = writeln!(err, "Error: {e}{hint}");
            false
        }
    }
}

fn render(args: &RenderChartArgs) -> Result<String, ChartError> {
    if args.repo.is_some() || args.chart.starts_with("oci://") || args.chart.contains("://") {
        return Err(ChartError::Usage(format!(
            "chart {}: charts from OCI registries and chart repositories are not supported by render chart yet; give a chart directory or .tgz",
            args.chart
        )));
    }
    let path = PathBuf::from(&args.chart);
    if !path.exists() {
        // Helm's LocateChart for a local path that is not there.
        return Err(ChartError::Usage(format!(
            "path \"{}\" not found",
            args.chart
        )));
    }
    let chart = landscaper_charts::load(&path)?;
    let mut files = Vec::new();
    for f in &args.values {
        let text = std::fs::read(f)
            .map_err(|e| ChartError::Values(format!("open {}: {e}", f.display())))?;
        files.push((
            f.display().to_string(),
            String::from_utf8_lossy(&text).into_owned(),
        ));
    }
    let values = ValueOptions {
        files,
        json_values: args.set_json.clone(),
        values: args.set.clone(),
        string_values: args.set_string.clone(),
    };
    let kube_version = match &args.kube_version {
        Some(v) => KubeVersion::parse(v)
            .map_err(|e| ChartError::Usage(format!("invalid kube version '{v}': {e}")))?,
        None => KubeVersion::default(),
    };
    let api_versions: Vec<String> = args
        .api_versions
        .iter()
        .filter(|s| !s.is_empty())
        .cloned()
        .collect();
    let opts = TemplateOptions {
        release: ReleaseOptions {
            name: args.release.clone(),
            namespace: args.namespace.clone(),
            revision: 1,
            is_install: !args.is_upgrade,
            is_upgrade: args.is_upgrade,
        },
        capabilities: Capabilities::offline(kube_version, &api_versions),
        include_crds: args.include_crds,
        skip_tests: args.skip_tests,
        show_only: args.show_only.clone(),
        lookup: None,
        skip_schema_validation: false,
    };
    landscaper_charts::template(chart, &values, &opts)
}
