//! Why a reconcile pass failed; each variant names the object or endpoint involved.
//!
//! A reconcile error is retried with backoff by the controller. Outcomes a user caused (a
//! missing server, Secret or Backup) are not errors: they end the object in `Failed` with a
//! message, because retrying cannot fix them.

/// A failed reconcile step.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A Kubernetes API call failed.
    #[error("{action} {kind} {namespace}/{name}: {source}")]
    Kube {
        /// What the operator tried (`get`, `patch`, …).
        action: &'static str,
        /// The object's kind.
        kind: &'static str,
        /// The object's namespace.
        namespace: String,
        /// The object's name.
        name: String,
        // Boxed: `kube::Error` is large and every reconcile result carries this type.
        #[source]
        /// kube's error.
        source: Box<kube::Error>,
    },
    /// An object lacks a field the operator needs (namespace, uid).
    #[error("{kind} {name} has no {field}")]
    MissingField {
        /// The object's kind.
        kind: &'static str,
        /// The object's name.
        name: String,
        /// The missing field.
        field: &'static str,
    },
    /// Serialising a patch failed (a bug, never user input).
    #[error("cannot serialise a patch for {name}: {source}")]
    Serialize {
        /// The object the patch was for.
        name: String,
        #[source]
        /// The serialisation error.
        source: serde_json::Error,
    },
}

/// The result of a reconcile step.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Adds the action and object to a `kube::Error`.
pub trait KubeContext<T> {
    /// Wraps the error with `action kind namespace/name`.
    fn ctx(
        self,
        action: &'static str,
        kind: &'static str,
        namespace: &str,
        name: &str,
    ) -> Result<T>;
}

impl<T> KubeContext<T> for std::result::Result<T, kube::Error> {
    fn ctx(
        self,
        action: &'static str,
        kind: &'static str,
        namespace: &str,
        name: &str,
    ) -> Result<T> {
        self.map_err(|source| Error::Kube {
            action,
            kind,
            namespace: namespace.to_string(),
            name: name.to_string(),
            source: Box::new(source),
        })
    }
}
