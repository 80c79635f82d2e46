//! Your images on the embedded node (`--image REF=EXECUTABLE`): references your operator puts
//! in pods (its agent, a game) mapped to the executables the node runs for them, beside the
//! catalogue's own (docs/clusters.md, "Your own operator").

use rehearsal_embedded::EmbeddedCluster;

use super::BackendError;

/// An image reference your operator puts in pods (its agent, a game) mapped to the executable
/// the embedded node runs for it (`--image REF=EXECUTABLE`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageMapping {
    /// The reference as the pod spec names it (`repo:tag`, `repo@sha256:…`, `repo:*` for any tag).
    pub reference: String,
    /// The host executable: bound read-only at its own path in the sandbox, the image's
    /// entrypoint.
    pub executable: std::path::PathBuf,
}

impl ImageMapping {
    /// `REF=EXECUTABLE`; a one-line error naming the cause and the fix.
    pub fn parse(mapping: &str) -> Result<Self, String> {
        let (reference, executable) = mapping
            .split_once('=')
            .filter(|(r, e)| !r.is_empty() && !e.is_empty())
            .ok_or_else(|| {
                format!("--image {mapping:?} is not REF=EXECUTABLE: e.g. --image ghcr.io/gameplane/agent:v0.9.1=./bin/agent")
            })?;
        let executable = std::path::absolute(executable)
            .map_err(|e| format!("--image {mapping:?}: cannot resolve {executable:?}: {e}"))?;
        if !executable.is_file() {
            return Err(format!(
                "--image {mapping:?}: {} is not a file: build the executable first, or give its path",
                executable.display()
            ));
        }
        Ok(Self {
            reference: reference.to_string(),
            executable,
        })
    }

    /// Every `REF=EXECUTABLE` line of `text` (blank lines and `#` comments skipped), as in an
    /// `--images FILE`.
    pub fn parse_file(text: &str) -> Result<Vec<Self>, String> {
        text.lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(Self::parse)
            .collect()
    }
}

static IMAGES: std::sync::RwLock<Vec<ImageMapping>> = std::sync::RwLock::new(Vec::new());

/// Makes every embedded cluster this process starts resolve `images` (besides its catalogue).
pub fn set_image_mappings(images: Vec<ImageMapping>) {
    *IMAGES.write().unwrap_or_else(|p| p.into_inner()) = images;
}

/// Puts the image mappings set with [`set_image_mappings`] into `cluster`'s catalogue.
pub fn map_images(cluster: &EmbeddedCluster) -> Result<(), BackendError> {
    let images = IMAGES.read().unwrap_or_else(|p| p.into_inner()).clone();
    for m in images {
        let exe = m.executable.display().to_string();
        let image = rehearsal_embedded::Image::new(&m.executable, vec![exe], vec![], vec![])
            .map_err(|e| {
                BackendError::Setup(format!(
                    "image {} → {}: cannot read the executable: {e}",
                    m.reference,
                    m.executable.display()
                ))
            })?;
        cluster.images().insert(&m.reference, image);
    }
    Ok(())
}
