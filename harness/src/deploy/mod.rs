//! Putting the operator under test into a cluster: Gameplane's Helm chart ([`helm`]) on Kind and
//! existing clusters, and the reference operator ([`reference_operator`]) as a host process on
//! the embedded cluster ([`embedded`]) or as an image plus manifests on Kind ([`kind`]). A
//! backend only brings a cluster up; the `run` layer hands it one of these deployments.

pub mod embedded;
pub mod helm;
pub mod images;
pub mod kind;
pub mod manifests;
pub mod profile;
pub mod reference_operator;
pub mod sandbox;

/// The namespace the operator is installed into (the chart's and the reference operator's).
pub const SYSTEM_NAMESPACE: &str = crate::backend::operator_pod::SYSTEM_NAMESPACE;
