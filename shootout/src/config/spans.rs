//! What every part of the scenario parser shares: `Err`, which makes an
//! error at the line of a key's offset in the file, and the duration key
//! of a design table (`[paired]`, `[memory]`).

use std::time::Duration;

use crate::config::scenario::ScenarioError;

/// How errors are made: `err(offset, message)` names the file and line.
pub type Err<'a> = dyn Fn(usize, String) -> ScenarioError + 'a;

/// The line (from 1) that `offset` in `text` stands on.
pub fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// A duration key of a design table (`[memory]`, `[paired]`): `fallback`
/// when unset; zero only where `zero_ok`; else the message.
pub fn table_duration(
    table: &str,
    key: &str,
    value: &Option<String>,
    fallback: Duration,
    zero_ok: bool,
) -> Result<Duration, String> {
    let Some(text) = value else {
        return Ok(fallback);
    };
    match humantime::parse_duration(text) {
        Ok(d) if zero_ok || !d.is_zero() => Ok(d),
        Ok(_) => Err(format!("[{table}] {key} must be more than zero")),
        Err(e) => Err(format!("[{table}] bad {key} {text:?}: {e}")),
    }
}
