//! A governor from a kernel source file: `kernel:PATH[,key=value,...]` runs the cpufreq
//! governor that PATH (a `cpufreq_schedutil.c`, or a kernel tree holding one) defines, built
//! on this machine by the system C compiler against dvfslab's shim of the kernel interfaces
//! the file uses (`shim/`), and called by the simulator where the kernel calls it.
//!
//! ```text
//!   PATH ──cc + shim──▶ governor.so (cached by content hash) ──dlopen, one copy per run──▶
//!   ->init, tunables written through sysfs ->store, ->start, ->limits     (cpufreq core)
//!   scheduler callback ──▶ the hook the file registered (cpufreq_add_update_util_hook)
//!   the file's reads   ──▶ the shim ──▶ the simulated scheduler and cpufreq core (ffi.rs)
//! ```
//!
//! Keys after the path: the system keys every governor takes (`kernel=`, `invariant=`,
//! `hz=`, `driver=`...), and the file's own sysfs tunables (`rate_limit_us=500`, or any
//! attribute a patched file adds), written as `echo VALUE > .../<governor>/KEY` would; a
//! `policyN.KEY` writes one policy's, where the driver gives each policy its own tunables.
//! The kernel version is the tree's (its top Makefile) unless `kernel=` says it; both must
//! agree when both are there.
//!
//! Differences from Linux: see the shim's header: no RT, deadline or IRQ utilisation (they
//! read 0), deferred work runs at once, locks do nothing, trace points write nothing.
//!
//! References: docs/kernel-governors.md.

mod compile;
mod ffi;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{Enables, Governor, GovernorConfig, GovernorInfo, SYSTEM_KNOBS, SYSTEM_TEXT_KEYS};
use crate::error::{Result, SimError};
use crate::kernel::KernelVersion;
use crate::spec::{KnobValues, Spec};

/// What a governor spec starts with to name a kernel source file.
pub const PREFIX: &str = "kernel:";

/// The governor files the shim covers, and the versions each was checked at.
pub const SUPPORTED: &str =
    "cpufreq_schedutil.c of Linux 5.10, 6.1, 6.6 and 6.12, cpufreq_ondemand.c and cpufreq_conservative.c of 6.1 and 6.12";

/// Where a kernel tree keeps schedutil, for a spec that names the tree.
const SCHEDUTIL_IN_TREE: &str = "kernel/sched/cpufreq_schedutil.c";

/// A kernel governor file, built, and the tunables a spec writes to it.
#[derive(Debug)]
pub struct KernelGovernor {
    /// The governor source file as the spec names it (a tree resolved to its file).
    pub file: PathBuf,
    /// The kernel version it is built as.
    pub version: KernelVersion,
    /// The governor's name, as the file registers it (`schedutil_gov.name`).
    pub name: String,
    /// The built shared object (in the cache).
    pub(crate) library: PathBuf,
    /// sysfs writes for every policy, in order: (tunable, value).
    pub(crate) writes: Vec<(String, String)>,
    /// sysfs writes for one policy: (its first CPU, tunable, value).
    pub(crate) policy_writes: Vec<(usize, String, String)>,
}

/// What the registry knows of a kernel governor: no knobs of its own (its tunables are the
/// file's sysfs attributes), and what it turns on as the registry's governor of that name.
const KERNEL_SCHEDUTIL: GovernorInfo = GovernorInfo {
    name: "kernel",
    description: "a kernel governor source file, built against dvfslab's kernel shim (docs/kernel-governors.md)",
    knobs: &[],
    driver: None,
    check: super::no_cross_check,
    check_platform: super::runs_anywhere,
    build: |_| unbuildable(),
    enables: Enables { fast_switch: true, eas: true },
};

const KERNEL_OTHER: GovernorInfo = GovernorInfo { enables: Enables::NOTHING, ..KERNEL_SCHEDUTIL };

/// The registry's `build` of a kernel governor, for a caller that builds governors one by one
/// without the machine (the stepped simulation of `dvfslab.gym`): a governor that stops the
/// run at start, saying so. Simulations and replays build kernel governors from their file
/// ([`governors_for`]).
fn unbuildable() -> Box<dyn Governor> {
    Box::new(Unbuildable)
}

struct Unbuildable;

impl Governor for Unbuildable {
    fn start(&mut self, ctx: &mut dyn super::PolicyCtx) {
        ctx.fail(SimError::config(
            "governor 'kernel:'",
            "path",
            "a kernel governor file runs in simulations and replays, not under a stepping controller",
        ));
    }
}

/// Parse `kernel:PATH[,key=value...]` (or `kernel:path=PATH,...`), build the file and check
/// the tunables the spec writes.
pub(crate) fn parse(text: &str) -> Result<(GovernorConfig, &'static GovernorInfo)> {
    let body = text.trim().strip_prefix(PREFIX).unwrap_or(text).trim();
    let owner = format!("governor '{}'", text.trim());
    let (path_text, settings) = match body.strip_prefix("path=") {
        Some(rest) => rest.split_once(',').unwrap_or((rest, "")),
        None => body.split_once(',').unwrap_or((body, "")),
    };
    let path_text = path_text.trim();
    if path_text.is_empty() {
        return Err(SimError::config(
            &owner,
            "path",
            "expected kernel:PATH, PATH a governor source file (cpufreq_schedutil.c) or a kernel tree",
        ));
    }
    let rest = Spec::parse(&format!("kernel:{settings}"), "governor")?;
    let file = governor_file(Path::new(path_text)).map_err(|m| SimError::config(&owner, "path", m))?;

    // System keys resolve as for any governor; the others are the file's tunables.
    let text_keys: Vec<&str> = SYSTEM_TEXT_KEYS.iter().map(|(k, _)| *k).collect();
    let is_system = |k: &str| text_keys.contains(&k) || SYSTEM_KNOBS.iter().any(|s| s.name == k);
    let (system, tunables): (Vec<_>, Vec<_>) = rest.params.iter().cloned().partition(|(k, _)| is_system(k));
    let (values, mut text_values) =
        KnobValues::resolve(&Spec { name: "kernel".into(), params: system }, SYSTEM_KNOBS, "governor", &text_keys)
            .map_err(|e| rename_owner(e, &owner))?;

    let version = version_of(&file, text_values.iter().find(|(k, _)| k == "kernel").map(|(_, v)| v.as_str()))
        .map_err(|m| SimError::config(&owner, "kernel", m))?;
    if !text_values.iter().any(|(k, _)| k == "kernel") {
        text_values.push(("kernel".into(), version.to_string()));
    }
    let library = compile::build(&file, version).map_err(|m| SimError::config(&owner, "path", m))?;

    let mut writes = Vec::new();
    let mut policy_writes = Vec::new();
    for (key, value) in tunables {
        match super::per_policy_key(&key) {
            Some((cpu, name)) => policy_writes.push((cpu, name.to_string(), value)),
            None => writes.push((key, value)),
        }
    }
    let name =
        ffi::probe(&library, &writes, &policy_writes).map_err(|(field, m)| SimError::config(&owner, field, m))?;
    let info = if name == "schedutil" { &KERNEL_SCHEDUTIL } else { &KERNEL_OTHER };

    let mut params = vec![("path".to_string(), path_text.to_string())];
    params.extend(rest.params.iter().cloned());
    let source = KernelGovernor { file, version, name, library, writes, policy_writes };
    let config = GovernorConfig {
        spec: Spec { name: "kernel".into(), params },
        values,
        text: text_values,
        per_policy: Vec::new(),
        kernel_source: Some(Arc::new(source)),
    };
    config.kernel().map_err(|e| rename_owner(e, &owner))?;
    Ok((config, info))
}

/// An error of the system keys, named after the whole spec.
fn rename_owner(e: SimError, owner: &str) -> SimError {
    match e {
        SimError::Config { field, message, .. } => SimError::config(owner, field, message),
        other => other,
    }
}

/// The governor file `path` names: the file itself, or schedutil's file in a kernel tree.
fn governor_file(path: &Path) -> std::result::Result<PathBuf, String> {
    if path.is_dir() {
        let file = path.join(SCHEDUTIL_IN_TREE);
        return if file.is_file() {
            Ok(file)
        } else {
            Err(format!("{} is a directory without {SCHEDUTIL_IN_TREE}: expected a kernel tree", path.display()))
        };
    }
    if !path.is_file() {
        return Err(format!("no file {}", path.display()));
    }
    Ok(path.to_path_buf())
}

/// The version to build and run `file` as: the kernel tree's (the first Makefile above the file
/// that sets VERSION and PATCHLEVEL, with its SUBLEVEL: a stable tree runs with the backports
/// the simulator knows for its update), or `kernel=` when given; both must agree (`kernel=X.Y`
/// agrees with any X.Y.Z tree, and takes its update).
fn version_of(file: &Path, given: Option<&str>) -> std::result::Result<KernelVersion, String> {
    let tree = file.ancestors().skip(1).take(4).find_map(|dir| {
        let text = std::fs::read_to_string(dir.join("Makefile")).ok()?;
        Some((makefile_version(&text)?, dir.join("Makefile")))
    });
    let given = match given {
        Some(text) => Some(KernelVersion::parse(text).map_err(|e| match e {
            SimError::Config { message, .. } => message,
            other => other.to_string(),
        })?),
        None => None,
    };
    match (tree, given) {
        (Some((v, _)), None) => Ok(v),
        (None, Some(v)) => Ok(v),
        (Some((t, _)), Some(g)) if t == g || (g.2 == 0 && (t.0, t.1) == (g.0, g.1)) => Ok(t),
        (Some((t, makefile)), Some(g)) => Err(format!(
            "kernel={g}, but {} says {t}: a file is built as its own tree's version (leave kernel= out)",
            makefile.display()
        )),
        (None, None) => {
            Err(format!("no kernel tree's Makefile above {} tells its version: add kernel=X.Y", file.display()))
        }
    }
}

/// VERSION, PATCHLEVEL and SUBLEVEL (0 when absent or empty) of a kernel's top Makefile.
fn makefile_version(text: &str) -> Option<KernelVersion> {
    let field = |name: &str| {
        text.lines().find_map(|l| {
            let (k, v) = l.split_once('=')?;
            (k.trim() == name).then(|| v.trim().parse::<u32>().ok()).flatten()
        })
    };
    Some(KernelVersion(field("VERSION")?, field("PATCHLEVEL")?, field("SUBLEVEL").unwrap_or(0)))
}

/// One governor per policy of the machine, all run by one loaded copy of the file's library
/// (a run's own: its statics and per-CPU data are the run's alone).
pub(crate) fn governors_for(source: &KernelGovernor, machine: &crate::machine::Machine) -> Vec<Box<dyn Governor>> {
    ffi::governors(source, machine)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_is_read_from_the_top_makefile() {
        let text = "# SPDX\nVERSION = 6\nPATCHLEVEL = 1\nSUBLEVEL = 192\nEXTRAVERSION =\n";
        assert_eq!(makefile_version(text), Some(KernelVersion(6, 1, 192)));
        assert_eq!(makefile_version("VERSION = 6\n"), None);
        assert_eq!(makefile_version("VERSION=5\nPATCHLEVEL=10\n"), Some(KernelVersion(5, 10, 0)));
    }

    #[test]
    fn a_file_outside_a_tree_needs_kernel_and_a_tree_must_agree_with_it() {
        let dir = std::env::temp_dir().join(format!("dvfslab-kversion-{}", std::process::id()));
        let sched = dir.join("kernel/sched");
        std::fs::create_dir_all(&sched).unwrap();
        let file = sched.join("cpufreq_schedutil.c");
        std::fs::write(&file, "").unwrap();
        let err = version_of(&file, None).unwrap_err();
        assert!(err.contains("add kernel=X.Y"), "{err}");
        assert_eq!(version_of(&file, Some("6.6")), Ok(KernelVersion(6, 6, 0)));
        std::fs::write(dir.join("Makefile"), "VERSION = 6\nPATCHLEVEL = 12\n").unwrap();
        assert_eq!(version_of(&file, None), Ok(KernelVersion(6, 12, 0)));
        assert_eq!(version_of(&file, Some("6.12")), Ok(KernelVersion(6, 12, 0)));
        let err = version_of(&file, Some("6.1")).unwrap_err();
        assert!(err.contains("kernel=6.1") && err.contains("says 6.12"), "{err}");
        // A stable tree runs as its update; kernel=X.Y agrees with it, another update does not.
        std::fs::write(dir.join("Makefile"), "VERSION = 6\nPATCHLEVEL = 12\nSUBLEVEL = 118\n").unwrap();
        assert_eq!(version_of(&file, None), Ok(KernelVersion(6, 12, 118)));
        assert_eq!(version_of(&file, Some("6.12")), Ok(KernelVersion(6, 12, 118)));
        assert!(version_of(&file, Some("6.12.5")).unwrap_err().contains("says 6.12.118"));
        assert_eq!(governor_file(&dir), Ok(file.clone()));
        assert!(governor_file(&dir.join("nothing")).unwrap_err().contains("no file"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
