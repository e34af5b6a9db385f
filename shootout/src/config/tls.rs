//! The `tls` key: the client speaks HTTPS to the stack's front, which
//! must be able to end TLS. nginx ends it when its template has the
//! certificate's placeholders (`nginx/proxy-tls.conf`); without a proxy the
//! twin ends it (its `tls` feature). Either way the runner makes the
//! certificate at run time (`stack::tls`).

use toml::Spanned;

use crate::config::scenario::{ProxyConf, ScenarioError};
use crate::config::settings::Settings;
use crate::config::spans::Err;

/// The placeholders a template that ends TLS has (the runner fills in the
/// certificate's and key's paths).
pub const PLACEHOLDERS: [&str; 2] = ["{{TLS_CERT}}", "{{TLS_KEY}}"];

/// What decides who ends TLS on a row.
pub struct Front<'a> {
    /// A config of `nginx/` by name (or the `proxy_conf` path as written).
    pub proxy: Option<&'a str>,
    pub proxy_conf: Option<&'a ProxyConf>,
    pub command: bool,
    pub features: &'a [String],
    /// The row has slow clients (loadgen `--slowloris`, plain HTTP only).
    pub slow: bool,
}

/// The row's `tls`, checked against its front: an error at the key (or
/// at the row, `at`, for a template that ends TLS on a row without it).
pub fn tls_of(
    o: &Settings,
    d: &Settings,
    front: Front,
    at: usize,
    err: &Err,
) -> Result<bool, ScenarioError> {
    let key = o.tls.as_ref().or(d.tls.as_ref());
    let on = key.is_some_and(|t| *t.get_ref());
    let key_at = key.map_or(at, |t: &Spanned<bool>| t.span().start);
    let why = match (front.proxy, on) {
        (Some(name), _) => template_text(&front).and_then(|text| {
            let ends = PLACEHOLDERS.iter().all(|p| text.contains(p));
            let some = PLACEHOLDERS.iter().any(|p| text.contains(p));
            if on && !ends {
                Some(format!(
                    "tls = true: nginx config {name:?} does not end TLS (it has no {} and {}; \
                     nginx/proxy-tls.conf does)",
                    PLACEHOLDERS[0], PLACEHOLDERS[1]
                ))
            } else if !on && some {
                Some(format!(
                    "nginx config {name:?} ends TLS ({} or {}): set tls = true, so that the \
                     client speaks HTTPS",
                    PLACEHOLDERS[0], PLACEHOLDERS[1]
                ))
            } else {
                None
            }
        }),
        (None, true) if front.command => Some(
            "tls = true on a command row ends TLS in nginx only: put nginx in front \
             (proxy = \"proxy-tls\")"
                .into(),
        ),
        (None, true) if !front.features.iter().any(|f| f == "tls") => Some(
            "tls = true without a proxy: the twin ends TLS itself, which needs the tls feature"
                .into(),
        ),
        _ => None,
    };
    let why = why.or_else(|| {
        (on && front.slow).then(|| {
            "tls = true with slow clients: loadgen --slowloris speaks plain HTTP only".into()
        })
    });
    match why {
        Some(why) => Err(err(key_at, why)),
        None => Ok(on),
    }
}

/// The template's text: the row's own, or `nginx/<name>.conf`; none when
/// it cannot be read (the run says so, naming the file, before it starts).
fn template_text(front: &Front) -> Option<String> {
    let path = match (front.proxy_conf, front.proxy) {
        (Some(c), _) => c.path.clone(),
        (None, Some(name)) => variants::workspace_root()
            .join("nginx")
            .join(format!("{name}.conf")),
        (None, None) => return None,
    };
    std::fs::read_to_string(path).ok()
}
