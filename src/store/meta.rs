//! What a run records about where it ran: time, id, git commit and branch,
//! content hashes.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{SystemTime, UNIX_EPOCH};

use sha2::{Digest, Sha256};

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis().min(i64::MAX as u128) as i64)
}

/// `2026-11-28T08:11:20Z` for a time in milliseconds since the epoch.
pub fn utc_text(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Year, month, day of a day count since 1970-01-01 (proleptic Gregorian;
/// H. Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// A new run id: its UTC start time (so ids sort as runs started) and six
/// hex digits that differ between runs started in the same second.
pub fn run_id(started_ms: i64) -> String {
    let mut h = Sha256::new();
    h.update(started_ms.to_le_bytes());
    h.update(std::process::id().to_le_bytes());
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    h.update(nanos.to_le_bytes());
    // The address of a stack value differs between processes (ASLR).
    let here = 0u8;
    h.update((std::ptr::addr_of!(here) as usize).to_le_bytes());
    let digest = h.finalize();
    let t = utc_text(started_ms);
    let compact: String = t.chars().filter(char::is_ascii_digit).collect();
    format!(
        "{}-{}-{:02x}{:02x}{:02x}",
        &compact[..8],
        &compact[8..14],
        digest[0],
        digest[1],
        digest[2]
    )
}

/// The SHA-256 of a file's content, in hex.
pub fn hash_file(path: &Path) -> std::io::Result<String> {
    let mut file = std::fs::File::open(path)?;
    let mut h = Sha256::new();
    std::io::copy(&mut file, &mut h)?;
    Ok(hex(&h.finalize()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The commit and branch a run scored.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GitInfo {
    pub commit: Option<String>,
    pub branch: Option<String>,
}

/// CI variables that name the commit and the branch, by CI system; the
/// first set wins. A pull request's own branch comes before its merge ref.
const CI_VARS: &[(&str, &[&str])] = &[
    ("GITHUB_SHA", &["GITHUB_HEAD_REF", "GITHUB_REF_NAME"]),
    ("CI_COMMIT_SHA", &["CI_COMMIT_REF_NAME"]),
    ("BUILDKITE_COMMIT", &["BUILDKITE_BRANCH"]),
    ("CIRCLE_SHA1", &["CIRCLE_BRANCH"]),
    ("GIT_COMMIT", &["GIT_BRANCH"]),
];

/// From CI variables when set, else from the git work tree the command runs
/// in (nothing when there is none, or no git).
pub fn git_info() -> GitInfo {
    let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
    for (commit, branches) in CI_VARS {
        if let Some(c) = var(commit) {
            return GitInfo {
                commit: Some(c),
                branch: branches.iter().find_map(|b| var(b)),
            };
        }
    }
    GitInfo {
        commit: git(&["rev-parse", "--verify", "-q", "HEAD"]),
        branch: git(&["symbolic-ref", "--short", "-q", "HEAD"]),
    }
}

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let text = text.trim();
    (out.status.success() && !text.is_empty() && text.len() <= 256).then(|| text.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_text_of_known_times() {
        assert_eq!(utc_text(0), "1970-01-01T00:00:00Z");
        // 2000-02-29 (a leap day) 12:34:56.
        assert_eq!(utc_text(951_827_696_000), "2000-02-29T12:34:56Z");
        assert_eq!(utc_text(1_795_853_480_000), "2026-11-28T08:11:20Z");
    }

    #[test]
    fn run_ids_start_with_the_time_and_differ() {
        let a = run_id(1_795_853_480_000);
        let b = run_id(1_795_853_480_000);
        assert!(a.starts_with("20261128-081120-"), "{a}");
        assert_eq!(a.len(), "20261128-081120-abcdef".len());
        assert_ne!(a, b);
    }
}
