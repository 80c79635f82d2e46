//! `GET …/pods/NAME/log`: checks the pod and container, then streams from the attached
//! [`PodLogSource`](crate::PodLogSource).

use super::*;

pub(super) async fn pod_log(
    call: &Call<'_>,
    info: &ResourceInfo,
    ns: &str,
    name: &str,
) -> Result<Response<Body>, ApiError> {
    let pod = call
        .shared
        .state()
        .get(info, ns, name)
        .ok_or_else(|| ApiError::not_found(info, name))?;
    let names = |list: &str| -> Vec<String> {
        pod.pointer(&format!("/spec/{list}"))
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|c| c.get("name")?.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    let containers = names("containers");
    let mut all = containers.clone();
    all.extend(names("initContainers"));
    all.extend(names("ephemeralContainers"));
    let container = match call.query.get("container").filter(|c| !c.is_empty()) {
        Some(c) if all.contains(c) => c.clone(),
        Some(c) => {
            return Err(ApiError::bad_request(format!(
                "container {c} is not valid for pod {name}"
            )));
        }
        None => containers
            .first()
            .cloned()
            .ok_or_else(|| ApiError::bad_request(format!("pod {name} has no containers")))?,
    };
    let tail_lines = match call.query.get("tailLines") {
        Some(t) => Some(
            t.parse::<i64>()
                .map_err(|_| ApiError::bad_request(format!("invalid tailLines: {t:?}")))?,
        ),
        None => None,
    };
    let follow = query_bool(call.query, "follow")?;
    let request = LogRequest {
        namespace: ns.to_string(),
        pod: name.to_string(),
        container,
        previous: query_bool(call.query, "previous")?,
        tail_lines,
        follow,
    };
    let source = call
        .shared
        .logs
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    let source = source.ok_or_else(|| {
        ApiError::service_unavailable(format!(
            "no node serves logs for pod {name}: the API server has no pod log source attached"
        ))
    })?;
    let stream = source.logs(request).await.map_err(|e| match e {
        LogError::NotFound(m) => ApiError::new(404, "NotFound", m),
        LogError::BadRequest(m) => ApiError::bad_request(m),
    })?;
    let builder = Response::builder()
        .status(200)
        .header(http::header::CONTENT_TYPE, "text/plain")
        .header(http::header::CACHE_CONTROL, "no-cache, private");
    if follow {
        let stopped = crate::shared::stopped(call.shared.shutdown.clone());
        let body = Body::from_stream(stream.take_until(Box::pin(stopped)));
        Ok(builder.body(body).expect("static response parts"))
    } else {
        let chunks: Vec<bytes::Bytes> = stream
            .try_collect()
            .await
            .map_err(|e| ApiError::internal(format!("reading the log failed: {e}")))?;
        Ok(builder
            .body(Body::from(chunks.concat()))
            .expect("static response parts"))
    }
}
