//! `ui`: a one-time login link for the status page. The daemon makes the code (with the
//! token, or over its Unix socket); the link sets a session cookie in the browser that opens
//! it, so that the page's actions work without pasting the token.

use std::io::Write;

use anyhow::Context;
use serde_json::json;

use crate::cli::UiArgs;
use crate::daemon::ui::LOGIN_LINKS_PATH;

/// Asks the daemon for a login link and prints it with what to do.
pub fn login_link(args: &UiArgs, out: &mut impl Write) -> anyhow::Result<()> {
    let client = super::write_client(&args.write)?;
    let answer = client
        .post_json(LOGIN_LINKS_PATH, &json!({}))
        .context("asking the daemon for a login link")?;
    let path = answer["path"]
        .as_str()
        .context("the daemon's answer holds no login path")?;
    let seconds = answer["expiresInSeconds"].as_u64().unwrap_or(120);
    let server = args.write.server.server.trim_end_matches('/');
    writeln!(out, "{server}{path}")?;
    writeln!(
        out,
        "Open this link in a browser on this host within {seconds} s; it works once and signs that browser in to the status page's actions."
    )?;
    Ok(())
}
