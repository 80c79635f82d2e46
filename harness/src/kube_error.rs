//! Kubernetes API errors as one line for people: the API server's Status message and reason
//! (`kube::Error`'s own `Display` appends a `Debug` dump of the whole Status).

/// `message (Reason, HTTP code)` for an API error; the error's own text otherwise.
pub fn line(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(status) => {
            let reason = if status.reason.is_empty() {
                "no reason given".to_string()
            } else {
                status.reason.clone()
            };
            let message = if status.message.is_empty() {
                "the API server refused the request".to_string()
            } else {
                status.message.clone()
            };
            format!("{message} ({reason}, HTTP {})", status.code)
        }
        other => other.to_string().replace('\n', " "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_api_error_is_its_message_and_reason_without_a_debug_dump() {
        let status = kube::core::Status::failure(
            "gameservers.gameplane.local \"mc-canary\" already exists",
            "AlreadyExists",
        )
        .with_code(409);
        let text = line(&kube::Error::Api(status.boxed()));
        assert_eq!(
            text,
            "gameservers.gameplane.local \"mc-canary\" already exists (AlreadyExists, HTTP 409)"
        );
        assert!(!text.contains("Status {"), "{text}");
    }
}
