//! Authentication: who a request comes from.
//!
//! - The admin kubeconfig carries a random bearer token that maps to `kubernetes-admin` in the
//!   `system:masters` group (the identity Kind's admin kubeconfig has).
//! - ServiceAccount tokens are JWTs issued by `serviceaccounts/NAME/token` (TokenRequest),
//!   signed with a per-server HMAC-SHA256 key, bound to the ServiceAccount's uid (and a pod's,
//!   when the request names one), with an audience and an expiry; every request re-checks
//!   signature, expiry, audience and that the bound objects still exist with the same uid.
//! - No `Authorization` header: `system:anonymous` in `system:unauthenticated`, which the
//!   default RBAC lets read only `/healthz`, `/version` and the like (anything else is a
//!   `Forbidden`, as kube-apiserver's `--anonymous-auth=true` default answers). The server
//!   speaks only HTTPS, so every client sends its kubeconfig's token (client-go never sends
//!   one to an `http://` server).
//! - Impersonation (`Impersonate-User`, `Impersonate-Group`, `Impersonate-Uid`) replaces the
//!   user after the `impersonate` verb is authorised for the requester ([`impersonate`]).

use std::collections::BTreeMap;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use http::HeaderMap;
use ring::hmac;
use ring::rand::{SecureRandom, SystemRandom};
use serde_json::{Value, json};

use crate::meta;
use crate::rbac::{self, Attributes};
use crate::state::State;
use crate::status::ApiError;
use crate::user::{
    ANONYMOUS, AUTHENTICATED, UNAUTHENTICATED, UserInfo, parse_service_account_user,
    service_account_user,
};

/// The audience (and issuer) of the tokens this server accepts, as a real cluster's default.
pub const API_AUDIENCE: &str = "https://kubernetes.default.svc.cluster.local";
/// The shortest TokenRequest a real API server accepts.
const MIN_EXPIRATION_SECONDS: i64 = 600;
const DEFAULT_EXPIRATION_SECONDS: i64 = 3600;

/// The server's credentials: the admin token and the ServiceAccount token signing key.
pub struct Keys {
    admin_token: String,
    signing: hmac::Key,
}

impl Keys {
    pub fn generate() -> Self {
        let rng = SystemRandom::new();
        let mut token = [0u8; 32];
        rng.fill(&mut token).expect("the system CSPRNG works");
        let signing =
            hmac::Key::generate(hmac::HMAC_SHA256, &rng).expect("the system CSPRNG works");
        Keys {
            admin_token: token.iter().map(|b| format!("{b:02x}")).collect(),
            signing,
        }
    }

    pub fn admin_token(&self) -> &str {
        &self.admin_token
    }

    fn sign(&self, claims: &Value) -> String {
        let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"HS256","typ":"JWT"}"#);
        let body = URL_SAFE_NO_PAD.encode(serde_json::to_vec(claims).expect("claims serialise"));
        let input = format!("{header}.{body}");
        let tag = hmac::sign(&self.signing, input.as_bytes());
        format!("{input}.{}", URL_SAFE_NO_PAD.encode(tag.as_ref()))
    }

    /// The claims of a token this server signed, or `None`.
    fn verify(&self, token: &str) -> Option<Value> {
        let mut parts = token.split('.');
        let (header, body, sig) = (parts.next()?, parts.next()?, parts.next()?);
        if parts.next().is_some() {
            return None;
        }
        let sig = URL_SAFE_NO_PAD.decode(sig).ok()?;
        hmac::verify(&self.signing, format!("{header}.{body}").as_bytes(), &sig).ok()?;
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(body).ok()?).ok()
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn unauthorized() -> ApiError {
    ApiError::new(401, "Unauthorized", "Unauthorized")
}

/// The user a request's credentials name; an invalid credential is a 401. A request without
/// one is `system:anonymous` (never a superuser).
pub fn authenticate(keys: &Keys, state: &State, headers: &HeaderMap) -> Result<UserInfo, ApiError> {
    let Some(value) = headers.get(http::header::AUTHORIZATION) else {
        return Ok(UserInfo::anonymous());
    };
    let value = value.to_str().map_err(|_| unauthorized())?.trim();
    let (scheme, token) = value.split_once(' ').ok_or_else(unauthorized)?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(unauthorized());
    }
    let token = token.trim();
    if token.is_empty() {
        return Err(unauthorized());
    }
    if constant_time_eq(token.as_bytes(), keys.admin_token.as_bytes()) {
        return Ok(UserInfo::admin());
    }
    service_account_user_of(keys, state, token, API_AUDIENCE).ok_or_else(unauthorized)
}

/// Validates a ServiceAccount token for `audience` (also the TokenReview check).
pub fn service_account_user_of(
    keys: &Keys,
    state: &State,
    token: &str,
    audience: &str,
) -> Option<UserInfo> {
    let claims = keys.verify(token)?;
    let now = jiff::Timestamp::now().as_second();
    if claims["iss"].as_str() != Some(API_AUDIENCE) {
        return None;
    }
    if claims["exp"].as_i64().is_none_or(|exp| exp <= now)
        || claims["nbf"].as_i64().is_some_and(|nbf| nbf > now + 60)
    {
        return None;
    }
    let audiences = claims["aud"].as_array()?;
    if !audiences.iter().any(|a| a.as_str() == Some(audience)) {
        return None;
    }
    let k = &claims["kubernetes.io"];
    let ns = k["namespace"].as_str()?;
    let sa_name = k["serviceaccount"]["name"].as_str()?;
    let sa_uid = k["serviceaccount"]["uid"].as_str()?;
    let sa_info = state.registry.get("", "v1", "serviceaccounts")?;
    let sa = state.get(&sa_info, ns, sa_name)?;
    if meta::uid(&sa) != sa_uid || meta::meta(&sa)?.contains_key("deletionTimestamp") {
        return None;
    }
    let mut user = UserInfo::service_account(ns, sa_name, sa_uid);
    if let Some(pod) = k.get("pod").filter(|p| p.is_object()) {
        let pod_info = state.registry.get("", "v1", "pods")?;
        let name = pod["name"].as_str()?;
        let live = state.get(&pod_info, ns, name)?;
        if Some(meta::uid(&live)) != pod["uid"].as_str() {
            return None;
        }
        user.extra.insert(
            "authentication.kubernetes.io/pod-name".into(),
            vec![name.into()],
        );
        user.extra.insert(
            "authentication.kubernetes.io/pod-uid".into(),
            vec![meta::uid(&live).into()],
        );
    }
    if let Some(jti) = claims["jti"].as_str() {
        user.extra.insert(
            "authentication.kubernetes.io/credential-id".into(),
            vec![format!("JTI={jti}")],
        );
    }
    Some(user)
}

/// Answers a TokenRequest for the ServiceAccount `sa` (already read from the store): the
/// TokenRequest object with `status.token` and `status.expirationTimestamp`.
#[expect(
    clippy::too_many_lines,
    reason = "validates the expiration, the audiences and the bound object in turn, then signs: one request read top to bottom"
)]
pub fn token_request(
    keys: &Keys,
    state: &State,
    sa: &Value,
    request: &Value,
) -> Result<Value, ApiError> {
    let ns = meta::meta_str(sa, "namespace").unwrap_or("");
    let name = meta::name(sa);
    let invalid = |field: &str, why: String| {
        ApiError::new(
            422,
            "Invalid",
            format!("TokenRequest.authentication.k8s.io \"{name}\" is invalid: {field}: {why}"),
        )
    };
    let spec = request.get("spec").cloned().unwrap_or(json!({}));
    let expiration = match spec.get("expirationSeconds") {
        None | Some(Value::Null) => DEFAULT_EXPIRATION_SECONDS,
        Some(v) => v.as_i64().ok_or_else(|| {
            invalid(
                "spec.expirationSeconds",
                format!("Invalid value: {v}: must be an integer"),
            )
        })?,
    };
    if expiration < MIN_EXPIRATION_SECONDS {
        return Err(invalid(
            "spec.expirationSeconds",
            format!("Invalid value: {expiration}: may not specify a duration less than 10 minutes"),
        ));
    }
    if expiration > 1 << 32 {
        return Err(invalid(
            "spec.expirationSeconds",
            format!(
                "Invalid value: {expiration}: may not specify a duration larger than 2^32 seconds"
            ),
        ));
    }
    let audiences: Vec<String> = match spec.get("audiences").and_then(Value::as_array) {
        Some(list) if !list.is_empty() => list
            .iter()
            .map(|a| a.as_str().map(str::to_string))
            .collect::<Option<_>>()
            .ok_or_else(|| invalid("spec.audiences", "Invalid value: must be strings".into()))?,
        _ => vec![API_AUDIENCE.to_string()],
    };
    let now = jiff::Timestamp::now().as_second();
    let mut binding = json!({
        "namespace": ns,
        "serviceaccount": {"name": name, "uid": meta::uid(sa)},
    });
    let bound = spec.get("boundObjectRef").filter(|b| b.is_object());
    if let Some(bound) = bound {
        let kind = bound["kind"].as_str().unwrap_or("");
        let bound_name = bound["name"].as_str().unwrap_or("");
        let plural = match kind {
            "Pod" => "pods",
            "Secret" => "secrets",
            other => {
                return Err(invalid(
                    "spec.boundObjectRef.kind",
                    format!(
                        "Unsupported value: \"{other}\": supported values: \"Pod\", \"Secret\""
                    ),
                ));
            }
        };
        let info = state
            .registry
            .get("", "v1", plural)
            .expect("pods and secrets are built in");
        let live = state
            .get(&info, ns, bound_name)
            .ok_or_else(|| ApiError::not_found(&info, bound_name))?;
        if let Some(uid) = bound["uid"].as_str().filter(|u| !u.is_empty())
            && uid != meta::uid(&live)
        {
            return Err(ApiError::new(
                409,
                "Conflict",
                format!(
                    "the UID in the bound object reference ({uid}) does not match the UID in record. The object might have been deleted and then recreated"
                ),
            ));
        }
        binding[kind.to_lowercase()] = json!({"name": bound_name, "uid": meta::uid(&live)});
    }
    let claims = json!({
        "aud": audiences,
        "exp": now + expiration,
        "iat": now,
        "nbf": now,
        "iss": API_AUDIENCE,
        "jti": meta::new_uid(),
        "kubernetes.io": binding,
        "sub": service_account_user(ns, name),
    });
    let token = keys.sign(&claims);
    let expires = jiff::Timestamp::from_second(now + expiration).expect("in range");
    let mut out_spec = json!({"audiences": audiences, "expirationSeconds": expiration});
    if let Some(bound) = bound {
        out_spec["boundObjectRef"] = bound.clone();
    }
    Ok(json!({
        "kind": "TokenRequest",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": {"name": name, "namespace": ns, "creationTimestamp": meta::now_rfc3339()},
        "spec": out_spec,
        "status": {"token": token, "expirationTimestamp": meta::timestamp_rfc3339(expires)},
    }))
}

/// The user a request acts as: `requester`, or whom its `Impersonate-*` headers name once
/// `requester` may `impersonate` each of them.
#[expect(
    clippy::too_many_lines,
    reason = "one authorisation check per Impersonate-* header kind (user, groups, uid, extra), each read in order"
)]
pub fn impersonate(
    state: &State,
    requester: UserInfo,
    headers: &HeaderMap,
) -> Result<UserInfo, ApiError> {
    let values = |name: &str| -> Vec<String> {
        headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .map(str::to_string)
            .collect()
    };
    let users = values("impersonate-user");
    let groups = values("impersonate-group");
    let uids = values("impersonate-uid");
    let extras: Vec<(String, String)> = headers
        .iter()
        .filter_map(|(k, v)| {
            let key = k.as_str().strip_prefix("impersonate-extra-")?;
            Some((key.to_string(), v.to_str().ok()?.to_string()))
        })
        .collect();
    if users.is_empty() {
        if !groups.is_empty() || !uids.is_empty() || !extras.is_empty() {
            return Err(ApiError::internal(
                "requested [Impersonate-Group/Uid/Extra] without impersonating a user",
            ));
        }
        return Ok(requester);
    }
    let target = users.last().expect("not empty").clone();
    let check = |attrs: Attributes| -> Result<(), ApiError> {
        if rbac::authorize(state, &requester, &attrs).allowed {
            Ok(())
        } else {
            Err(rbac::forbidden(&requester, &attrs))
        }
    };
    let mut user = match parse_service_account_user(&target) {
        Some((ns, name)) => {
            check(Attributes::resource(
                "impersonate",
                "",
                "serviceaccounts",
                "",
                ns,
                name,
            ))?;
            let mut u = UserInfo::service_account(ns, name, "");
            if !groups.is_empty() {
                u.groups.clear();
            }
            u
        }
        None => {
            check(Attributes::resource(
                "impersonate",
                "",
                "users",
                "",
                "",
                &target,
            ))?;
            UserInfo {
                name: target.clone(),
                uid: String::new(),
                groups: Vec::new(),
                extra: BTreeMap::new(),
            }
        }
    };
    for group in &groups {
        check(Attributes::resource(
            "impersonate",
            "",
            "groups",
            "",
            "",
            group,
        ))?;
        if !user.groups.contains(group) {
            user.groups.push(group.clone());
        }
    }
    if let Some(uid) = uids.last() {
        check(Attributes::resource(
            "impersonate",
            "authentication.k8s.io",
            "uids",
            "",
            "",
            uid,
        ))?;
        user.uid = uid.clone();
    }
    for (key, value) in extras {
        check(Attributes::resource(
            "impersonate",
            "authentication.k8s.io",
            "userextras",
            &key,
            "",
            &value,
        ))?;
        user.extra.entry(key).or_default().push(value);
    }
    // As kube-apiserver: everyone but the anonymous user is authenticated.
    if user.name == ANONYMOUS {
        if !user.groups.iter().any(|g| g == UNAUTHENTICATED) {
            user.groups.push(UNAUTHENTICATED.into());
        }
    } else if !user.groups.iter().any(|g| g == AUTHENTICATED) {
        user.groups.push(AUTHENTICATED.into());
    }
    Ok(user)
}
