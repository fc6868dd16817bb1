use std::process::ExitCode;

use clap::Parser;
use landscaper_appliance::cli::{Cli, Command, RenderCommand};
use landscaper_appliance::commands::{self, backup, doctor, export, render, validate};
use landscaper_appliance::config::{Config, LogFormat, Overrides};
use landscaper_appliance::{daemon, logging};

/// mimalloc: the store's writer allocates and frees many small JSON nodes; glibc's allocator
/// made it the bottleneck (10-15k durable updates/s against 20-21k with mimalloc, measured
/// with `cargo bench --bench foundation -- updates`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if let Some(args) = landscaper_appliance::cli::parse_render_chart(&argv) {
        return render_chart(&args);
    }
    let cli = Cli::parse_from(argv);
    match run(cli) {
        Ok(code) => code,
        // `get … | head`: the reader left; that is not an error worth a message.
        Err(error) if is_broken_pipe(&error) => ExitCode::SUCCESS,
        Err(error) => {
            // One cause chain, each cause once (many errors quote their source already).
            let causes = error.chain().map(ToString::to_string);
            eprintln!(
                "error: {}",
                landscaper_store::model::errors::chain_of(causes)
            );
            ExitCode::FAILURE
        }
    }
}

fn render_chart(args: &commands::render_chart::RenderChartArgs) -> ExitCode {
    // The process ends after this one render.
    landscaper_charts::one_shot_process();
    let (mut out, mut err) = (std::io::stdout().lock(), std::io::stderr().lock());
    if commands::render_chart::run(args, &mut out, &mut err) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let log_format = cli.log_format;
    match cli.command {
        Command::Serve(args) => {
            let source = daemon::ConfigSource {
                file: args.config,
                overrides: Overrides {
                    manifests_dir: args.manifests,
                    data_dir: args.data,
                    listen: args.listen,
                    log_format,
                    kubeconfig_listen: args.kubeconfig_listen,
                },
            };
            let config = Config::load(source.file.as_deref(), source.overrides.clone())?;
            logging::init(config.log_format, &config.log_level);
            daemon::run_blocking(config, Some(source))?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Demo(args) => {
            logging::init(log_format.unwrap_or(LogFormat::Text), "info");
            let config = daemon::prepare_demo(&args)?;
            commands::demo::announce(&config);
            let result = daemon::run_blocking(config, None);
            commands::demo::forget();
            result?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Get(args) => {
            commands::get(
                &args,
                &mut std::io::stdout().lock(),
                &mut std::io::stderr().lock(),
            )?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Describe(args) => {
            commands::describe(&args, &mut std::io::stdout().lock())?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Tree(args) => {
            commands::tree(&args, &mut std::io::stdout().lock())?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Reconcile(args) => {
            commands::reconcile(&args, &mut std::io::stdout().lock())?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Interrupt(args) => {
            commands::interrupt(&args, &mut std::io::stdout().lock())?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Delete(args) => {
            commands::delete(&args, &mut std::io::stdout().lock())?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Validate(args) => {
            let report = validate::run(&args.paths, &mut std::io::stdout().lock())?;
            Ok(if report.errors == 0 {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
        Command::Render(args) => {
            let (mut out, mut err) = (std::io::stdout().lock(), std::io::stderr().lock());
            match &args.command {
                Some(RenderCommand::Template(t)) => render::run_template(t, &mut out, &mut err)?,
                Some(RenderCommand::Chart(c)) => {
                    drop((out, err));
                    return Ok(render_chart(c));
                }
                None => render::run(&args, &mut out, &mut err)?,
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Backup(args) => {
            backup::backup(&args, &mut std::io::stdout().lock())?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Restore(args) => {
            backup::restore(&args, &mut std::io::stdout().lock())?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Export(args) => {
            let (mut out, mut err) = (std::io::stdout().lock(), std::io::stderr().lock());
            export::export(&args, &mut out, &mut err)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Doctor(args) => {
            let checks = doctor::run(&args);
            doctor::print(&checks, args.output, &mut std::io::stdout().lock())?;
            Ok(if doctor::failed(&checks) {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            })
        }
        Command::Ui(args) => {
            commands::ui::login_link(&args, &mut std::io::stdout().lock())?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Version => {
            println!(
                "landscaper-appliance {} (store format {})",
                env!("CARGO_PKG_VERSION"),
                landscaper_store::FORMAT_VERSION
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}
