//! Artifacts a failed case leaves in its bundle, collected before its namespace is removed:
//! the namespace's events, every pod's logs (current and previous containers), the objects
//! involved, and the backend's own logs (the operator's among them).

use k8s_openapi::api::core::v1::{Event, PersistentVolumeClaim, Pod};
use kube::api::{Api, ApiResource, DynamicObject, ListParams, LogParams};
use kube::core::GroupVersionKind;

use crate::backend::Backend;
use crate::context::CaseContext;

fn json_bytes<T: serde::Serialize>(value: &T) -> Vec<u8> {
    let mut out = serde_json::to_vec_pretty(value).unwrap_or_default();
    out.push(b'\n');
    out
}

/// Collects what it can; a part that cannot be read is noted in a `collection-errors.txt`
/// artifact instead of aborting the rest.
pub async fn collect(ctx: &CaseContext<'_>, backend: &dyn Backend) {
    let mut errors = Vec::new();
    let ns = ctx.namespace.as_str();
    let events: Api<Event> = Api::namespaced(ctx.client.clone(), ns);
    match events.list(&ListParams::default()).await {
        Ok(list) => save(ctx, "events.json", &json_bytes(&list.items), &mut errors),
        Err(e) => errors.push(format!("events: {e}")),
    }
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), ns);
    match pods.list(&ListParams::default()).await {
        Ok(list) => {
            save(
                ctx,
                "objects/pods.json",
                &json_bytes(&list.items),
                &mut errors,
            );
            for pod in &list.items {
                save_pod_logs(ctx, &pods, pod, &mut errors).await;
            }
        }
        Err(e) => errors.push(format!("pods: {e}")),
    }
    let pvcs: Api<PersistentVolumeClaim> = Api::namespaced(ctx.client.clone(), ns);
    match pvcs.list(&ListParams::default()).await {
        Ok(list) => save(
            ctx,
            "objects/pvcs.json",
            &json_bytes(&list.items),
            &mut errors,
        ),
        Err(e) => errors.push(format!("pvcs: {e}")),
    }
    for (group, version, kind, plural) in [
        ("gameplane.local", "v1alpha1", "GameServer", "gameservers"),
        ("gameplane.local", "v1alpha1", "Backup", "backups"),
        ("gameplane.local", "v1alpha1", "Restore", "restores"),
        ("apps", "v1", "StatefulSet", "statefulsets"),
        ("batch", "v1", "Job", "jobs"),
    ] {
        let ar =
            ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural);
        let api: Api<DynamicObject> = Api::namespaced_with(ctx.client.clone(), ns, &ar);
        match api.list(&ListParams::default()).await {
            Ok(list) => save(
                ctx,
                &format!("objects/{plural}.json"),
                &json_bytes(&list.items),
                &mut errors,
            ),
            Err(e) => errors.push(format!("{plural}: {e}")),
        }
    }
    save_backend_logs(ctx, backend, &mut errors).await;
    if !errors.is_empty() {
        let _ = ctx
            .recorder
            .artifact("collection-errors.txt", errors.join("\n").as_bytes());
    }
}

/// Saves the logs of every container of `pod`, the current one and the previous (restarted)
/// one, as `logs/<pod>/<container>[.previous].log`.
async fn save_pod_logs(
    ctx: &CaseContext<'_>,
    pods: &Api<Pod>,
    pod: &Pod,
    errors: &mut Vec<String>,
) {
    let name = pod.metadata.name.clone().unwrap_or_default();
    let containers = pod
        .spec
        .as_ref()
        .map(|s| {
            s.containers
                .iter()
                .map(|c| c.name.clone())
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    for c in containers {
        for previous in [false, true] {
            let params = LogParams {
                container: Some(c.clone()),
                previous,
                ..Default::default()
            };
            let suffix = if previous { ".previous" } else { "" };
            match pods.logs(&name, &params).await {
                Ok(text) => save(
                    ctx,
                    &format!("logs/{name}/{c}{suffix}.log"),
                    text.as_bytes(),
                    errors,
                ),
                // No previous container is the common case, not an error.
                Err(_) if previous => {}
                Err(e) => errors.push(format!("logs {name}/{c}: {e}")),
            }
        }
    }
}

/// Saves the backend's own logs (the cluster's and the operator's, as [`Backend::export_logs`]
/// writes them) under `backend/`.
async fn save_backend_logs(ctx: &CaseContext<'_>, backend: &dyn Backend, errors: &mut Vec<String>) {
    match tempfile::tempdir() {
        Ok(dir) => {
            if let Err(e) = backend.export_logs(dir.path()).await {
                errors.push(format!("backend logs: {e}"));
            }
            for entry in walk(dir.path()) {
                if let (Ok(bytes), Ok(rel)) =
                    (std::fs::read(&entry), entry.strip_prefix(dir.path()))
                {
                    save(
                        ctx,
                        &format!("backend/{}", rel.to_string_lossy()),
                        &bytes,
                        errors,
                    );
                }
            }
        }
        Err(e) => errors.push(format!("temporary directory for backend logs: {e}")),
    }
}

fn save(ctx: &CaseContext<'_>, name: &str, bytes: &[u8], errors: &mut Vec<String>) {
    if let Err(e) = ctx.recorder.artifact(name, bytes) {
        errors.push(format!("{name}: {e}"));
    }
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out.sort();
    out
}
