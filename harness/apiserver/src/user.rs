//! Who a request is: the user, its groups and the well-known identities (the admin, the
//! anonymous user, ServiceAccounts), as authentication ([`crate::auth`]) establishes them and
//! RBAC ([`crate::rbac`]) matches them against subjects. A leaf: it imports neither.

use std::collections::BTreeMap;

use serde_json::{Value, json};

/// The admin kubeconfig's identity.
pub const ADMIN_USER: &str = "kubernetes-admin";
pub const MASTERS_GROUP: &str = "system:masters";
pub const AUTHENTICATED: &str = "system:authenticated";
pub const UNAUTHENTICATED: &str = "system:unauthenticated";
pub const ANONYMOUS: &str = "system:anonymous";

/// An authenticated (or anonymous) user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserInfo {
    pub name: String,
    pub uid: String,
    pub groups: Vec<String>,
    pub extra: BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    pub fn admin() -> Self {
        UserInfo {
            name: ADMIN_USER.into(),
            uid: String::new(),
            groups: vec![MASTERS_GROUP.into(), AUTHENTICATED.into()],
            extra: BTreeMap::new(),
        }
    }

    pub fn anonymous() -> Self {
        UserInfo {
            name: ANONYMOUS.into(),
            uid: String::new(),
            groups: vec![UNAUTHENTICATED.into()],
            extra: BTreeMap::new(),
        }
    }

    pub fn service_account(namespace: &str, name: &str, uid: &str) -> Self {
        UserInfo {
            name: service_account_user(namespace, name),
            uid: uid.into(),
            groups: service_account_groups(namespace),
            extra: BTreeMap::new(),
        }
    }

    /// `status.userInfo` of reviews.
    pub fn to_json(&self) -> Value {
        let mut v = json!({"username": self.name, "groups": self.groups});
        if !self.uid.is_empty() {
            v["uid"] = json!(self.uid);
        }
        if !self.extra.is_empty() {
            v["extra"] = json!(self.extra);
        }
        v
    }
}

pub fn service_account_user(namespace: &str, name: &str) -> String {
    format!("system:serviceaccount:{namespace}:{name}")
}

fn service_account_groups(namespace: &str) -> Vec<String> {
    vec![
        "system:serviceaccounts".into(),
        format!("system:serviceaccounts:{namespace}"),
        AUTHENTICATED.into(),
    ]
}

/// `system:serviceaccount:NS:NAME` → (NS, NAME).
pub fn parse_service_account_user(user: &str) -> Option<(&str, &str)> {
    let rest = user.strip_prefix("system:serviceaccount:")?;
    let (ns, name) = rest.split_once(':')?;
    (!ns.is_empty() && !name.is_empty() && !name.contains(':')).then_some((ns, name))
}
