//! The bucket manifest: which rehearsal case runs in which CI bucket, and the proof that the
//! manifest agrees with what `cargo nextest list` actually finds.
//!
//! The manifest (`scenarios/buckets.toml`, schema documented at its top) is the single source
//! of bucket membership. Everything else is derived from or checked against it: the nextest
//! profile filters in `.config/nextest.toml` ([`Manifest::nextest_filter`]), the CI matrix in
//! `.github/workflows/rehearsal.yml`, `rehearse run --bucket`, and the self-test's kill matrix
//! ([`Manifest::cases_targeting`]).
//!
//! [`verify`] is the CI gate (`rehearse buckets verify`): every scenario case is in exactly one
//! bucket, every bucket entry names a case that exists, and no bucket is empty.
//!
//! ```no_run
//! use rehearsal::buckets::{Manifest, NextestList, verify};
//! let manifest = Manifest::load("scenarios/buckets.toml".as_ref())?;
//! let list = NextestList::load("nextest-list.json".as_ref())?;
//! let summary = verify(&manifest, &list)?;
//! println!("{summary}");
//! println!("{}", manifest.nextest_filter("backup")?);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Where the manifest lives, relative to the workspace root.
pub const DEFAULT_MANIFEST: &str = "scenarios/buckets.toml";

/// The manifest schema this code understands (the `schema` key).
pub const SCHEMA_VERSION: u32 = 1;

/// Profile names a bucket may not take: nextest owns `default` and the `default-` prefix, and
/// `.config/nextest.toml` defines `ci` and `kind` for other purposes.
const RESERVED_BUCKET_NAMES: &[&str] = &["default", "ci", "kind"];

/// The validated bucket manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Manifest {
    /// The file it was read from (named in every error).
    pub path: PathBuf,
    /// The cargo package whose integration tests are the rehearsal cases.
    pub package: String,
    /// Buckets in manifest order (also the CI matrix order).
    pub buckets: Vec<Bucket>,
}

/// One CI bucket: a set of cases that share one cluster in one CI job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Bucket {
    /// The bucket's name: also its nextest profile (`[profile.<name>]`) and its CI matrix entry,
    /// so lowercase kebab and never a profile name nextest or `.config/nextest.toml` reserves.
    pub name: String,
    /// What the bucket covers, for people reading `rehearse buckets list` (trimmed free text).
    pub description: String,
    /// Its cases in manifest order; never empty, and no case here is in any other bucket.
    pub cases: Vec<CaseEntry>,
}

/// One rehearsal case: a nextest test in the scenarios package.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CaseEntry {
    /// Integration test binary (`scenarios/tests/<binary>.rs`).
    pub binary: String,
    /// Test function name inside that binary (the nextest test name).
    pub test: String,
    /// The row of CONTRACT.md's case table this test proves.
    pub contract: String,
    /// Mutants this case exists to catch, each with the check that must catch it (the
    /// self-test's kill matrix).
    pub mutants: Vec<MutantTarget>,
}

/// A mutant a case must catch, and the named check of the case that must fail against it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MutantTarget {
    /// A reference-operator `--mutant` name, or a harness mutant (`harness-…`).
    pub name: String,
    /// The check id (see the case's `assess` receipt) that must be among the failed checks.
    pub check: String,
}

impl CaseEntry {
    /// The nextest binary id of this case's test binary, e.g. `rehearsal-scenarios::backup`.
    pub fn binary_id(&self, package: &str) -> String {
        format!("{package}::{}", self.binary)
    }
}

/// Why a manifest could not be used. Each message is one line naming the file, the entry and
/// the fix.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// The manifest file could not be read.
    #[error(
        "cannot read bucket manifest {}: {source}; run from the workspace root or pass --manifest PATH",
        path.display()
    )]
    Read {
        /// The manifest file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not valid TOML or does not fit the schema (an unknown key, a wrong type).
    #[error("{}:{line}: {message}; fix the TOML against the schema at the top of the file", path.display())]
    Syntax {
        /// The manifest file.
        path: PathBuf,
        /// 1-based line of the error (1 when toml reports no position).
        line: usize,
        /// toml's message, folded onto one line.
        message: String,
    },
    /// The manifest declares a `schema` this build does not read.
    #[error(
        "{}: schema {found} is not supported; this rehearse reads schema {SCHEMA_VERSION}: set `schema = {SCHEMA_VERSION}` or upgrade rehearse",
        path.display()
    )]
    UnsupportedSchema {
        /// The manifest file.
        path: PathBuf,
        /// The `schema` value the file declares.
        found: u32,
    },
    /// `package` is empty, so no nextest binary could hold the cases.
    #[error("{}: `package` is empty; set it to the cargo package holding the cases (rehearsal-scenarios)", path.display())]
    EmptyPackage {
        /// The manifest file.
        path: PathBuf,
    },
    /// The manifest defines no `[[bucket]]`.
    #[error("{}: no buckets; add at least one [[bucket]] table", path.display())]
    NoBuckets {
        /// The manifest file.
        path: PathBuf,
    },
    /// A bucket, binary, test, mutant or check name breaks its naming rule.
    #[error("{}: {what} `{value}` in bucket `{bucket}` is not valid: {rule}", path.display())]
    BadName {
        /// The manifest file.
        path: PathBuf,
        /// The bucket the entry is in (the bucket itself for a bad bucket name).
        bucket: String,
        /// Which kind of name: `bucket name`, `binary`, `test`, `mutant` or `check`.
        what: &'static str,
        /// The offending value as written.
        value: String,
        /// The rule it breaks, phrased as the fix.
        rule: &'static str,
    },
    /// Two `[[bucket]]` tables share a name.
    #[error("{}: bucket `{bucket}` is defined twice; merge the two [[bucket]] tables", path.display())]
    DuplicateBucket {
        /// The manifest file.
        path: PathBuf,
        /// The name defined twice.
        bucket: String,
    },
    /// A bucket lists no cases (its CI job would run nothing and pass).
    #[error("{}: bucket `{bucket}` has no cases; add [[bucket.case]] entries or remove the bucket", path.display())]
    EmptyBucket {
        /// The manifest file.
        path: PathBuf,
        /// The bucket without cases.
        bucket: String,
    },
    /// One test name listed in two buckets; nextest filters select by name, so it would run twice.
    #[error(
        "{}: case `{test}` is in bucket `{first}` and in bucket `{second}`; a case belongs to exactly one bucket: remove one entry",
        path.display()
    )]
    CaseInTwoBuckets {
        /// The manifest file.
        path: PathBuf,
        /// The test name listed twice.
        test: String,
        /// The bucket that lists it first.
        first: String,
        /// The bucket that lists it again.
        second: String,
    },
    /// A case with an empty `contract`: every case must name the CONTRACT.md row it proves.
    #[error(
        "{}: case `{test}` in bucket `{bucket}` has an empty `contract`; name the CONTRACT.md case it proves",
        path.display()
    )]
    MissingContract {
        /// The manifest file.
        path: PathBuf,
        /// The bucket holding the case.
        bucket: String,
        /// The case's test name.
        test: String,
    },
    /// A bucket was asked for (`--bucket`, `nextest-filter`) that the manifest does not define.
    #[error("{}: unknown bucket `{bucket}`; known buckets: {known}", path.display())]
    UnknownBucket {
        /// The manifest file.
        path: PathBuf,
        /// The name asked for.
        bucket: String,
        /// The manifest's bucket names, comma-separated, for the message.
        known: String,
    },
}

// The on-disk shape. Unknown keys are refused so a typo (`mutant =` for `mutants =`) is an error,
// not a silently empty kill matrix.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawManifest {
    schema: u32,
    package: String,
    #[serde(default)]
    bucket: Vec<RawBucket>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBucket {
    name: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    case: Vec<RawCase>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCase {
    binary: String,
    test: String,
    contract: String,
    #[serde(default)]
    mutants: Vec<MutantTarget>,
}

/// The workspace's manifest as compiled into this binary, so `rehearse run --bucket` and the
/// self-test know the buckets without a checkout (tests keep it equal to the file).
const BUILTIN: &str = include_str!("../../scenarios/buckets.toml");

impl Manifest {
    /// The manifest compiled into this build (`scenarios/buckets.toml` at build time). An
    /// error here means the file was invalid when this binary was built.
    pub fn builtin() -> Result<Self, ManifestError> {
        Self::parse(Path::new(DEFAULT_MANIFEST), BUILTIN)
    }

    /// Reads and validates the manifest at `path`.
    pub fn load(path: &Path) -> Result<Self, ManifestError> {
        let text = std::fs::read_to_string(path).map_err(|source| ManifestError::Read {
            path: path.to_owned(),
            source,
        })?;
        Self::parse(path, &text)
    }

    /// Validates manifest `text`; `path` is only used to name the file in errors.
    pub fn parse(path: &Path, text: &str) -> Result<Self, ManifestError> {
        let raw: RawManifest = toml::from_str(text).map_err(|e| ManifestError::Syntax {
            path: path.to_owned(),
            line: e
                .span()
                .map(|span| text[..span.start.min(text.len())].matches('\n').count() + 1)
                .unwrap_or(1),
            // toml's Display is multi-line (it quotes the source); the message alone is one line.
            message: e.message().trim().replace('\n', " "),
        })?;
        let path = path.to_owned();
        if raw.schema != SCHEMA_VERSION {
            return Err(ManifestError::UnsupportedSchema {
                path,
                found: raw.schema,
            });
        }
        if raw.package.trim().is_empty() {
            return Err(ManifestError::EmptyPackage { path });
        }
        if raw.bucket.is_empty() {
            return Err(ManifestError::NoBuckets { path });
        }

        let mut buckets = Vec::with_capacity(raw.bucket.len());
        // test name → bucket: nextest filters select a case by its test name, so a name may
        // appear once in the whole manifest.
        let mut owner: BTreeMap<String, String> = BTreeMap::new();
        for raw_bucket in raw.bucket {
            let bucket = parse_bucket(&path, raw_bucket, &buckets, &mut owner)?;
            buckets.push(bucket);
        }
        Ok(Self {
            path,
            package: raw.package.trim().to_owned(),
            buckets,
        })
    }

    /// Bucket names in manifest order.
    pub fn bucket_names(&self) -> Vec<&str> {
        self.buckets.iter().map(|b| b.name.as_str()).collect()
    }

    /// The bucket called `name`, or an error listing the known ones.
    pub fn bucket(&self, name: &str) -> Result<&Bucket, ManifestError> {
        self.buckets
            .iter()
            .find(|b| b.name == name)
            .ok_or_else(|| ManifestError::UnknownBucket {
                path: self.path.clone(),
                bucket: name.to_owned(),
                known: self.bucket_names().join(", "),
            })
    }

    /// The bucket holding the case whose test is `test`, with its entry.
    pub fn find_case(&self, test: &str) -> Option<(&Bucket, &CaseEntry)> {
        self.buckets
            .iter()
            .find_map(|b| b.cases.iter().find(|c| c.test == test).map(|c| (b, c)))
    }

    /// Every case, with its bucket, in manifest order.
    pub fn cases(&self) -> impl Iterator<Item = (&Bucket, &CaseEntry)> {
        self.buckets
            .iter()
            .flat_map(|b| b.cases.iter().map(move |c| (b, c)))
    }

    /// Mutant → the cases that must catch it (manifest order), for the self-test's kill matrix.
    pub fn cases_targeting(&self) -> BTreeMap<&str, Vec<&CaseEntry>> {
        let mut map: BTreeMap<&str, Vec<&CaseEntry>> = BTreeMap::new();
        for (_, case) in self.cases() {
            for m in &case.mutants {
                map.entry(m.name.as_str()).or_default().push(case);
            }
        }
        map
    }

    /// The nextest filterset selecting every scenario case (any bucket).
    pub fn scenarios_filter(&self) -> String {
        format!("package(={}) & kind(test)", self.package)
    }

    /// The nextest filterset selecting exactly the cases of `bucket`: what its profile's
    /// `default-filter` in `.config/nextest.toml` must be.
    ///
    /// Cases are selected by package, integration-test kind and exact test name, not by binary:
    /// nextest rejects the whole config file when a `binary()`/`binary_id()` names a binary that
    /// does not exist yet, which would break every nextest run in the workspace while a case file
    /// is being renamed. Names are unique across the manifest (checked at load), and [`verify`]
    /// rejects a name that exists in two scenario binaries, so selecting by name is exact.
    pub fn nextest_filter(&self, bucket: &str) -> Result<String, ManifestError> {
        let bucket = self.bucket(bucket)?;
        let tests: Vec<String> = bucket
            .cases
            .iter()
            .map(|c| format!("test(={})", c.test))
            .collect();
        Ok(format!(
            "{} & ({})",
            self.scenarios_filter(),
            tests.join(" | ")
        ))
    }
}

/// Validates one `[[bucket]]` table: its name against the buckets `earlier` in the file, and each
/// case's names; `owner` maps every test name seen so far to its bucket, so a case listed in two
/// buckets is refused.
fn parse_bucket(
    path: &Path,
    raw_bucket: RawBucket,
    earlier: &[Bucket],
    owner: &mut BTreeMap<String, String>,
) -> Result<Bucket, ManifestError> {
    let name = raw_bucket.name;
    let bad = |what, value: &str, rule| ManifestError::BadName {
        path: path.to_owned(),
        bucket: name.clone(),
        what,
        value: value.to_owned(),
        rule,
    };
    if !is_bucket_name(&name) {
        return Err(bad(
            "bucket name",
            &name,
            "use lowercase letters, digits and `-`, starting with a letter, and not `default`, `default-…`, `ci` or `kind` (it becomes a nextest profile name)",
        ));
    }
    if earlier.iter().any(|b: &Bucket| b.name == name) {
        return Err(ManifestError::DuplicateBucket {
            path: path.to_owned(),
            bucket: name,
        });
    }
    if raw_bucket.case.is_empty() {
        return Err(ManifestError::EmptyBucket {
            path: path.to_owned(),
            bucket: name,
        });
    }
    let mut cases = Vec::with_capacity(raw_bucket.case.len());
    for case in raw_bucket.case {
        if !is_binary_name(&case.binary) {
            return Err(bad(
                "binary",
                &case.binary,
                "use the file stem of scenarios/tests/<binary>.rs (letters, digits, `_`, `-`)",
            ));
        }
        if !is_test_name(&case.test) {
            return Err(bad(
                "test",
                &case.test,
                "use the test function's path inside its binary, e.g. `live_backup_agent_restart`",
            ));
        }
        if let Some(m) = case.mutants.iter().find(|m| !is_kebab(&m.name)) {
            return Err(bad(
                "mutant",
                &m.name,
                "use the reference operator's `--mutant` name or a `harness-…` mutant (lowercase letters, digits, `-`)",
            ));
        }
        if let Some(m) = case.mutants.iter().find(|m| !is_kebab(&m.check)) {
            return Err(bad(
                "check",
                &m.check,
                "use the id of the case's check that must fail against the mutant (lowercase letters, digits, `-`)",
            ));
        }
        if case.contract.trim().is_empty() {
            return Err(ManifestError::MissingContract {
                path: path.to_owned(),
                bucket: name,
                test: case.test,
            });
        }
        if let Some(first) = owner.insert(case.test.clone(), name.clone()) {
            return Err(ManifestError::CaseInTwoBuckets {
                path: path.to_owned(),
                test: case.test,
                first,
                second: name,
            });
        }
        cases.push(CaseEntry {
            binary: case.binary,
            test: case.test,
            contract: case.contract.trim().to_owned(),
            mutants: case.mutants,
        });
    }
    Ok(Bucket {
        name,
        description: raw_bucket.description.trim().to_owned(),
        cases,
    })
}

fn is_bucket_name(s: &str) -> bool {
    is_kebab(s)
        && s.starts_with(|c: char| c.is_ascii_lowercase())
        && !RESERVED_BUCKET_NAMES.contains(&s)
        && !s.starts_with("default-")
}

fn is_kebab(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

fn is_binary_name(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

fn is_test_name(s: &str) -> bool {
    !s.is_empty()
        && s.split("::").all(|seg| {
            seg.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                && seg.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
}

/// The parts of `cargo nextest list --message-format json` that bucket checks need.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NextestList {
    /// Every test binary in the list, in nextest's order (by binary id).
    pub suites: Vec<Suite>,
}

/// One test binary in a nextest list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Suite {
    /// e.g. `rehearsal-scenarios::backup` (`rehearsal-scenarios` for the lib's unit tests).
    pub binary_id: String,
    /// The binary's name as cargo builds it (the file stem for an integration test).
    pub binary_name: String,
    /// The cargo package that owns the binary.
    pub package_name: String,
    /// Cargo target kind: `lib`, `test`, `bench`, `bin`, `proc-macro`.
    pub kind: String,
    /// `listed`, or `skipped` when a filterset excluded the whole binary (then `testcases` is
    /// empty and says nothing about which cases exist).
    pub status: String,
    /// Test names, sorted.
    pub testcases: Vec<String>,
}

/// Why a nextest list could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ListError {
    /// The list file could not be read.
    #[error(
        "cannot read nextest list {}: {source}; write it with `cargo nextest list --message-format json > FILE`",
        path.display()
    )]
    Read {
        /// The list file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The input is not nextest's JSON list.
    #[error(
        "{source_name} is not nextest's JSON list ({message}); produce it with `cargo nextest list --message-format json`"
    )]
    Json {
        /// What the input was, for the message: a path, `stdin`, or the `cargo nextest list` output.
        source_name: String,
        /// serde_json's message.
        message: String,
    },
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
struct RawList {
    rust_suites: BTreeMap<String, RawSuite>,
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
struct RawSuite {
    binary_id: String,
    binary_name: String,
    package_name: String,
    kind: String,
    #[serde(default = "listed")]
    status: String,
    #[serde(default)]
    testcases: BTreeMap<String, serde::de::IgnoredAny>,
}

fn listed() -> String {
    "listed".to_owned()
}

impl NextestList {
    /// Parses nextest's JSON list; `source_name` names the input in errors.
    pub fn from_json(source_name: &str, json: &str) -> Result<Self, ListError> {
        let raw: RawList = serde_json::from_str(json).map_err(|e| ListError::Json {
            source_name: source_name.to_owned(),
            message: e.to_string(),
        })?;
        Ok(Self {
            suites: raw
                .rust_suites
                .into_values()
                .map(|s| Suite {
                    binary_id: s.binary_id,
                    binary_name: s.binary_name,
                    package_name: s.package_name,
                    kind: s.kind,
                    status: s.status,
                    testcases: s.testcases.into_keys().collect(),
                })
                .collect(),
        })
    }

    /// Reads a file written by `cargo nextest list --message-format json`.
    pub fn load(path: &Path) -> Result<Self, ListError> {
        let json = std::fs::read_to_string(path).map_err(|source| ListError::Read {
            path: path.to_owned(),
            source,
        })?;
        Self::from_json(&path.display().to_string(), &json)
    }

    /// The integration-test binaries of `package`: where rehearsal cases live. The package's
    /// lib unit tests are helpers' tests, not cases.
    pub fn scenario_suites<'a>(&'a self, package: &'a str) -> impl Iterator<Item = &'a Suite> {
        self.suites
            .iter()
            .filter(move |s| s.package_name == package && s.kind == "test")
    }
}

/// One disagreement between the manifest and the nextest list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// The list has no integration-test binary of the manifest's package.
    PackageNotListed {
        /// The manifest's `package`.
        package: String,
    },
    /// A scenario binary was skipped by a filter, so its cases cannot be checked.
    SuiteNotListed {
        /// The skipped binary.
        binary_id: String,
        /// The status nextest gave it instead of `listed`.
        status: String,
    },
    /// A scenario case that no bucket lists.
    UnbucketedCase {
        /// The binary that has the case.
        binary_id: String,
        /// The case's test name.
        test: String,
    },
    /// A bucket entry naming a case nextest does not list.
    UnknownEntry {
        /// The bucket holding the entry.
        bucket: String,
        /// The binary id the entry names.
        binary_id: String,
        /// The test name the entry names.
        test: String,
        /// Scenario binaries where a test of that name does exist.
        found_in: Vec<String>,
    },
    /// One test name in several scenario binaries: a name-based bucket filter would run both.
    AmbiguousTestName {
        /// The test name found more than once.
        test: String,
        /// Every scenario binary that has a test of that name.
        binary_ids: Vec<String>,
    },
    /// The nextest config has no `[profile.<bucket>]` default-filter, or not the bucket's.
    StaleProfile {
        /// The nextest config file (`.config/nextest.toml`).
        config: PathBuf,
        /// The bucket whose profile is missing or stale.
        bucket: String,
        /// The profile's current default-filter, when it has one.
        found: Option<String>,
    },
    /// The nextest config could not be read as TOML.
    UnreadableConfig {
        /// The nextest config file.
        config: PathBuf,
        /// toml's message.
        message: String,
    },
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::PackageNotListed { package } => write!(
                f,
                "package `{package}` has no integration test binaries in the nextest list; list it with `cargo nextest list -p {package} --message-format json`, or fix `package` in the manifest"
            ),
            Problem::SuiteNotListed { binary_id, status } => write!(
                f,
                "test binary `{binary_id}` was not listed (status `{status}`); list without `-E` or a profile default-filter so every case is visible"
            ),
            Problem::UnbucketedCase { binary_id, test } => write!(
                f,
                "case `{test}` ({binary_id}) is in no bucket; add a [[bucket.case]] entry with binary and test to exactly one bucket"
            ),
            Problem::UnknownEntry {
                bucket,
                binary_id,
                test,
                found_in,
            } => {
                write!(
                    f,
                    "bucket `{bucket}` lists case `{test}` ({binary_id}), which nextest does not list; "
                )?;
                if found_in.is_empty() {
                    write!(f, "rename the entry to an existing test or remove it")
                } else {
                    write!(
                        f,
                        "it exists in {}: fix the entry's `binary`",
                        found_in.join(", ")
                    )
                }
            }
            Problem::AmbiguousTestName { test, binary_ids } => write!(
                f,
                "test name `{test}` exists in {}; bucket filters select cases by name, so rename one of them",
                binary_ids.join(" and ")
            ),
            Problem::StaleProfile {
                config,
                bucket,
                found,
            } => {
                let what = match found {
                    None => "has no default-filter",
                    Some(_) => "selects other cases than the manifest",
                };
                write!(
                    f,
                    "[profile.{bucket}] in {} {what}; set its default-filter to the output of `rehearse buckets nextest-filter {bucket}`",
                    config.display()
                )
            }
            Problem::UnreadableConfig { config, message } => write!(
                f,
                "{} is not valid TOML ({message}); fix it so nextest and this check can read it",
                config.display()
            ),
        }
    }
}

/// The manifest and the nextest list disagree.
#[derive(Debug, thiserror::Error)]
#[error(
    "bucket manifest {} disagrees with cargo nextest list or the nextest config ({} problem{}): {}",
    manifest.display(),
    problems.len(),
    if problems.len() == 1 { "" } else { "s" },
    problems.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
)]
pub struct VerifyError {
    /// The manifest that was checked.
    pub manifest: PathBuf,
    /// Every disagreement found, in check order; never empty.
    pub problems: Vec<Problem>,
}

/// What a successful [`verify`] checked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VerifySummary {
    /// The manifest that was verified.
    pub manifest: PathBuf,
    /// The cargo package whose integration tests hold the cases.
    pub package: String,
    /// Bucket → number of cases.
    pub buckets: Vec<(String, usize)>,
    /// Cases checked, all buckets together.
    pub cases: usize,
}

impl fmt::Display for VerifySummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let per_bucket: Vec<String> = self
            .buckets
            .iter()
            .map(|(name, n)| format!("{name} {n}"))
            .collect();
        write!(
            f,
            "bucket manifest {} verified: {} cases of {} in {} buckets ({}), each in exactly one bucket",
            self.manifest.display(),
            self.cases,
            self.package,
            self.buckets.len(),
            per_bucket.join(", ")
        )
    }
}

/// Proves that every scenario case in `list` is in exactly one bucket of `manifest` and that
/// every bucket entry exists; returns every problem found, not just the first.
///
/// (A case listed in two buckets, and an empty bucket, are already refused by
/// [`Manifest::parse`].)
pub fn verify(manifest: &Manifest, list: &NextestList) -> Result<VerifySummary, VerifyError> {
    let mut problems = Vec::new();
    let suites: Vec<&Suite> = list.scenario_suites(&manifest.package).collect();
    if suites.is_empty() {
        problems.push(Problem::PackageNotListed {
            package: manifest.package.clone(),
        });
    }
    for suite in &suites {
        if suite.status != "listed" {
            problems.push(Problem::SuiteNotListed {
                binary_id: suite.binary_id.clone(),
                status: suite.status.clone(),
            });
        }
    }

    // test name → binaries holding it.
    let mut where_is: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for suite in &suites {
        for test in &suite.testcases {
            where_is
                .entry(test.as_str())
                .or_default()
                .insert(suite.binary_id.as_str());
        }
    }
    for (test, binaries) in &where_is {
        if binaries.len() > 1 {
            problems.push(Problem::AmbiguousTestName {
                test: (*test).to_owned(),
                binary_ids: binaries.iter().map(|b| (*b).to_owned()).collect(),
            });
        }
    }

    let mut bucketed: BTreeSet<(String, &str)> = BTreeSet::new();
    for (bucket, case) in manifest.cases() {
        let binary_id = case.binary_id(&manifest.package);
        let exists = where_is
            .get(case.test.as_str())
            .is_some_and(|b| b.contains(binary_id.as_str()));
        if !exists {
            problems.push(Problem::UnknownEntry {
                bucket: bucket.name.clone(),
                found_in: where_is
                    .get(case.test.as_str())
                    .map(|b| b.iter().map(|s| (*s).to_owned()).collect())
                    .unwrap_or_default(),
                binary_id: binary_id.clone(),
                test: case.test.clone(),
            });
        }
        bucketed.insert((binary_id, case.test.as_str()));
    }

    for suite in &suites {
        for test in &suite.testcases {
            if !bucketed.contains(&(suite.binary_id.clone(), test.as_str())) {
                problems.push(Problem::UnbucketedCase {
                    binary_id: suite.binary_id.clone(),
                    test: test.clone(),
                });
            }
        }
    }

    if !problems.is_empty() {
        return Err(VerifyError {
            manifest: manifest.path.clone(),
            problems,
        });
    }
    Ok(VerifySummary {
        manifest: manifest.path.clone(),
        package: manifest.package.clone(),
        buckets: manifest
            .buckets
            .iter()
            .map(|b| (b.name.clone(), b.cases.len()))
            .collect(),
        cases: manifest.cases().count(),
    })
}

/// Checks that every bucket has a nextest profile in `.config/nextest.toml` (its `text`, read
/// from `config`) whose `default-filter` is [`Manifest::nextest_filter`].
pub fn check_nextest_config(manifest: &Manifest, config: &Path, text: &str) -> Vec<Problem> {
    let table: toml::Table = match text.parse() {
        Ok(t) => t,
        Err(e) => {
            return vec![Problem::UnreadableConfig {
                config: config.to_owned(),
                message: e.message().trim().replace('\n', " "),
            }];
        }
    };
    let mut problems = Vec::new();
    for bucket in &manifest.buckets {
        let found = table
            .get("profile")
            .and_then(|p| p.get(&bucket.name))
            .and_then(|p| p.get("default-filter"))
            .and_then(toml::Value::as_str)
            .map(str::to_owned);
        if found.is_none() || found != manifest.nextest_filter(&bucket.name).ok() {
            problems.push(Problem::StaleProfile {
                config: config.to_owned(),
                bucket: bucket.name.clone(),
                found,
            });
        }
    }
    problems
}
