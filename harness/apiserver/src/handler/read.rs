//! The reading verbs: get, list (plain or as a Table) and watch.

use super::*;

pub(super) fn table_columns(info: &ResourceInfo) -> Columns {
    match &info.custom {
        Some(custom) => Columns::Crd {
            columns: custom
                .printer_columns
                .iter()
                .filter_map(PrinterColumn::from_crd)
                .collect(),
        },
        None => Columns::Builtin {
            kind: info.kind.clone(),
        },
    }
}

pub(super) fn get(
    call: &Call<'_>,
    info: &ResourceInfo,
    ns: &str,
    name: &str,
) -> Result<Response<Body>, ApiError> {
    let obj = call.shared.state().get(info, ns, name);
    let obj = obj.ok_or_else(|| ApiError::not_found(info, name))?;
    if negotiate::wants_table(call.headers) {
        let viewed = view(info, &obj);
        let rv = meta::resource_version(&viewed).unwrap_or("").to_string();
        let t = table::to_table(
            &table_columns(info),
            &[&viewed],
            &rv,
            jiff::Timestamp::now(),
        );
        return Ok(json_response(StatusCode::OK, &t));
    }
    if negotiate::wants_metadata(call.headers) {
        return Ok(json_response(
            StatusCode::OK,
            &negotiate::partial_metadata(&obj),
        ));
    }
    Ok(object_response(call.headers, StatusCode::OK, info, &obj))
}

pub(super) fn selectors(
    query: &Query,
    info: &ResourceInfo,
) -> Result<(LabelSelector, FieldSelector), ApiError> {
    let labels =
        LabelSelector::parse(query.get("labelSelector").map(String::as_str).unwrap_or(""))?;
    let fields = FieldSelector::parse(
        query.get("fieldSelector").map(String::as_str).unwrap_or(""),
        info,
    )?;
    Ok((labels, fields))
}

pub(super) fn list(
    call: &Call<'_>,
    info: &ResourceInfo,
    ns: Option<&str>,
) -> Result<Response<Body>, ApiError> {
    let (labels, fields) = selectors(call.query, info)?;
    // Only a list that any version satisfies (`resourceVersion=0`, which a real API server
    // answers from its watch cache) is answered from a stale view; one for the most recent
    // (none given) reads the present, as a real API server reads it from storage.
    let stale_as_of = call
        .shared
        .stale_as_of(&call.user.name)
        .filter(|_| call.query.get("resourceVersion").map(String::as_str) == Some("0"));
    let (items, rv) = {
        let state = call.shared.state();
        // A stale view answers as of its resourceVersion while that is still in history.
        let stale = stale_as_of.and_then(|rv| Some((state.list_as_of(info, ns, rv).ok()?, rv)));
        if stale.is_some() {
            call.shared.stale_lists.send_modify(|n| *n += 1);
        }
        let (all, rv) = stale.unwrap_or_else(|| (state.list(info, ns), state.resource_version()));
        let items: Vec<Arc<Value>> = all
            .into_iter()
            .filter(|o| labels.matches(o) && fields.matches(o))
            .collect();
        (items, rv)
    };
    let rv = rv.to_string();
    if negotiate::wants_table(call.headers) {
        let viewed: Vec<Cow<'_, Value>> = items.iter().map(|o| view(info, o)).collect();
        let refs: Vec<&Value> = viewed.iter().map(|c| c.as_ref()).collect();
        let t = table::to_table(&table_columns(info), &refs, &rv, jiff::Timestamp::now());
        return Ok(json_response(StatusCode::OK, &t));
    }
    if negotiate::wants_metadata(call.headers) {
        let items: Vec<Value> = items
            .iter()
            .map(|o| negotiate::partial_metadata(o))
            .collect();
        return Ok(json_response(
            StatusCode::OK,
            &json!({"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1",
                    "metadata": {"resourceVersion": rv}, "items": items}),
        ));
    }
    Ok(bytes_response(
        StatusCode::OK,
        "application/json",
        render_list(info, &items, &rv),
    ))
}

/// A `…List` written item by item, without building one big value.
pub(super) fn render_list(info: &ResourceInfo, items: &[Arc<Value>], rv: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(128 + items.len() * 512);
    let head = json!({"kind": info.list_kind, "apiVersion": info.api_version(), "metadata": {"resourceVersion": rv}});
    let head = render_value(&head);
    out.extend_from_slice(&head[..head.len() - 1]);
    out.extend_from_slice(b",\"items\":[");
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        serde_json::to_writer(&mut out, view(info, item).as_ref()).expect("JSON values serialise");
    }
    out.extend_from_slice(b"]}");
    out
}

pub(super) fn start_watch(
    call: &Call<'_>,
    info: Arc<ResourceInfo>,
    ns: Option<&str>,
) -> Result<Response<Body>, ApiError> {
    let (labels, fields) = selectors(call.query, &info)?;
    let resource_version = match call.query.get("resourceVersion").map(String::as_str) {
        None | Some("") | Some("0") => None,
        Some(v) => Some(
            v.parse::<u64>()
                .map_err(|_| ApiError::bad_request(format!("invalid resource version: {v:?}")))?,
        ),
    };
    let timeout = match call.query.get("timeoutSeconds") {
        Some(t) => Some(Duration::from_secs(t.parse::<u64>().map_err(|_| {
            ApiError::bad_request(format!("invalid timeoutSeconds: {t:?}"))
        })?)),
        None => None,
    };
    let table = negotiate::wants_table(call.headers).then(|| table_columns(&info));
    let request = WatchRequest {
        info,
        namespace: ns.map(str::to_string),
        labels,
        fields,
        resource_version,
        send_initial_events: query_bool(call.query, "sendInitialEvents")?,
        bookmarks: query_bool(call.query, "allowWatchBookmarks")?,
        timeout,
        table,
        metadata_only: negotiate::wants_metadata(call.headers),
        user: call.user.name.clone(),
    };
    Ok(watch::serve(call.shared, request))
}
