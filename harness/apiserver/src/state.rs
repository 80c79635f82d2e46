//! The object store and its lifecycle rules: one global resourceVersion, metadata the server
//! owns (uid, creationTimestamp, generation), status-subresource isolation, finalizers and
//! deletionTimestamp, ownerReference garbage collection, namespace termination, CRD
//! registration, and the event history that watches replay from.
//!
//! All of it runs under one lock held for the duration of a request's store work; events
//! are broadcast while the lock is held so every watcher sees them in resourceVersion order.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::Arc;

use serde_json::{Value, json};
use tokio::sync::broadcast;

use crate::crd;
use crate::defaults;
use crate::meta::{self, meta_mut};
use crate::registry::{Registry, ResourceInfo, StorageKey, storage_key};
use crate::status::ApiError;

pub const CRD_STORAGE: &str = "apiextensions.k8s.io/customresourcedefinitions";
pub const NAMESPACE_STORAGE: &str = "/namespaces";
const POD_STORAGE: &str = "/pods";
const FOREGROUND: &str = "foregroundDeletion";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    Added,
    Modified,
    Deleted,
}

impl EventType {
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

/// One change to one object, as history keeps it and watches receive it.
#[derive(Debug)]
pub struct Event {
    pub rv: u64,
    pub storage: StorageKey,
    pub namespace: String,
    pub kind: EventType,
    pub object: Arc<Value>,
    /// The state before a modification, so a selector-filtered watch can tell an object
    /// entering its selection (ADDED) from one leaving it (DELETED).
    pub old: Option<Arc<Value>>,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjRef {
    pub storage: StorageKey,
    pub namespace: String,
    pub name: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Propagation {
    Background,
    Foreground,
    Orphan,
}

/// DeleteOptions from the body and query of a DELETE.
#[derive(Debug, Clone, Default)]
pub struct DeleteOptions {
    pub propagation: Option<Propagation>,
    pub uid: Option<String>,
    pub resource_version: Option<String>,
    pub grace_period: Option<i64>,
    /// `dryRun: ["All"]` in the body (clients may also send it as a query parameter).
    pub dry_run: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Main,
    Status,
    /// `pods/ephemeralcontainers`: only `spec.ephemeralContainers` changes, and only by adding.
    EphemeralContainers,
    /// `certificatesigningrequests/approval`: only `status.conditions` changes.
    Approval,
}

#[derive(Debug, Clone)]
pub struct Settings {
    /// Events kept for watches that resume from a resourceVersion.
    pub history: usize,
    /// Pods bound to a node are deleted gracefully: deletionTimestamp first, removal when the
    /// kubelet deletes them again with a zero grace period (as in a real cluster).
    pub graceful_pod_deletion: bool,
    /// Where Service cluster IPs come from.
    pub service_range: crate::services::ServiceRange,
    /// The CA every namespace's `kube-root-ca.crt` ConfigMap publishes.
    pub root_ca_pem: Option<String>,
    /// Where the API server listens: the `kubernetes` Service's endpoint.
    pub api_address: Option<std::net::SocketAddr>,
}

enum Work {
    Delete(ObjRef, Propagation, Option<i64>),
    /// Remove from the store; the optional value is the final state to report.
    Remove(ObjRef, Option<Box<Value>>),
    ClearForeground(ObjRef),
    CheckNamespace(String),
    Unregister(String, String),
}

pub struct State {
    pub registry: Registry,
    objects: HashMap<StorageKey, BTreeMap<(String, String), Arc<Value>>>,
    rv: u64,
    history: VecDeque<Arc<Event>>,
    /// Events with a resourceVersion up to this one are no longer in `history`.
    floor: u64,
    uids: HashMap<String, ObjRef>,
    /// Owner uid → objects naming it in an ownerReference.
    dependents: HashMap<String, BTreeSet<ObjRef>>,
    tx: broadcast::Sender<Arc<Event>>,
    settings: Settings,
    next_ip: u32,
    /// Set for the duration of a `dryRun=All` request: writes are computed, not stored.
    dry_run: bool,
    /// Told of every committed change ([`crate::RequestHook::committed`]).
    observer: Option<Arc<dyn crate::RequestHook>>,
}

fn set_meta(obj: &mut Value, key: &str, value: Value) {
    meta_mut(obj).insert(key.to_string(), value);
}

fn copy_meta(from: &Value, to: &mut Value, key: &str) {
    match meta::meta(from).and_then(|m| m.get(key)).cloned() {
        Some(v) => set_meta(to, key, v),
        None => {
            meta_mut(to).remove(key);
        }
    }
}

/// Whether an update changes what `generation` counts: the spec, or for kinds without one,
/// everything outside metadata and status.
fn spec_changed(old: &Value, new: &Value) -> bool {
    if old.get("spec").is_some() || new.get("spec").is_some() {
        return old.get("spec") != new.get("spec");
    }
    let strip = |v: &Value| -> Value {
        let mut v = v.clone();
        if let Some(m) = v.as_object_mut() {
            for k in ["metadata", "status", "apiVersion", "kind"] {
                m.remove(k);
            }
        }
        v
    };
    strip(old) != strip(new)
}

fn grace_seconds(obj: &Value) -> i64 {
    meta::meta(obj)
        .and_then(|m| m.get("deletionGracePeriodSeconds"))
        .and_then(Value::as_i64)
        .unwrap_or(0)
}

impl State {
    pub fn new(settings: Settings) -> Self {
        // The channel keeps its last `capacity` events alive whether or not anyone watches,
        // so it is sized like the history; a watcher that falls further behind gets 410.
        let (tx, _) = broadcast::channel(settings.history.clamp(1024, 65_536));
        let mut state = State {
            registry: Registry::with_builtins(),
            objects: HashMap::new(),
            rv: 1,
            history: VecDeque::new(),
            floor: 1,
            uids: HashMap::new(),
            dependents: HashMap::new(),
            tx,
            settings,
            next_ip: 0,
            dry_run: false,
            observer: None,
        };
        let ns_info = state
            .registry
            .get("", "v1", "namespaces")
            .expect("namespaces are built in");
        for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
            let obj = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
            state
                .create(&ns_info, "", obj)
                .expect("built-in namespaces are valid");
        }
        state.bootstrap_rbac();
        state.sync_api_services();
        state.create_component_statuses();
        state.create_kubernetes_service();
        state
    }

    /// The deprecated `componentstatuses` a real control plane still lists: the scheduler and
    /// the controller manager (here in-process, healthy while the server runs) and etcd.
    fn create_component_statuses(&mut self) {
        let Some(info) = self.registry.get("", "v1", "componentstatuses") else {
            return;
        };
        for (name, message) in [
            ("controller-manager", "ok"),
            ("etcd-0", "{\"health\":\"true\",\"reason\":\"\"}"),
            ("scheduler", "ok"),
        ] {
            let obj = json!({"apiVersion": "v1", "kind": "ComponentStatus", "metadata": {"name": name},
                "conditions": [{"type": "Healthy", "status": "True", "message": message}]});
            if let Err(e) = self.create(&info, "", obj) {
                tracing::warn!(component = name, error = %e.message, "cannot create the ComponentStatus");
            }
        }
    }

    /// The `kubernetes` Service in `default`, its EndpointSlice and Endpoints.
    fn create_kubernetes_service(&mut self) {
        let Some(addr) = self.settings.api_address else {
            return;
        };
        let ip = crate::services::kubernetes_service_ip(self.settings.service_range);
        for obj in crate::service_account::kubernetes_service(ip, addr) {
            let (group, version) = match obj["apiVersion"].as_str().unwrap_or("v1").split_once('/')
            {
                Some((g, v)) => (g.to_string(), v.to_string()),
                None => (String::new(), "v1".to_string()),
            };
            let plural = match obj["kind"].as_str() {
                Some("Service") => "services",
                Some("EndpointSlice") => "endpointslices",
                _ => "endpoints",
            };
            let Some(info) = self.registry.get(&group, &version, plural) else {
                continue;
            };
            if let Err(e) = self.create(&info, "default", obj) {
                tracing::warn!(error = %e.message, "cannot create the kubernetes Service");
            }
        }
    }

    /// The `kube-root-ca.crt` ConfigMap of a new namespace (the root-CA publisher's job).
    fn publish_root_ca(&mut self, ns: &str) {
        let (Some(ca), Some(info)) = (
            self.settings.root_ca_pem.clone(),
            self.registry.get("", "v1", "configmaps"),
        ) else {
            return;
        };
        let cm = crate::service_account::root_ca_config_map(&ca);
        if let Err(e) = self.create(&info, ns, cm) {
            tracing::warn!(namespace = ns, error = %e.message, "cannot publish kube-root-ca.crt");
        }
    }

    /// The ServiceAccount admission of a pod being created: it names an existing
    /// ServiceAccount, whose token is mounted unless automounting is off.
    fn admit_pod_service_account(
        &self,
        ns: &str,
        name: &str,
        pod: &mut Value,
    ) -> Result<(), ApiError> {
        let sa_name = crate::service_account::pod_service_account(pod);
        let info = self
            .registry
            .get("", "v1", "serviceaccounts")
            .expect("serviceaccounts are built in");
        let Some(sa) = self.get(&info, ns, &sa_name) else {
            return Err(ApiError::new(
                403,
                "Forbidden",
                format!(
                    "pods \"{name}\" is forbidden: {}",
                    crate::service_account::missing_service_account(ns, &sa_name)
                ),
            ));
        };
        crate::service_account::mount_token(pod, &sa);
        Ok(())
    }

    /// The `default` ServiceAccount every namespace gets (the ServiceAccount controller's job
    /// in a real cluster, done here as the namespace is created).
    fn create_default_service_account(&mut self, ns: &str) {
        let Some(info) = self.registry.get("", "v1", "serviceaccounts") else {
            return;
        };
        let sa =
            json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}});
        if let Err(e) = self.create(&info, ns, sa) {
            tracing::warn!(namespace = ns, error = %e.message, "cannot create the default ServiceAccount");
        }
    }

    /// Keeps one `apiregistration.k8s.io/v1` APIService per served group/version, as the
    /// aggregator lists them on a real cluster (all `Local`, always Available).
    pub fn sync_api_services(&mut self) {
        if self.dry_run {
            return;
        }
        let Some(info) = self
            .registry
            .get("apiregistration.k8s.io", "v1", "apiservices")
        else {
            return;
        };
        let mut wanted = BTreeMap::new();
        for (index, group) in self.registry.groups().iter().enumerate() {
            let builtin = crate::registry::is_builtin_group(&group.name);
            for (position, (version, _)) in group.versions.iter().enumerate() {
                let name = format!("{version}.{}", group.name);
                let obj = json!({
                    "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
                    "metadata": {"name": name, "labels": {
                        "kube-aggregator.kubernetes.io/automanaged": if builtin { "onstart" } else { "true" },
                    }},
                    "spec": {
                        "group": group.name, "version": version,
                        "groupPriorityMinimum": if builtin { 18000 - 100 * index as i64 } else { 1000 },
                        "versionPriority": 15 - position as i64,
                    },
                    "status": {"conditions": [{
                        "type": "Available", "status": "True",
                        "lastTransitionTime": meta::now_rfc3339(),
                        "reason": "Local", "message": "Local APIServices are always available",
                    }]},
                });
                wanted.insert(name, obj);
            }
        }
        for existing in self.list(&info, None) {
            let name = meta::name(&existing).to_string();
            // Only the aggregator's own (automanaged) APIServices follow the served groups;
            // one a client registered (an aggregated API) stays until the client deletes it.
            let automanaged = existing
                .pointer("/metadata/labels/kube-aggregator.kubernetes.io~1automanaged")
                .is_some();
            if wanted.remove(&name).is_none() && automanaged {
                let _ = self.delete(&info, "", &name, &DeleteOptions::default());
            }
        }
        for (_, obj) in wanted {
            let status = obj["status"].clone();
            if let Ok(created) = self.create(&info, "", obj) {
                let mut with_status = (*created).clone();
                with_status["status"] = status;
                let name = meta::name(&with_status).to_string();
                let _ = self.update(&info, "", &name, with_status, Target::Status);
            }
        }
    }

    /// Creates the default RBAC roles and bindings of a real cluster.
    pub fn bootstrap_rbac(&mut self) {
        for (plural, obj) in crate::rbac_defaults::bootstrap_objects() {
            let info = self
                .registry
                .get(crate::rbac_defaults::GROUP, "v1", plural)
                .expect("RBAC resources are built in");
            self.create(&info, "", obj)
                .expect("the default RBAC objects are valid");
        }
    }

    /// Runs `op` as a dry run when `dry` is set: validation and defaulting happen, nothing is
    /// stored, no event is emitted and the resourceVersion does not move.
    pub fn dry_run<T>(&mut self, dry: bool, op: impl FnOnce(&mut Self) -> T) -> T {
        self.dry_run = dry;
        let out = op(self);
        self.dry_run = false;
        out
    }

    pub fn resource_version(&self) -> u64 {
        self.rv
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Event>> {
        self.tx.subscribe()
    }

    /// Events after `rv` still in history, or 410 Expired.
    pub fn events_after(&self, rv: u64) -> Result<Vec<Arc<Event>>, ApiError> {
        if rv < self.floor {
            return Err(ApiError::expired(rv, self.floor + 1));
        }
        let start = self.history.partition_point(|e| e.rv <= rv);
        Ok(self.history.range(start..).cloned().collect())
    }

    fn lookup(&self, r: &ObjRef) -> Option<&Arc<Value>> {
        self.objects
            .get(&r.storage)
            .and_then(|m| m.get(&(r.namespace.clone(), r.name.clone())))
    }

    fn obj_ref(info: &ResourceInfo, ns: &str, name: &str) -> ObjRef {
        ObjRef {
            storage: info.storage.clone(),
            namespace: if info.namespaced {
                ns.to_string()
            } else {
                String::new()
            },
            name: name.to_string(),
        }
    }

    pub fn get(&self, info: &ResourceInfo, ns: &str, name: &str) -> Option<Arc<Value>> {
        self.lookup(&Self::obj_ref(info, ns, name)).cloned()
    }

    pub fn namespace(&self, ns: &str) -> Option<Arc<Value>> {
        self.objects
            .get(NAMESPACE_STORAGE)
            .and_then(|m| m.get(&(String::new(), ns.to_string())))
            .cloned()
    }

    /// Objects of a resource, in one namespace or all, ordered by namespace and name.
    pub fn list(&self, info: &ResourceInfo, ns: Option<&str>) -> Vec<Arc<Value>> {
        let Some(map) = self.objects.get(&info.storage) else {
            return Vec::new();
        };
        match ns {
            Some(ns) if info.namespaced => map
                .range((ns.to_string(), String::new())..)
                .take_while(|((n, _), _)| n == ns)
                .map(|(_, v)| v.clone())
                .collect(),
            _ => map.values().cloned().collect(),
        }
    }

    /// Objects of a resource as they were at resourceVersion `rv` (the present undone, change
    /// by change, back to it), ordered like [`Self::list`]; 410 Expired when history no longer
    /// reaches back that far.
    pub fn list_as_of(
        &self,
        info: &ResourceInfo,
        ns: Option<&str>,
        rv: u64,
    ) -> Result<Vec<Arc<Value>>, ApiError> {
        let in_scope = |namespace: &str| match ns {
            Some(ns) if info.namespaced => namespace == ns,
            _ => true,
        };
        let mut objects: BTreeMap<(String, String), Arc<Value>> = self
            .list(info, ns)
            .into_iter()
            .map(|o| {
                let namespace = meta::meta_str(&o, "namespace").unwrap_or_default();
                ((namespace.to_string(), meta::name(&o).to_string()), o)
            })
            .collect();
        for ev in self.events_after(rv)?.iter().rev() {
            if ev.storage != info.storage || !in_scope(&ev.namespace) {
                continue;
            }
            let key = (ev.namespace.clone(), meta::name(&ev.object).to_string());
            match (ev.kind, &ev.old) {
                (EventType::Added, _) => {
                    objects.remove(&key);
                }
                (EventType::Modified | EventType::Deleted, Some(old)) => {
                    objects.insert(key, old.clone());
                }
                (EventType::Deleted, None) => {
                    objects.insert(key, ev.object.clone());
                }
                (EventType::Modified, None) => {}
            }
        }
        Ok(objects.into_values().collect())
    }

    fn refs_in_namespace(&self, ns: &str) -> Vec<ObjRef> {
        let mut refs = Vec::new();
        for (storage, map) in &self.objects {
            for ((n, name), _) in map
                .range((ns.to_string(), String::new())..)
                .take_while(|((n, _), _)| n == ns)
            {
                refs.push(ObjRef {
                    storage: storage.clone(),
                    namespace: n.clone(),
                    name: name.clone(),
                });
            }
        }
        refs
    }

    /// Attaches (or detaches) the observer of committed changes.
    pub fn set_observer(&mut self, observer: Option<Arc<dyn crate::RequestHook>>) {
        self.observer = observer;
    }

    fn emit(&mut self, event: Event) {
        let event = Arc::new(event);
        if let Some(observer) = &self.observer {
            observer.committed(crate::Change {
                resource_version: event.rv,
                at: jiff::Timestamp::now(),
                storage: &event.storage,
                namespace: &event.namespace,
                kind: event.kind.as_str(),
                object: &event.object,
            });
        }
        self.history.push_back(event.clone());
        while self.history.len() > self.settings.history.max(1) {
            if let Some(old) = self.history.pop_front() {
                self.floor = old.rv;
            }
        }
        // No receivers is fine: nobody is watching.
        let _ = self.tx.send(event);
    }

    fn index(&mut self, r: &ObjRef, old: Option<&Value>, new: &Value) {
        let old_owners: BTreeSet<String> = old
            .map(meta::owner_uids)
            .unwrap_or_default()
            .into_iter()
            .collect();
        let new_owners: BTreeSet<String> = meta::owner_uids(new).into_iter().collect();
        for gone in old_owners.difference(&new_owners) {
            if let Some(set) = self.dependents.get_mut(gone) {
                set.remove(r);
                if set.is_empty() {
                    self.dependents.remove(gone);
                }
            }
        }
        for added in new_owners.difference(&old_owners) {
            self.dependents
                .entry(added.clone())
                .or_default()
                .insert(r.clone());
        }
        if old.is_none() {
            self.uids.insert(meta::uid(new).to_string(), r.clone());
        }
    }

    fn unindex(&mut self, r: &ObjRef, old: &Value) {
        for owner in meta::owner_uids(old) {
            if let Some(set) = self.dependents.get_mut(&owner) {
                set.remove(r);
                if set.is_empty() {
                    self.dependents.remove(&owner);
                }
            }
        }
        self.uids.remove(meta::uid(old));
    }

    /// Commits object `name` again, its content unchanged, with a new resourceVersion (a
    /// `MODIFIED` event): what another writer's update looks like to everyone else. A missing
    /// object is left alone.
    pub fn touch(&mut self, info: &ResourceInfo, ns: &str, name: &str) {
        let r = Self::obj_ref(info, ns, name);
        if let Some(old) = self.lookup(&r).cloned() {
            self.put(&r, (*old).clone(), Some(old));
        }
    }

    /// Stores `obj` with a new resourceVersion and emits the event.
    fn put(&mut self, r: &ObjRef, mut obj: Value, old: Option<Arc<Value>>) -> Arc<Value> {
        if self.dry_run {
            match &old {
                Some(o) => copy_meta(o, &mut obj, "resourceVersion"),
                None => {
                    meta_mut(&mut obj).remove("resourceVersion");
                }
            }
            return Arc::new(obj);
        }
        self.rv += 1;
        set_meta(
            &mut obj,
            "resourceVersion",
            Value::String(self.rv.to_string()),
        );
        self.index(r, old.as_deref(), &obj);
        let arc = Arc::new(obj);
        self.objects
            .entry(r.storage.clone())
            .or_default()
            .insert((r.namespace.clone(), r.name.clone()), arc.clone());
        let kind = if old.is_some() {
            EventType::Modified
        } else {
            EventType::Added
        };
        self.emit(Event {
            rv: self.rv,
            storage: r.storage.clone(),
            namespace: r.namespace.clone(),
            kind,
            object: arc.clone(),
            old,
        });
        arc
    }

    fn check_namespace_for_create(
        &self,
        info: &ResourceInfo,
        ns: &str,
        name: &str,
    ) -> Result<(), ApiError> {
        match self.namespace(ns) {
            None => Err(ApiError::namespace_not_found(ns)),
            Some(n) if meta::is_deleting(&n) => {
                let mut e = ApiError::forbidden(format!(
                    "{} \"{}\" is forbidden: unable to create new content in namespace {} because it is being terminated",
                    info.qualified_plural(),
                    name,
                    ns
                ));
                // As the NamespaceLifecycle admission plugin words it, with its cause.
                e.details = Some(json!({
                    "name": name, "group": info.group, "kind": info.plural,
                    "causes": [{
                        "reason": "NamespaceTerminating",
                        "message": format!("namespace {ns} is being terminated"),
                        "field": "metadata.namespace",
                    }],
                }));
                Err(e)
            }
            Some(_) => Ok(()),
        }
    }

    fn default_storage_class(&self) -> Option<String> {
        let map = self.objects.get("storage.k8s.io/storageclasses")?;
        map.values()
            .find(|sc| {
                sc.pointer("/metadata/annotations/storageclass.kubernetes.io~1is-default-class")
                    .and_then(Value::as_str)
                    == Some("true")
            })
            .map(|sc| meta::name(sc).to_string())
    }

    fn admit_custom(info: &ResourceInfo, name: &str, obj: &mut Value) -> Result<(), ApiError> {
        if let Some(schema) = info.custom.as_ref().and_then(|c| c.schema.as_ref()) {
            schema
                .admit(obj)
                .map_err(|errors| ApiError::invalid(info, name, &errors))?;
        }
        Ok(())
    }

    /// Creates an object whose apiVersion and kind the caller has already checked.
    #[expect(
        clippy::too_many_lines,
        reason = "the create path in kube-apiserver's order (name, defaults, admission, uniqueness, store, event) under one lock"
    )]
    pub fn create(
        &mut self,
        info: &ResourceInfo,
        ns: &str,
        mut obj: Value,
    ) -> Result<Arc<Value>, ApiError> {
        if !obj.is_object() {
            return Err(ApiError::bad_request(
                "the request body must be a JSON object",
            ));
        }
        let name = match meta::meta_str(&obj, "name") {
            Some(n) => n.to_string(),
            None => match meta::meta_str(&obj, "generateName") {
                Some(prefix) => {
                    let prefix = prefix.to_string();
                    loop {
                        let candidate = meta::generated_name(&prefix);
                        if self.get(info, ns, &candidate).is_none() {
                            break candidate;
                        }
                    }
                }
                None => {
                    return Err(ApiError::invalid_field(
                        info,
                        "",
                        "metadata.name",
                        "FieldValueRequired",
                        "Required value: name or generateName is required",
                    ));
                }
            },
        };
        let label_only = &*info.storage == NAMESPACE_STORAGE;
        let why = if info.group == crate::rbac_defaults::GROUP
            || info.group == "apiregistration.k8s.io"
        {
            meta::invalid_path_segment(&name)
        } else {
            meta::invalid_name(&name, label_only)
        };
        if let Some(why) = why {
            return Err(ApiError::invalid_field(
                info,
                &name,
                "metadata.name",
                "FieldValueInvalid",
                &why,
            ));
        }
        if info.namespaced {
            if let Some(body_ns) = meta::meta_str(&obj, "namespace")
                && body_ns != ns
            {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
            self.check_namespace_for_create(info, ns, &name)?;
        }
        let r = Self::obj_ref(info, ns, &name);
        if self.lookup(&r).is_some() {
            return Err(ApiError::already_exists(info, &name));
        }
        {
            let m = meta_mut(&mut obj);
            m.insert("name".into(), Value::String(name.clone()));
            if info.namespaced {
                m.insert("namespace".into(), Value::String(ns.to_string()));
            } else {
                m.remove("namespace");
            }
            for k in [
                "resourceVersion",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "selfLink",
            ] {
                m.remove(k);
            }
            m.insert("uid".into(), Value::String(meta::new_uid()));
            m.insert(
                "creationTimestamp".into(),
                Value::String(meta::now_rfc3339()),
            );
            m.insert("generation".into(), json!(1));
        }
        if info.is_custom() && info.status {
            obj.as_object_mut().expect("object").remove("status");
        }
        let default_sc = self.default_storage_class();
        defaults::on_create(
            info,
            &mut obj,
            &defaults::Context {
                default_storage_class: default_sc.as_deref(),
            },
        );
        if !info.is_custom() && info.group.is_empty() && &*info.plural == "pods" {
            self.admit_pod_service_account(ns, &name, &mut obj)?;
        }
        if &*info.storage == crate::services::STORAGE && !info.is_custom() {
            let used = crate::services::used_ips(
                self.objects
                    .get(crate::services::STORAGE)
                    .into_iter()
                    .flat_map(|m| m.values().map(|v| &**v)),
            );
            let range = self.settings.service_range;
            crate::services::admit_create(range, &used, &mut self.next_ip, info, &name, &mut obj)?;
        }
        Self::admit_custom(info, &name, &mut obj)?;
        let definition = if &*info.storage == CRD_STORAGE {
            let def = crd::definition(&obj).map_err(|e| ApiError::invalid(info, &name, &e))?;
            crd::set_status(&mut obj, None);
            Some(def)
        } else {
            None
        };
        let arc = self.put(&r, obj, None);
        // The garbage collector's rule for a dependent whose owners are all gone: it is deleted
        // (in the background). A controller reconciling a stale copy of a deleted owner creates
        // such objects; without this they would outlive their owner forever.
        let owners = meta::owner_uids(&arc);
        if !self.dry_run && !owners.is_empty() && !owners.iter().any(|u| self.uids.contains_key(u))
        {
            self.run(vec![Work::Delete(r.clone(), Propagation::Background, None)]);
        }
        if &*info.storage == NAMESPACE_STORAGE && !self.dry_run {
            self.create_default_service_account(&name);
            self.publish_root_ca(&name);
        }
        if let Some(def) = definition.filter(|_| !self.dry_run) {
            self.registry
                .set_custom(&def.group, &def.plural, def.resources);
            self.sync_api_services();
        }
        Ok(arc)
    }

    /// Replaces an object (PUT or the result of a PATCH) through the main resource or its
    /// status subresource.
    #[expect(
        clippy::too_many_lines,
        reason = "the update path (preconditions, main or status subresource, store, event) under one lock"
    )]
    pub fn update(
        &mut self,
        info: &ResourceInfo,
        ns: &str,
        name: &str,
        mut body: Value,
        target: Target,
    ) -> Result<Arc<Value>, ApiError> {
        let r = Self::obj_ref(info, ns, name);
        let old = self
            .lookup(&r)
            .cloned()
            .ok_or_else(|| ApiError::not_found(info, name))?;
        if !body.is_object() {
            return Err(ApiError::bad_request(
                "the request body must be a JSON object",
            ));
        }
        if let Some(body_name) = meta::meta_str(&body, "name")
            && body_name != name
        {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({body_name}) does not match the name on the URL ({name})"
            )));
        }
        if info.namespaced
            && let Some(body_ns) = meta::meta_str(&body, "namespace")
            && body_ns != ns
        {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
        if let Some(rv) = meta::resource_version(&body)
            && Some(rv) != meta::resource_version(&old)
        {
            return Err(ApiError::stale(info, name));
        }
        let mut new = match target {
            Target::Main => {
                if info.status {
                    match old.get("status") {
                        Some(s) => body["status"] = s.clone(),
                        None => {
                            body.as_object_mut().expect("object").remove("status");
                        }
                    }
                }
                body
            }
            Target::Status => {
                let mut n = (*old).clone();
                match body.get("status") {
                    Some(s) => n["status"] = s.clone(),
                    None => {
                        n.as_object_mut().expect("object").remove("status");
                    }
                }
                n
            }
            Target::EphemeralContainers => ephemeral_update(info, name, &old, &body)?,
            Target::Approval => {
                let mut n = (*old).clone();
                let mut conditions = body
                    .pointer("/status/conditions")
                    .cloned()
                    .unwrap_or(Value::Array(Vec::new()));
                // As the CSR strategy: a condition's lastUpdateTime is the server's when unset.
                for c in conditions.as_array_mut().into_iter().flatten() {
                    if c.get("lastUpdateTime").is_none_or(Value::is_null) {
                        c["lastUpdateTime"] = json!(meta::now_rfc3339());
                    }
                }
                if !n.get("status").is_some_and(Value::is_object) {
                    n["status"] = json!({});
                }
                n["status"]["conditions"] = conditions;
                n
            }
        };
        for k in [
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "namespace",
            "name",
            "generation",
            "resourceVersion",
        ] {
            copy_meta(&old, &mut new, k);
        }
        if &*info.storage == "/secrets" {
            defaults::fold_string_data(&mut new);
        }
        if &*info.storage == crate::services::STORAGE && target == Target::Main {
            crate::services::admit_update(info, name, &old, &mut new)?;
        }
        Self::admit_custom(info, name, &mut new)?;
        let definition = if &*info.storage == CRD_STORAGE {
            let scope = |o: &Value| o.pointer("/spec/scope").cloned();
            if scope(&old) != scope(&new) {
                let value = scope(&new)
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default();
                return Err(ApiError::invalid_field(
                    info,
                    name,
                    "spec.scope",
                    "FieldValueInvalid",
                    &format!("Invalid value: \"{value}\": field is immutable"),
                ));
            }
            let def = crd::definition(&new).map_err(|e| ApiError::invalid(info, name, &e))?;
            crd::set_status(&mut new, Some(&old));
            Some(def)
        } else {
            None
        };
        if new == *old {
            return Ok(old);
        }
        if spec_changed(&old, &new) {
            let generation = meta::meta(&old)
                .and_then(|m| m.get("generation"))
                .and_then(Value::as_i64)
                .unwrap_or(0);
            set_meta(&mut new, "generation", json!(generation + 1));
        }
        if meta::is_deleting(&new) && meta::finalizers(&new).is_empty() && grace_seconds(&new) == 0
        {
            if self.dry_run {
                return Ok(Arc::new(new));
            }
            let removed = self.run(vec![Work::Remove(r.clone(), Some(Box::new(new)))]);
            let last = removed.into_iter().find(|(x, _)| *x == r).map(|(_, v)| v);
            return last.ok_or_else(|| ApiError::not_found(info, name));
        }
        let arc = self.put(&r, new, Some(old));
        if let Some(def) = definition.filter(|_| !self.dry_run) {
            self.registry
                .set_custom(&def.group, &def.plural, def.resources);
            self.sync_api_services();
        }
        Ok(arc)
    }

    /// Deletes an object: returns its state afterwards and whether it is gone already
    /// (false while finalizers or a graceful pod termination hold it).
    pub fn delete(
        &mut self,
        info: &ResourceInfo,
        ns: &str,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<(Arc<Value>, bool), ApiError> {
        let r = Self::obj_ref(info, ns, name);
        let current = self
            .lookup(&r)
            .cloned()
            .ok_or_else(|| ApiError::not_found(info, name))?;
        if &*r.storage == NAMESPACE_STORAGE
            && ["default", "kube-system", "kube-public"].contains(&name)
        {
            let mut e = ApiError::forbidden(format!(
                "namespaces \"{name}\" is forbidden: this namespace may not be deleted"
            ));
            e.details = Some(json!({"name": name, "kind": "namespaces"}));
            return Err(e);
        }
        if let Some(uid) = &opts.uid
            && uid != meta::uid(&current)
        {
            return Err(ApiError::conflict(
                info,
                name,
                &format!(
                    "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                    meta::uid(&current)
                ),
            ));
        }
        if let Some(rv) = &opts.resource_version
            && Some(rv.as_str()) != meta::resource_version(&current)
        {
            return Err(ApiError::conflict(
                info,
                name,
                &format!(
                    "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in meta: {}",
                    meta::resource_version(&current).unwrap_or("")
                ),
            ));
        }
        if self.dry_run {
            return Ok((current, false));
        }
        let policy = opts.propagation.unwrap_or(Propagation::Background);
        let removed = self.run(vec![Work::Delete(r.clone(), policy, opts.grace_period)]);
        match self.lookup(&r) {
            Some(obj) => Ok((obj.clone(), false)),
            None => {
                let last = removed
                    .into_iter()
                    .find(|(x, _)| *x == r)
                    .map(|(_, v)| v)
                    .unwrap_or(current);
                Ok((last, true))
            }
        }
    }

    fn run(&mut self, mut work: Vec<Work>) -> Vec<(ObjRef, Arc<Value>)> {
        let mut removed = Vec::new();
        while let Some(item) = work.pop() {
            match item {
                Work::Delete(r, policy, grace) => self.step_delete(r, policy, grace, &mut work),
                Work::Remove(r, last) => {
                    if let Some(obj) = self.step_remove(&r, last.map(|b| *b), &mut work) {
                        removed.push((r, obj));
                    }
                }
                Work::ClearForeground(r) => self.step_clear_foreground(r, &mut work),
                Work::CheckNamespace(ns) => {
                    let Some(obj) = self.namespace(&ns) else {
                        continue;
                    };
                    if meta::is_deleting(&obj)
                        && meta::finalizers(&obj).is_empty()
                        && self.refs_in_namespace(&ns).is_empty()
                    {
                        let r = ObjRef {
                            storage: storage_key("", "namespaces"),
                            namespace: String::new(),
                            name: ns,
                        };
                        work.push(Work::Remove(r, None));
                    }
                }
                Work::Unregister(group, plural) => {
                    self.registry.remove_custom(&group, &plural);
                    self.sync_api_services();
                }
            }
        }
        removed
    }

    #[expect(
        clippy::too_many_lines,
        reason = "one match arm per propagation policy of a delete step"
    )]
    fn step_delete(
        &mut self,
        r: ObjRef,
        policy: Propagation,
        grace: Option<i64>,
        work: &mut Vec<Work>,
    ) {
        let Some(current) = self.lookup(&r).cloned() else {
            return;
        };
        let mut obj = (*current).clone();
        let is_pod = &*r.storage == POD_STORAGE;
        if is_pod {
            let bound = obj
                .pointer("/spec/nodeName")
                .and_then(Value::as_str)
                .is_some_and(|n| !n.is_empty());
            let phase = obj
                .pointer("/status/phase")
                .and_then(Value::as_str)
                .unwrap_or("");
            let terminal = phase == "Succeeded" || phase == "Failed";
            let grace = if self.settings.graceful_pod_deletion && bound && !terminal {
                grace
                    .or_else(|| {
                        obj.pointer("/spec/terminationGracePeriodSeconds")
                            .and_then(Value::as_i64)
                    })
                    .unwrap_or(30)
                    .max(0)
            } else {
                0
            };
            if meta::is_deleting(&obj) {
                if grace < grace_seconds(&obj) {
                    set_meta(&mut obj, "deletionGracePeriodSeconds", json!(grace));
                    if grace == 0 && meta::finalizers(&obj).is_empty() {
                        work.push(Work::Remove(r, Some(Box::new(obj))));
                    } else {
                        self.put(&r, obj, Some(current));
                    }
                }
                return;
            }
            if grace > 0 {
                let when = jiff::Timestamp::now() + jiff::SignedDuration::from_secs(grace);
                set_meta(
                    &mut obj,
                    "deletionTimestamp",
                    json!(meta::timestamp_rfc3339(when)),
                );
                set_meta(&mut obj, "deletionGracePeriodSeconds", json!(grace));
                self.put(&r, obj, Some(current));
                return;
            }
        }
        if meta::is_deleting(&obj) {
            return;
        }
        let uid = meta::uid(&obj).to_string();
        let dependents: Vec<ObjRef> = self
            .dependents
            .get(&uid)
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default();
        let mut finalizers = meta::finalizers(&obj);
        match policy {
            Propagation::Orphan => {
                for dep in &dependents {
                    let Some(d) = self.lookup(dep).cloned() else {
                        continue;
                    };
                    let mut nd = (*d).clone();
                    let refs = meta::owner_refs(&nd)
                        .into_iter()
                        .filter(|x| x.get("uid").and_then(Value::as_str) != Some(uid.as_str()))
                        .collect();
                    meta::set_owner_refs(&mut nd, refs);
                    self.put(dep, nd, Some(d));
                }
            }
            Propagation::Foreground
                if !dependents.is_empty() && !finalizers.iter().any(|f| f == FOREGROUND) =>
            {
                finalizers.push(FOREGROUND.to_string());
                meta::set_finalizers(&mut obj, finalizers.clone());
            }
            _ => {}
        }
        let now = json!(meta::now_rfc3339());
        if &*r.storage == NAMESPACE_STORAGE {
            set_meta(&mut obj, "deletionTimestamp", now);
            set_meta(&mut obj, "deletionGracePeriodSeconds", json!(0));
            obj["status"] = json!({"phase": "Terminating"});
            self.put(&r, obj, Some(current));
            work.push(Work::CheckNamespace(r.name.clone()));
            for content in self.refs_in_namespace(&r.name) {
                work.push(Work::Delete(content, Propagation::Background, None));
            }
            return;
        }
        if finalizers.is_empty() {
            work.push(Work::Remove(r, None));
            return;
        }
        set_meta(&mut obj, "deletionTimestamp", now);
        set_meta(&mut obj, "deletionGracePeriodSeconds", json!(0));
        self.put(&r, obj, Some(current));
        if policy == Propagation::Foreground {
            for dep in dependents {
                work.push(Work::Delete(dep, Propagation::Foreground, None));
            }
        }
    }

    fn step_remove(
        &mut self,
        r: &ObjRef,
        last: Option<Value>,
        work: &mut Vec<Work>,
    ) -> Option<Arc<Value>> {
        let old = self
            .objects
            .get_mut(&r.storage)?
            .remove(&(r.namespace.clone(), r.name.clone()))?;
        let mut last = last.unwrap_or_else(|| (*old).clone());
        self.rv += 1;
        set_meta(
            &mut last,
            "resourceVersion",
            Value::String(self.rv.to_string()),
        );
        self.unindex(r, &old);
        let last = Arc::new(last);
        self.emit(Event {
            rv: self.rv,
            storage: r.storage.clone(),
            namespace: r.namespace.clone(),
            kind: EventType::Deleted,
            object: last.clone(),
            old: Some(old.clone()),
        });
        let uid = meta::uid(&old).to_string();
        if &*r.storage == CRD_STORAGE {
            let group = old
                .pointer("/spec/group")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let plural = old
                .pointer("/spec/names/plural")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let key = storage_key(&group, &plural);
            work.push(Work::Unregister(group, plural));
            if let Some(map) = self.objects.get(&key) {
                for (ns, name) in map.keys() {
                    let r = ObjRef {
                        storage: key.clone(),
                        namespace: ns.clone(),
                        name: name.clone(),
                    };
                    work.push(Work::Remove(r, None));
                }
            }
        }
        if !r.namespace.is_empty() {
            work.push(Work::CheckNamespace(r.namespace.clone()));
        }
        for owner in meta::owner_uids(&old) {
            if let Some(owner_ref) = self.uids.get(&owner) {
                work.push(Work::ClearForeground(owner_ref.clone()));
            }
        }
        if let Some(deps) = self.dependents.remove(&uid) {
            for dep in deps {
                let Some(d) = self.lookup(&dep).cloned() else {
                    continue;
                };
                let remaining: Vec<Value> = meta::owner_refs(&d)
                    .into_iter()
                    .filter(|x| x.get("uid").and_then(Value::as_str) != Some(uid.as_str()))
                    .collect();
                let alive = remaining.iter().any(|x| {
                    x.get("uid")
                        .and_then(Value::as_str)
                        .is_some_and(|u| self.uids.contains_key(u))
                });
                if alive {
                    let mut nd = (*d).clone();
                    meta::set_owner_refs(&mut nd, remaining);
                    self.put(&dep, nd, Some(d));
                } else {
                    work.push(Work::Delete(dep, Propagation::Background, None));
                }
            }
        }
        Some(last)
    }

    fn step_clear_foreground(&mut self, r: ObjRef, work: &mut Vec<Work>) {
        let Some(current) = self.lookup(&r).cloned() else {
            return;
        };
        let mut finalizers = meta::finalizers(&current);
        if !meta::is_deleting(&current) || !finalizers.iter().any(|f| f == FOREGROUND) {
            return;
        }
        if self
            .dependents
            .get(meta::uid(&current))
            .is_some_and(|d| !d.is_empty())
        {
            return;
        }
        finalizers.retain(|f| f != FOREGROUND);
        let mut obj = (*current).clone();
        meta::set_finalizers(&mut obj, finalizers.clone());
        if finalizers.is_empty() {
            work.push(Work::Remove(r, Some(Box::new(obj))));
        } else {
            self.put(&r, obj, Some(current));
        }
    }
}

/// The pod after a `pods/ephemeralcontainers` update: the old pod with the body's ephemeral
/// containers (defaulted), which may add containers but not remove or change existing ones.
fn ephemeral_update(
    info: &ResourceInfo,
    name: &str,
    old: &Value,
    body: &Value,
) -> Result<Value, ApiError> {
    let mut list = serde_json::Map::new();
    list.insert(
        "ephemeralContainers".into(),
        body.pointer("/spec/ephemeralContainers")
            .cloned()
            .unwrap_or(Value::Array(Vec::new())),
    );
    defaults::pod_spec(&mut list);
    let wanted = list
        .remove("ephemeralContainers")
        .unwrap_or(Value::Array(Vec::new()));
    let by_name = |v: &Value, n: &str| {
        v.as_array()
            .into_iter()
            .flatten()
            .find(|c| c["name"] == n)
            .cloned()
    };
    let existing = old
        .pointer("/spec/ephemeralContainers")
        .cloned()
        .unwrap_or(Value::Array(Vec::new()));
    for c in existing.as_array().into_iter().flatten() {
        let cname = c["name"].as_str().unwrap_or_default();
        let verb = match by_name(&wanted, cname) {
            None => "removed",
            Some(now) if now != *c => "changed",
            Some(_) => continue,
        };
        return Err(ApiError::invalid_field(
            info,
            name,
            "spec.ephemeralContainers",
            "FieldValueForbidden",
            &format!("Forbidden: existing ephemeral containers \"{cname}\" may not be {verb}"),
        ));
    }
    let mut n = old.clone();
    if wanted.as_array().is_some_and(|a| !a.is_empty()) {
        n["spec"]["ephemeralContainers"] = wanted;
    }
    Ok(n)
}
