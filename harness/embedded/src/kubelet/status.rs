//! Pod status pieces computed like the kubelet: conditions with stable transition times,
//! QoS class, timestamps.

use std::collections::HashMap;

use k8s_openapi::api::core::v1::{Pod, PodCondition};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

pub use crate::node::now;

/// Remembers when each condition last changed status, so `lastTransitionTime` only moves on
/// a transition.
#[derive(Debug, Default)]
pub struct Conditions {
    seen: HashMap<String, (String, Time)>,
}

impl Conditions {
    /// Seeds transition times from the pod's current conditions (e.g. PodScheduled).
    pub fn seed(pod: &Pod) -> Self {
        let mut seen = HashMap::new();
        for c in pod
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .into_iter()
            .flatten()
        {
            if let Some(t) = &c.last_transition_time {
                seen.insert(c.type_.clone(), (c.status.clone(), t.clone()));
            }
        }
        Self { seen }
    }

    /// A condition; its transition time is kept unless `status` changed.
    pub fn condition(
        &mut self,
        type_: &str,
        status: bool,
        reason: Option<&str>,
        message: Option<String>,
    ) -> PodCondition {
        let status = if status { "True" } else { "False" }.to_string();
        let time = match self.seen.get(type_) {
            Some((old, time)) if *old == status => time.clone(),
            _ => {
                let t = now();
                self.seen
                    .insert(type_.to_string(), (status.clone(), t.clone()));
                t
            }
        };
        PodCondition {
            type_: type_.to_string(),
            status,
            last_transition_time: Some(time),
            reason: reason.map(str::to_string),
            message,
            ..Default::default()
        }
    }
}

/// `BestEffort`, `Burstable` or `Guaranteed`, from the containers' requests and limits.
pub fn qos_class(pod: &Pod) -> String {
    let Some(spec) = &pod.spec else {
        return "BestEffort".into();
    };
    let containers: Vec<_> = spec
        .containers
        .iter()
        .chain(spec.init_containers.iter().flatten())
        .collect();
    let mut any = false;
    let mut guaranteed = true;
    for c in &containers {
        let r = c.resources.as_ref();
        let requests = r.and_then(|r| r.requests.clone()).unwrap_or_default();
        let limits = r.and_then(|r| r.limits.clone()).unwrap_or_default();
        if !requests.is_empty() || !limits.is_empty() {
            any = true;
        }
        for resource in ["cpu", "memory"] {
            let limit = limits.get(resource);
            let request = requests.get(resource).or(limit);
            if limit.is_none() || request != limit {
                guaranteed = false;
            }
        }
    }
    match (any, guaranteed) {
        (false, _) => "BestEffort",
        (true, true) => "Guaranteed",
        (true, false) => "Burstable",
    }
    .into()
}
