//! Generates the man pages and shell completions of `landscaper-appliance` from its clap
//! definition, for the Debian package (`packaging/build-deb.sh`).
//!
//! ```sh
//! cargo run -p landscaper-appliance --example gen-docs -- OUT_DIR
//! ```
//!
//! writes `OUT_DIR/man/landscaper-appliance.1` (plus one page per subcommand,
//! `landscaper-appliance-serve.1`, ...) and `OUT_DIR/completions/` with
//! `landscaper-appliance.bash`, `_landscaper-appliance` (zsh) and `landscaper-appliance.fish`.

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::CommandFactory;
use clap_complete::Shell;
use landscaper_appliance::cli::Cli;

const BIN: &str = "landscaper-appliance";

/// Sections of the top-level page after the generated ones (roff).
const MAN_FILES: &str = r#".SH FILES
.TP
.I /etc/landscaper-appliance/config.yaml
The daemon's configuration: manifestsDir, dataDir, listen, logFormat, logLevel,
resyncInterval, workers, deployItemTimeouts.
.TP
.I /etc/landscaper-appliance/manifests.d/
The folder of Landscaper YAML the daemon watches.
.TP
.I /var/lib/landscaper-appliance/
The store (store.redb) and the API token (api-token) that the write commands need.
.TP
.I /usr/share/doc/landscaper-appliance/examples/
The demo manifests (the ones \fBlandscaper-appliance demo\fR writes).
.SH SERVICE
\fBlandscaper-appliance.service\fR runs \fBlandscaper-appliance serve\fR as the system user
\fIlandscaper-appliance\fR:
\fBsystemctl status landscaper-appliance\fR, \fBjournalctl -u landscaper-appliance\fR.
"#;

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args_os().skip(1);
    let (Some(out), None) = (args.next(), args.next()) else {
        anyhow::bail!("usage: gen-docs OUT_DIR");
    };
    let out = PathBuf::from(out);
    let man_dir = out.join("man");
    let completions_dir = out.join("completions");
    for dir in [&man_dir, &completions_dir] {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }

    let cmd = Cli::command();
    write_man_pages(cmd.clone(), &man_dir)?;
    write_completions(cmd, &completions_dir)?;
    println!("{}", out.display());
    Ok(())
}

fn write_man_pages(cmd: clap::Command, dir: &Path) -> anyhow::Result<()> {
    // As clap_mangen::generate_to: one page per (sub)command, named after its path
    // (landscaper-appliance-render-template.1); the top-level page gets FILES and SERVICE.
    // The footer names the program, not the subcommand: "landscaper-appliance 0.1.0".
    fn subcommand_pages(cmd: &clap::Command, source: &str, dir: &Path) -> anyhow::Result<()> {
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            subcommand_pages(sub, source, dir)?;
            clap_mangen::Man::new(sub.clone())
                .source(source)
                .generate_to(dir)
                .with_context(|| format!("writing the man page of {}", sub.get_name()))?;
        }
        Ok(())
    }
    let mut cmd = cmd.disable_help_subcommand(true);
    cmd.build();
    let source = format!("{BIN} {}", cmd.get_version().unwrap_or_default());
    subcommand_pages(&cmd, &source, dir)?;

    let man = clap_mangen::Man::new(cmd);
    let mut page = Vec::new();
    man.render_title(&mut page)?;
    man.render_name_section(&mut page)?;
    man.render_synopsis_section(&mut page)?;
    man.render_description_section(&mut page)?;
    man.render_options_section(&mut page)?;
    man.render_subcommands_section(&mut page)?;
    page.extend_from_slice(MAN_FILES.as_bytes());
    man.render_version_section(&mut page)?;
    let path = dir.join(man.get_filename());
    std::fs::write(&path, page).with_context(|| format!("writing {}", path.display()))
}

fn write_completions(mut cmd: clap::Command, dir: &Path) -> anyhow::Result<()> {
    for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
        clap_complete::generate_to(shell, &mut cmd, BIN, dir)
            .with_context(|| format!("writing {shell} completions to {}", dir.display()))?;
    }
    Ok(())
}
