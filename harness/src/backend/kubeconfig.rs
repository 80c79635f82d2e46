//! Kube context pinning: the harness acts only on a context it was explicitly told to use.
//!
//! A kubeconfig's `current-context` is never followed implicitly — a developer's shell pointing
//! at production must not become the rehearsal target because nobody said otherwise.

use std::path::{Path, PathBuf};

use kube::config::Kubeconfig;

/// The environment variable a live test must find naming the context it may touch.
pub const LIVE_CONTEXT_ENV: &str = "REHEARSAL_CONTEXT";

/// Why a kubeconfig/context cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum KubeconfigError {
    /// The file could not be read or parsed as a kubeconfig (path, kube's message).
    #[error("cannot read kubeconfig {0}: {1}; pass a readable file with --kubeconfig")]
    Read(PathBuf, String),
    /// The context's cluster or credentials could not become a client configuration (path,
    /// kube's message).
    #[error("cannot load kubeconfig {0}: {1}")]
    Load(PathBuf, String),
    #[error(
        "no kube context given for {path}; pass --context NAME explicitly (available: {available})"
    )]
    /// No context was named; the kubeconfig's `current-context` is never used implicitly.
    ContextRequired {
        /// The kubeconfig file.
        path: PathBuf,
        /// Its context names, comma-separated.
        available: String,
    },
    /// The named context is not in the kubeconfig.
    #[error("kube context `{context}` is not in {path}; pass --context with one of: {available}")]
    UnknownContext {
        /// The context asked for.
        context: String,
        /// The kubeconfig file.
        path: PathBuf,
        /// Its context names, comma-separated.
        available: String,
    },
    #[error(
        "refusing kube context `{context}`: live tests may only use the context named in {LIVE_CONTEXT_ENV} ({allowed})"
    )]
    /// A live test was pointed at a context other than the one [`LIVE_CONTEXT_ENV`] allows.
    NotAllowed {
        /// The context asked for.
        context: String,
        /// The value of [`LIVE_CONTEXT_ENV`] (or that it is unset).
        allowed: String,
    },
}

/// Context names in a kubeconfig, sorted, comma-separated (for messages).
pub fn available_contexts(kubeconfig: &Kubeconfig) -> String {
    let mut names: Vec<&str> = kubeconfig
        .contexts
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    names.sort_unstable();
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}

/// Checks that `context` exists in `kubeconfig` (read from `path`).
pub fn require_context(
    kubeconfig: &Kubeconfig,
    path: &Path,
    context: &str,
) -> Result<(), KubeconfigError> {
    if kubeconfig.contexts.iter().any(|c| c.name == context) {
        Ok(())
    } else {
        Err(KubeconfigError::UnknownContext {
            context: context.to_string(),
            path: path.to_path_buf(),
            available: available_contexts(kubeconfig),
        })
    }
}

/// Resolves the context the user named; `None` is refused with the available contexts listed.
pub fn explicit_context(path: &Path, context: Option<&str>) -> Result<String, KubeconfigError> {
    let kubeconfig = Kubeconfig::read_from(path)
        .map_err(|e| KubeconfigError::Read(path.into(), e.to_string()))?;
    match context {
        None => Err(KubeconfigError::ContextRequired {
            path: path.to_path_buf(),
            available: available_contexts(&kubeconfig),
        }),
        Some(ctx) => {
            require_context(&kubeconfig, path, ctx)?;
            Ok(ctx.to_string())
        }
    }
}

/// For live tests: `context` is allowed only when [`LIVE_CONTEXT_ENV`] names exactly it.
pub fn live_test_context(context: &str) -> Result<(), KubeconfigError> {
    let allowed = std::env::var(LIVE_CONTEXT_ENV).unwrap_or_default();
    if !allowed.is_empty() && allowed == context {
        Ok(())
    } else {
        Err(KubeconfigError::NotAllowed {
            context: context.to_string(),
            allowed: if allowed.is_empty() {
                "unset".into()
            } else {
                format!("set to `{allowed}`")
            },
        })
    }
}
