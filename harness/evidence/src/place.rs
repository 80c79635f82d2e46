//! Where a schedule's fault lands, and the schedule's id, the one name a schedule has: in the
//! bundle (its case's name), the matrix, `--replay` and the saved regression files alike.
//!
//! A fault lands before the operator's `occurrence`-th write labelled `label` (`patch
//! backups/status live`, `create jobs`, `patch pods/status live-copy-*`), or, for the
//! qualification's signal schedules, right after its `occurrence`-th receipt of step `label`.
//! Naming the write by label and occurrence, never by its index among all writes, keeps the
//! schedule on the same write after the operator gains or loses others.
//!
//! The id is `<operation>.<label>.<occurrence>.<column>`, the label written with `_` for a
//! space, `~` for `/`, `+` for `*` and `%XX` for any character but `a-z`, `0-9`, `.` and `-`
//! (so a Kubernetes label reads plainly), making the id one shell word and one directory name:
//! `backup.patch_backups~status_live.2.game-restart` is fault `game-restart` before the 2nd
//! `patch backups/status live` of a backup.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Artifact: where a schedule's fault landed ([`Placement`]).
pub const PLACEMENT: &str = "placement.json";

/// Where a schedule's fault landed, as its bundle keeps it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placement {
    /// Why the fault never landed, when it did not.
    pub not_placed: Option<String>,
    /// The labels of the writes its run made, in order (the reference run's are the
    /// operation's points).
    pub points: Vec<String>,
}

/// The `occurrence`-th (from 1) write or receipt labelled `label`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Place {
    /// What the write (or receipt) is, e.g. `patch backups/status live`.
    pub label: String,
    /// Which one of that label, counting from 1.
    pub occurrence: usize,
}

impl Place {
    /// The place of the `index`-th (from 0) of `labels`.
    pub fn at(labels: &[impl AsRef<str>], index: usize) -> Option<Self> {
        let label = labels.get(index)?.as_ref();
        Some(Self {
            label: label.to_string(),
            occurrence: labels[..=index]
                .iter()
                .filter(|l| l.as_ref() == label)
                .count(),
        })
    }

    /// Its index (from 0) among `labels`, when they hold it.
    pub fn index_in(&self, labels: &[impl AsRef<str>]) -> Option<usize> {
        if self.occurrence == 0 {
            return None;
        }
        labels
            .iter()
            .enumerate()
            .filter(|(_, l)| l.as_ref() == self.label)
            .nth(self.occurrence - 1)
            .map(|(i, _)| i)
    }

    /// Every place of `labels`, in their order.
    pub fn all(labels: &[impl AsRef<str>]) -> Vec<Self> {
        (0..labels.len())
            .filter_map(|i| Self::at(labels, i))
            .collect()
    }

    /// `<label>.<occurrence>`, the label written as an id writes it: one word, no `:`.
    pub fn encode(&self) -> String {
        format!("{}.{}", self.slug(), self.occurrence)
    }

    /// The place [`Self::encode`] wrote.
    pub fn decode(s: &str) -> Option<Self> {
        let (slug, occurrence) = s.rsplit_once('.')?;
        let occurrence: usize = occurrence.parse().ok().filter(|n| *n > 0)?;
        Some(Self {
            label: Self::unslug(slug)?,
            occurrence,
        })
    }

    /// The label as an id writes it: `a-z`, `0-9`, `.` and `-` as they are, `_` for a space,
    /// `~` for `/`, `+` for `*`, and `%XX` (its UTF-8 bytes) for any other character.
    fn slug(&self) -> String {
        let mut out = String::new();
        for c in self.label.chars() {
            match c {
                'a'..='z' | '0'..='9' | '.' | '-' => out.push(c),
                ' ' => out.push('_'),
                '/' => out.push('~'),
                '*' => out.push('+'),
                c => {
                    let mut buf = [0u8; 4];
                    for b in c.encode_utf8(&mut buf).bytes() {
                        out.push_str(&format!("%{b:02X}"));
                    }
                }
            }
        }
        out
    }

    /// The label an id's `slug` writes; `None` when it is not one [`Self::slug`] writes.
    fn unslug(slug: &str) -> Option<String> {
        let mut bytes = Vec::new();
        let mut rest = slug.bytes();
        while let Some(b) = rest.next() {
            match b {
                b'a'..=b'z' | b'0'..=b'9' | b'.' | b'-' => bytes.push(b),
                b'_' => bytes.push(b' '),
                b'~' => bytes.push(b'/'),
                b'+' => bytes.push(b'*'),
                b'%' => {
                    let hex = [rest.next()?, rest.next()?];
                    bytes.push(u8::from_str_radix(std::str::from_utf8(&hex).ok()?, 16).ok()?);
                }
                _ => return None,
            }
        }
        String::from_utf8(bytes).ok()
    }
}

impl fmt::Display for Place {
    /// `the 2nd \`patch backups/status live\``.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.occurrence;
        let suffix = match (n % 10, n % 100) {
            (_, 11..=13) => "th",
            (1, _) => "st",
            (2, _) => "nd",
            (3, _) => "rd",
            _ => "th",
        };
        write!(f, "the {n}{suffix} `{}`", self.label)
    }
}

/// A schedule's id: `<operation>.<label>.<occurrence>.<column>`.
pub fn id(operation: &str, place: &Place, column: &str) -> String {
    format!("{operation}.{}.{}.{column}", place.slug(), place.occurrence)
}

/// The parts of an id [`id`] wrote: (operation, place, column); `None` for any other name
/// (a reference run's `<operation>-reference`, a case).
pub fn parse(id: &str) -> Option<(&str, Place, &str)> {
    let (operation, rest) = id.split_once('.')?;
    let (rest, column) = rest.rsplit_once('.')?;
    let (slug, occurrence) = rest.rsplit_once('.')?;
    let occurrence: usize = occurrence.parse().ok()?;
    let plain = |s: &str| !s.is_empty() && !s.contains(char::is_whitespace);
    if !(plain(operation) && plain(column) && plain(slug) && occurrence > 0) {
        return None;
    }
    let label = Place::unslug(slug)?;
    Some((operation, Place { label, occurrence }, column))
}

/// One share of an exploration's schedules: shard `k` of `n` (from 1). A schedule belongs to
/// the shard its id hashes to, so `--shard 1/N … N/N` cover every schedule exactly once whatever
/// order each shard's reference runs listed them in; the share is roughly even.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// Which, from 1.
    pub k: usize,
    /// Of how many.
    pub n: usize,
}

impl Shard {
    /// `K/N` with `1 <= K <= N`; the error names the expected form.
    pub fn parse(s: &str) -> Result<Self, String> {
        let bad = || format!("shard {s:?} is not K/N with 1 <= K <= N (e.g. --shard 2/4)");
        let (k, n) = s.split_once('/').ok_or_else(bad)?;
        let (k, n): (usize, usize) = (
            k.trim().parse().map_err(|_| bad())?,
            n.trim().parse().map_err(|_| bad())?,
        );
        if k == 0 || k > n {
            return Err(bad());
        }
        Ok(Self { k, n })
    }

    /// Whether schedule `id` is this shard's: the first 8 bytes of its id's SHA-256, modulo
    /// `n`, is `k - 1`.
    pub fn holds(&self, id: &str) -> bool {
        use sha2::Digest;
        let digest = sha2::Sha256::digest(id.as_bytes());
        let mut head = [0u8; 8];
        head.copy_from_slice(&digest[..8]);
        u64::from_be_bytes(head) % self.n as u64 == (self.k - 1) as u64
    }

    /// The suffix its reference runs' case names carry (`-shard2of4`), so the shards' bundles
    /// merge into one report without two cases of one name.
    pub fn suffix(&self) -> String {
        format!("-shard{}of{}", self.k, self.n)
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.k, self.n)
    }
}

/// The operation a reference run's case name (`<operation>-reference`, or with a shard's
/// suffix `<operation>-reference-shard2of4`) names; `None` for any other name.
pub fn reference_of(name: &str) -> Option<&str> {
    let (operation, rest) = name.split_once("-reference")?;
    (rest.is_empty() || rest.starts_with("-shard")).then_some(operation)
}

/// The shape of an id, for errors: `<operation>.<write>.<occurrence>.<fault>` with an example.
pub const SHAPE: &str = "<operation>.<write>.<occurrence>.<fault> (the write's label with _ for a space, ~ for / and + for *, e.g. backup.patch_backups~status_live.2.game-restart)";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_place_is_the_nth_write_of_its_label() {
        let labels = ["create jobs", "patch backups/status live", "create jobs"];
        let p = Place::at(&labels, 2).unwrap();
        assert_eq!(p.label, "create jobs");
        assert_eq!(p.occurrence, 2);
        assert_eq!(p.index_in(&labels), Some(2));
        assert_eq!(Place::at(&labels, 0).unwrap().occurrence, 1);
        assert_eq!(Place::at(&labels, 3), None);
        let third = Place {
            label: "create jobs".into(),
            occurrence: 3,
        };
        assert_eq!(third.index_in(&labels), None);
        let zeroth = Place {
            occurrence: 0,
            ..third
        };
        assert_eq!(zeroth.index_in(&labels), None);
        assert_eq!(Place::all(&labels).len(), 3);
        assert_eq!(Place::all(&labels)[1].index_in(&labels), Some(1));
    }

    #[test]
    fn an_id_reads_back_to_the_same_schedule() {
        let place = Place {
            label: "patch pods/status live-copy-*".into(),
            occurrence: 2,
        };
        let id = id("stopped-backup", &place, "game-restart");
        assert_eq!(
            id,
            "stopped-backup.patch_pods~status_live-copy-+.2.game-restart"
        );
        assert_eq!(parse(&id), Some(("stopped-backup", place, "game-restart")));
        // A name with dots keeps them: the label is what lies between the first dot and the
        // last two.
        let dotted = Place {
            label: "patch backups a.b".into(),
            occurrence: 1,
        };
        assert_eq!(
            parse(&super::id("backup", &dotted, "pod-replaced")),
            Some(("backup", dotted, "pod-replaced"))
        );
        // Any other character is escaped, and reads back.
        let odd = Place {
            label: "read the restored world (before the candidate): Ünïcode_~+%".into(),
            occurrence: 3,
        };
        let odd_id = super::id("qualify-signals-compatible-b1", &odd, "sigint");
        assert!(
            odd_id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "._-~+%".contains(c)),
            "{odd_id}"
        );
        assert_eq!(
            parse(&odd_id),
            Some(("qualify-signals-compatible-b1", odd, "sigint"))
        );
        let receipt = Place {
            label: "back up batch 1".into(),
            occurrence: 1,
        };
        let signals = super::id("qualify-signals-compatible-b1", &receipt, "sigint");
        assert_eq!(
            signals,
            "qualify-signals-compatible-b1.back_up_batch_1.1.sigint"
        );
        assert_eq!(
            parse(&signals),
            Some(("qualify-signals-compatible-b1", receipt, "sigint"))
        );
    }

    #[test]
    fn the_shards_cover_every_schedule_exactly_once() {
        let ids: Vec<String> = (1..=400)
            .map(|n| {
                id(
                    "backup",
                    &Place {
                        label: "create jobs".into(),
                        occurrence: n,
                    },
                    "game-restart",
                )
            })
            .collect();
        let shards: Vec<Shard> = (1..=4).map(|k| Shard { k, n: 4 }).collect();
        for id in &ids {
            assert_eq!(shards.iter().filter(|s| s.holds(id)).count(), 1, "{id}");
        }
        // Roughly even: each holds between a sixth and a third of them.
        for s in &shards {
            let held = ids.iter().filter(|id| s.holds(id)).count();
            assert!((66..=133).contains(&held), "{s}: {held}");
        }
        assert!(ids.iter().all(|id| Shard { k: 1, n: 1 }.holds(id)));
        assert_eq!(Shard::parse("2/4"), Ok(Shard { k: 2, n: 4 }));
        for bad in ["0/4", "5/4", "4", "a/b", "1/0", ""] {
            assert!(Shard::parse(bad).unwrap_err().contains("K/N"), "{bad}");
        }
        assert_eq!(Shard { k: 2, n: 4 }.suffix(), "-shard2of4");
        assert_eq!(reference_of("backup-reference"), Some("backup"));
        assert_eq!(
            reference_of("stopped-backup-reference-shard2of4"),
            Some("stopped-backup")
        );
        assert_eq!(reference_of("backup.create_jobs.1.game-restart"), None);
        assert_eq!(reference_of("backup-referenced"), None);
    }

    #[test]
    fn a_place_encodes_as_one_word() {
        let p = Place {
            label: "read the restored world (before the candidate)".into(),
            occurrence: 2,
        };
        let e = p.encode();
        assert!(!e.contains(':') && !e.contains(' '), "{e}");
        assert_eq!(Place::decode(&e), Some(p));
        assert_eq!(Place::decode("create_jobs.0"), None);
        assert_eq!(Place::decode("create_jobs"), None);
        assert_eq!(Place::decode("create jobs.1"), None);
    }

    #[test]
    fn other_names_are_no_schedule() {
        for name in [
            "backup-reference",
            "backup.create_jobs.game-restart",
            "backup.create_jobs.0.game-restart",
            "backup.create_jobs.x.game-restart",
            "backup..1.game-restart",
            ".create_jobs.1.game-restart",
            "backup.create_jobs.1.",
            "backup.create jobs.1.game-restart",
            "backup.Create_jobs.1.game-restart",
            "backup.create_jobs%2.1.game-restart",
            "backup.create_jobs%zz.1.game-restart",
        ] {
            assert_eq!(parse(name), None, "{name}");
        }
    }

    #[test]
    fn a_place_reads_as_its_ordinal() {
        let p = |n| Place {
            label: "create jobs".into(),
            occurrence: n,
        };
        assert_eq!(p(1).to_string(), "the 1st `create jobs`");
        assert_eq!(p(2).to_string(), "the 2nd `create jobs`");
        assert_eq!(p(3).to_string(), "the 3rd `create jobs`");
        assert_eq!(p(4).to_string(), "the 4th `create jobs`");
        assert_eq!(p(11).to_string(), "the 11th `create jobs`");
        assert_eq!(p(12).to_string(), "the 12th `create jobs`");
        assert_eq!(p(22).to_string(), "the 22nd `create jobs`");
    }
}
