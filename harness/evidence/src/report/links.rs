//! Relative links from the report's directory into bundles, so a report keeps working when the
//! report and bundles are moved or uploaded together.

use std::path::{Component, Path, PathBuf};

/// The path from directory `from` to `to`, `/`-separated (both are made absolute against the
/// current directory first; symlinks are not resolved).
pub fn relative(from: &Path, to: &Path) -> String {
    let from = normalize(from);
    let to = normalize(to);
    let common = from
        .components()
        .zip(to.components())
        .take_while(|(a, b)| a == b)
        .count();
    let ups = from.components().count() - common;
    let mut parts: Vec<String> = std::iter::repeat_n("..".to_owned(), ups).collect();
    parts.extend(
        to.components()
            .skip(common)
            .map(|c| c.as_os_str().to_string_lossy().into_owned()),
    );
    if parts.is_empty() {
        ".".into()
    } else {
        parts.join("/")
    }
}

/// Absolute and lexically normalized (`.` dropped, `..` applied).
fn normalize(path: &Path) -> PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut out = PathBuf::new();
    for component in absolute.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walks_up_then_down() {
        assert_eq!(
            relative(Path::new("/r/out"), Path::new("/r/bundles/amd64")),
            "../bundles/amd64"
        );
        assert_eq!(relative(Path::new("/r"), Path::new("/r/b")), "b");
        assert_eq!(relative(Path::new("/r/b"), Path::new("/r/b")), ".");
    }
}
